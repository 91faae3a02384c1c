#include "tests/fakes/cloud/pagination.h"

#include <algorithm>
#include <charconv>

namespace tsum::providers::fake_cloud {

std::string PageWindow::next_token(std::string_view prefix) const {
  return next ? std::string(prefix) + std::to_string(*next) : std::string();
}

PageWindow page_from(std::size_t n, std::size_t begin, long asked, long page_size) {
  PageWindow w;
  w.begin = std::min(n, begin);
  w.end = std::min(n, w.begin + static_cast<std::size_t>(std::max<long>(1, std::min(asked, page_size))));
  if (w.end < n) w.next = w.end;
  return w;
}

std::optional<PageWindow> page_at_token(std::size_t n, const std::optional<std::string>& token, std::string_view prefix,
                                        long asked, long page_size) {
  if (!token || token->empty()) return page_from(n, 0, asked, page_size);
  if (!token->starts_with(prefix)) return std::nullopt;
  std::string_view digits = std::string_view(*token).substr(prefix.size());
  std::size_t at = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), at);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || at > n) return std::nullopt;
  return page_from(n, at, asked, page_size);
}

std::size_t last_page(std::size_t n, long per_page) {
  const auto size = static_cast<std::size_t>(std::max<long>(1, per_page));
  return std::max<std::size_t>(1, (n + size - 1) / size);
}

PageWindow numbered_page(std::size_t n, long page, long per_page) {
  const auto size = static_cast<std::size_t>(std::max<long>(1, per_page));
  return page_from(n, static_cast<std::size_t>(std::max<long>(1, page) - 1) * size, per_page, per_page);
}

std::optional<long> number_param(const std::map<std::string, std::string>& query, std::string_view name, long lo, long hi,
                                 long fallback) {
  auto it = query.find(std::string(name));
  if (it == query.end()) return fallback;
  long n = 0;
  const std::string& v = it->second;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < lo || n > hi) return std::nullopt;
  return n;
}

}  // namespace tsum::providers::fake_cloud
