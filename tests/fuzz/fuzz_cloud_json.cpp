// The clouds' JSON answers and credentials files: the first byte picks the parser, the rest is the document.
// Every JSON document also goes through the Kubernetes readers (nodes and their shapes, a Pod's state), and every
// text through its quantity and time parsers.
#include "fuzz_input.h"
#include "providers/azure/azure_catalog.h"
#include "providers/azure/azure_json.h"
#include "providers/gce/gce_catalog.h"
#include "providers/gce/gce_json.h"
#include "providers/gce/jwt.h"
#include "providers/hetzner/hetzner_json.h"
#include "providers/kubernetes/kube_json.h"
#include "providers/yandex/ps256_jwt.h"
#include "providers/yandex/yandex_catalog.h"
#include "providers/yandex/yandex_json.h"

using namespace tsum::providers;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 18;
  std::string_view in = tsum::fuzz::text(data + 1, size - 1);
  (void)kube::parse_quantity(in);
  (void)kube::parse_time(in);
  switch (which) {  // the ones that take text
    case 15: (void)gce::parse_service_account(in); return 0;
    case 16: (void)yandex::parse_authorized_key(in); return 0;
    case 17: (void)hetzner::parse_decimal(in, 4); (void)azure::group_of_id(in); return 0;
    default: break;
  }
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return 0;
  switch (which) {
    case 0: (void)gce::parse_instance(j); break;
    case 1: (void)gce::parse_operation(j); break;
    case 2: (void)gce::parse_aggregated_instances(j); break;
    case 3: (void)gce::parse_sku_page(j); break;
    case 4: (void)gce::parse_machine_types(j); break;
    case 5: (void)azure::parse_vm(j); break;
    case 6: (void)azure::parse_async_status(j); break;
    case 7: (void)azure::parse_group_page(j); (void)azure::parse_page(j); break;
    case 8: (void)azure::parse_retail_page(j); break;
    case 9: (void)azure::parse_sku_page(j, "westeurope"); break;
    case 10: (void)yandex::parse_instance(j); break;
    case 11: (void)yandex::parse_operation(j); break;
    case 12: (void)yandex::parse_instance_page(j); break;
    case 13: (void)yandex::parse_sku_page(j, 1.8e9); break;
    case 14: (void)hetzner::parse_server(j); (void)hetzner::parse_server_type(j); break;
    default: break;
  }
  if (auto nodes = kube::parse_nodes(j)) (void)kube::node_shapes(*nodes, j);
  (void)kube::parse_pod(j);
  (void)kube::status_message(in);
  return 0;
}
