// EC2's XML answers (parse_xml, then each response parser on the same tree) and the AWS price list's JSON.
#include "fuzz_input.h"
#include "providers/aws/ec2_xml.h"
#include "providers/aws/price_list.h"
#include "providers/aws/xml.h"

using namespace tsum::providers::aws;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tsum::fuzz::text(data, size);
  (void)parse_get_products(in);
  auto root = parse_xml(in);
  if (!root.ok()) return 0;
  (void)parse_run_instances(*root);
  (void)parse_describe_instances(*root);
  (void)parse_terminate_instances(*root);
  (void)parse_describe_instance_types(*root);
  (void)parse_spot_price_history(*root);
  return 0;
}
