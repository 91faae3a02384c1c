// Error values for tsum. An error is a value: a short code plus a human-readable detail.
// Exceptions from third-party libraries (nlohmann, libtorch, std) are caught at module boundaries
// and turned into an Error; nothing above a boundary throws for an expected failure.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tsum {

enum class Code { ok, invalid_argument, not_found, already_exists, unavailable, timeout, cancelled, internal };

constexpr std::string_view code_name(Code c) {
  switch (c) {
    case Code::ok: return "ok";
    case Code::invalid_argument: return "invalid_argument";
    case Code::not_found: return "not_found";
    case Code::already_exists: return "already_exists";
    case Code::unavailable: return "unavailable";
    case Code::timeout: return "timeout";
    case Code::cancelled: return "cancelled";
    case Code::internal: return "internal";
  }
  return "internal";
}

struct Error {
  Code code = Code::internal;
  std::string detail;
};

inline Error make_error(Code c, std::string detail) { return Error{c, std::move(detail)}; }

// Result<T> holds either a T or an Error. Result<void> holds nothing or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }
  Code code() const { return ok() ? Code::ok : error().code; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }
  Code code() const { return ok_ ? Code::ok : error_.code; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace tsum
