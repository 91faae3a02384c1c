// The fake Yandex Billing SKUs listing (billing/v1/skus): for every platform tsum knows, "<stem>. 100%
// vCPU" (core*hour), "<stem>. RAM" (gbyte*hour) and for GPU platforms "<stem>. GPU" (gpu*hour), each with an
// older and a current STREET_PRICE version and one that takes effect in 2099; plus a preemptible SKU and a
// disk SKU tsum must not confuse with them. Prices are plausible RUB figures, not Yandex's; USD is RUB / 90.
// Paged by pageSize (capped at page_size) with nextPageToken. Pure function, no I/O.
#pragma once

#include <map>
#include <string>

#include "tests/fakes/yandex/fake_yandex_compute.h"

namespace tsum::providers::yandex::fake {

// currency: RUB or USD (400 otherwise); filter: none or serviceId="<Compute Cloud's id>".
YcAnswer list_skus(const std::map<std::string, std::string>& query, int page_size);

}  // namespace tsum::providers::yandex::fake
