#include "providers/aws/ec2_xml.h"

#include <charconv>

namespace tsum::providers::aws {

namespace {

Error missing(std::string_view response, std::string_view element) {
  return make_error(Code::internal, std::string(response) + ": response has no <" + std::string(element) + ">");
}

template <class T>
T number_or(std::string_view s, T fallback) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() ? v : fallback;
}

Ec2Instance instance_of(const XmlNode& item) {
  Ec2Instance out;
  out.id = item.child_text("instanceId");
  out.instance_type = item.child_text("instanceType");
  if (const XmlNode* s = item.find({"instanceState", "name"})) out.state = s->text;
  out.public_ip = item.child_text("ipAddress");
  out.private_ip = item.child_text("privateIpAddress");
  out.launch_time = item.child_text("launchTime");
  out.client_token = item.child_text("clientToken");
  if (const XmlNode* r = item.find({"stateReason", "code"})) out.state_reason = r->text;
  if (const XmlNode* tags = item.child("tagSet"))
    for (const XmlNode* t : tags->all("item")) out.tags[t->child_text("key")] = t->child_text("value");
  return out;
}

}  // namespace

std::optional<Ec2Error> parse_ec2_error(std::string_view body) {
  auto root = parse_xml(body);
  if (!root) return std::nullopt;
  const XmlNode* e = root->find({"Errors", "Error"});
  if (!e) e = root->name == "ErrorResponse" ? root->child("Error") : nullptr;  // the shape other services use
  if (!e) return std::nullopt;
  return Ec2Error{e->child_text("Code"), e->child_text("Message")};
}

Result<std::vector<Ec2Instance>> parse_run_instances(const XmlNode& root) {
  const XmlNode* set = root.child("instancesSet");
  if (!set) return missing("RunInstances", "instancesSet");
  std::vector<Ec2Instance> out;
  for (const XmlNode* item : set->all("item")) out.push_back(instance_of(*item));
  return out;
}

Result<Page<Ec2Instance>> parse_describe_instances(const XmlNode& root) {
  const XmlNode* reservations = root.child("reservationSet");
  if (!reservations) return missing("DescribeInstances", "reservationSet");
  Page<Ec2Instance> out;
  for (const XmlNode* r : reservations->all("item"))
    if (const XmlNode* set = r->child("instancesSet"))
      for (const XmlNode* item : set->all("item")) out.items.push_back(instance_of(*item));
  out.next_token = root.child_text("nextToken");
  return out;
}

Result<std::map<std::string, std::string>> parse_terminate_instances(const XmlNode& root) {
  const XmlNode* set = root.child("instancesSet");
  if (!set) return missing("TerminateInstances", "instancesSet");
  std::map<std::string, std::string> out;
  for (const XmlNode* item : set->all("item")) {
    const XmlNode* state = item->find({"currentState", "name"});
    out[item->child_text("instanceId")] = state ? state->text : "";
  }
  return out;
}

Result<Page<InstanceTypeInfo>> parse_describe_instance_types(const XmlNode& root) {
  const XmlNode* set = root.child("instanceTypeSet");
  if (!set) return missing("DescribeInstanceTypes", "instanceTypeSet");
  Page<InstanceTypeInfo> out;
  for (const XmlNode* item : set->all("item")) {
    InstanceTypeInfo t;
    t.instance_type = item->child_text("instanceType");
    if (const XmlNode* v = item->find({"vCpuInfo", "defaultVCpus"})) t.vcpus = number_or(v->text, 0);
    if (const XmlNode* m = item->find({"memoryInfo", "sizeInMiB"})) t.memory_mib = number_or(m->text, 0L);
    if (const XmlNode* gpus = item->find({"gpuInfo", "gpus"})) {
      for (const XmlNode* g : gpus->all("item")) {
        t.gpus += number_or(g->child_text("count"), 0);
        if (t.gpu_type.empty()) t.gpu_type = g->child_text("manufacturer") + " " + g->child_text("name");
      }
    }
    out.items.push_back(std::move(t));
  }
  out.next_token = root.child_text("nextToken");
  return out;
}

Result<Page<SpotPrice>> parse_spot_price_history(const XmlNode& root) {
  const XmlNode* set = root.child("spotPriceHistorySet");
  if (!set) return missing("DescribeSpotPriceHistory", "spotPriceHistorySet");
  Page<SpotPrice> out;
  for (const XmlNode* item : set->all("item")) {
    SpotPrice p{item->child_text("instanceType"), item->child_text("availabilityZone"),
                number_or(item->child_text("spotPrice"), -1.0), item->child_text("timestamp")};
    if (p.price < 0) return make_error(Code::internal, "DescribeSpotPriceHistory: spotPrice '" + item->child_text("spotPrice") + "' is not a number");
    out.items.push_back(std::move(p));
  }
  out.next_token = root.child_text("nextToken");
  return out;
}

}  // namespace tsum::providers::aws
