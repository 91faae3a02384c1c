// The parts of EC2 Query API (version 2016-11-15) responses tsum reads, parsed from XML into plain structs.
// Missing optional elements give empty strings; a response without its expected container is an error.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "providers/aws/xml.h"

namespace tsum::providers::aws {

inline constexpr std::string_view kEc2ApiVersion = "2016-11-15";

struct Ec2Error {
  std::string code;  // e.g. "InvalidInstanceID.NotFound"
  std::string message;
};

struct Ec2Instance {
  std::string id;
  std::string instance_type;
  std::string state;  // pending | running | shutting-down | terminated | stopping | stopped
  std::string public_ip;
  std::string private_ip;
  std::string launch_time;
  std::string client_token;
  std::string state_reason;  // stateReason/code, e.g. Server.SpotInstanceTermination; empty: none given
  std::map<std::string, std::string> tags;
};

struct InstanceTypeInfo {
  std::string instance_type;
  int vcpus = 0;
  long memory_mib = 0;
  int gpus = 0;
  std::string gpu_type;  // "NVIDIA T4"
};

struct SpotPrice {
  std::string instance_type;
  std::string availability_zone;
  double price = 0;
  std::string timestamp;
};

template <class T>
struct Page {
  std::vector<T> items;
  std::string next_token;  // empty on the last page
};

// <Response><Errors><Error><Code/><Message/></Error></Errors>...; nullopt when body is not such a document.
std::optional<Ec2Error> parse_ec2_error(std::string_view body);

Result<std::vector<Ec2Instance>> parse_run_instances(const XmlNode& root);
Result<Page<Ec2Instance>> parse_describe_instances(const XmlNode& root);
// instance id -> current state name
Result<std::map<std::string, std::string>> parse_terminate_instances(const XmlNode& root);
Result<Page<InstanceTypeInfo>> parse_describe_instance_types(const XmlNode& root);
Result<Page<SpotPrice>> parse_spot_price_history(const XmlNode& root);

}  // namespace tsum::providers::aws
