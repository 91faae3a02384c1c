// Pages of listed items, as every fake cuts them. A page holds min(asked, page_size) items, at least one:
// what the caller asked for (maxResults, pageSize, per_page), capped by the fake's own page size so tests can
// force pagination. A page token is the next page's offset, with a prefix of the cloud's ("nt-4" for EC2,
// "pt-4" for GCE, the bare "4" for Yandex and ARM's $skiptoken); Hetzner numbers its pages instead.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tsum::providers::fake_cloud {

struct PageWindow {
  std::size_t begin = 0, end = 0;     // the items [begin, end)
  std::optional<std::size_t> next;   // the next page's offset; nullopt on the last page
  // prefix + the next page's offset; "" on the last page.
  std::string next_token(std::string_view prefix = "") const;
};

// The page of n items from offset `begin` (clamped to n).
PageWindow page_from(std::size_t n, std::size_t begin, long asked, long page_size);

// The page a token names; the first page without one (nullopt or ""). nullopt when the token is not the
// prefix followed by an offset within n (a token this fake never handed out).
std::optional<PageWindow> page_at_token(std::size_t n, const std::optional<std::string>& token, std::string_view prefix,
                                        long asked, long page_size);

// Numbered pages: page `page` (1-based) of `per_page` items; the last page number is last_page(n, per_page).
PageWindow numbered_page(std::size_t n, long page, long per_page);
std::size_t last_page(std::size_t n, long per_page);

// A whole-number query parameter: fallback when absent; nullopt when it is not a whole number in [lo, hi].
std::optional<long> number_param(const std::map<std::string, std::string>& query, std::string_view name, long lo, long hi,
                                 long fallback);

}  // namespace tsum::providers::fake_cloud
