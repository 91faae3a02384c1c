#include "providers/azure/azure_provider.h"

#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <map>

#include "common/json_util.h"
#include "providers/azure/azure_catalog.h"
#include "providers/azure/ssh_key.h"
#include "providers/http/codec.h"
#include "providers/instance_name.h"
#include "providers/sleep_for.h"

namespace tsum::providers::azure {

namespace {

constexpr int kMaxListPages = 1000;
constexpr std::string_view kRunTag = "tsum-run";
constexpr std::size_t kMaxCustomData = 65535 * 3 / 4;  // Azure's 64 KiB, base64

std::string api(std::string_view version) { return "api-version=" + std::string(version); }

InstanceState state_of(const AzureVm& vm) {
  if (vm.provisioning_state == "Deleting" || vm.provisioning_state == "Failed") return InstanceState::exited;
  if (vm.power_state == "running") return InstanceState::running;
  if (vm.power_state.empty() || vm.power_state == "starting") return InstanceState::pending;
  return InstanceState::exited;  // stopping, stopped, deallocating, deallocated: a stopped VM still bills disks
}

// What describe says of a VM, its address aside.
InstanceStatus status_of(const AzureVm& vm) {
  return {state_of(vm), "Azure provisioning " + vm.provisioning_state +
                            (vm.power_state.empty() ? "" : ", PowerState/" + vm.power_state), ""};
}

Error provisioning_error(const std::string& what, const AsyncStatus& s) {
  const bool capacity = s.error_code.find("Allocation") != std::string::npos || s.error_code == "SkuNotAvailable" ||
                        s.error_code == "OperationNotAllowed";
  return make_error(capacity ? Code::unavailable : Code::invalid_argument,
                    what + " " + s.status + ": " + (s.error_code.empty() ? "no error code" : s.error_code) +
                        (s.error_message.empty() ? "" : ": " + s.error_message));
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const auto end = text.find(sep, at);
    parts.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return parts;
    at = end + 1;
  }
}

// "22.04.202611200" > "22.04.9": dotted versions compared part by part, as numbers where both parts are digits.
bool version_less(const std::string& a, const std::string& b) {
  const auto pa = split(a, '.'), pb = split(b, '.');
  const auto digits = [](const std::string& p) { return !p.empty() && p.find_first_not_of("0123456789") == std::string::npos; };
  for (std::size_t k = 0; k < std::min(pa.size(), pb.size()); ++k) {
    std::string x = pa[k], y = pb[k];
    if (digits(x) && digits(y)) {
      x.erase(0, std::min(x.find_first_not_of('0'), x.size() - 1));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size() - 1));
      if (x.size() != y.size()) return x.size() < y.size();
    }
    if (x != y) return x < y;
  }
  return pa.size() < pb.size();
}

// publisher:offer:sku:version, as `az vm create --image` takes it; and back.
std::string urn_of(const ImageReference& i) { return i.publisher + ":" + i.offer + ":" + i.sku + ":" + i.version; }
std::optional<ImageReference> image_of(const std::string& urn) {
  const auto parts = split(urn, ':');
  if (parts.size() != 4) return std::nullopt;
  for (const auto& p : parts)
    if (p.empty()) return std::nullopt;
  return ImageReference{parts[0], parts[1], parts[2], parts[3]};
}

std::string data_field(const InstanceHandle& h, const char* name, const std::string& fallback) {
  return h.data.is_object() && h.data.value(name, "") != "" ? h.data.value(name, "") : fallback;
}

}  // namespace

Result<std::unique_ptr<AzureProvider>> AzureProvider::make(AzureOptions opts) {
  const std::string& sub = opts.credentials.subscription_id;
  opts.cloud_init.spot_notice = "azure";  // Scheduled Events' Preempt
  if (opts.unusable.empty() && (sub.empty() || sub.find_first_of("/?#%& ") != std::string::npos))
    return make_error(Code::invalid_argument, "azure: no valid subscription id");
  if (!valid_location(opts.location)) return make_error(Code::invalid_argument, "azure: location '" + opts.location + "' is not valid");
  if (!valid_tag_text(opts.tag_name)) return make_error(Code::invalid_argument, "azure: tag name '" + opts.tag_name + "' is not valid");
  auto made = AzureApi::make({.credentials = opts.credentials, .unusable = opts.unusable, .login_endpoint = opts.login_endpoint,
                              .management_endpoint = opts.management_endpoint, .prices_endpoint = opts.prices_endpoint,
                              .http = opts.http, .attempt_timeout = opts.attempt_timeout, .clock = opts.clock});
  if (!made) return made.error();
  return std::unique_ptr<AzureProvider>(new AzureProvider(std::move(opts), std::move(*made)));
}

AzureProvider::AzureProvider(AzureOptions opts, std::unique_ptr<AzureApi> api)
    : opts_(std::move(opts)), api_(std::move(api)), ssh_public_key_(opts_.ssh_public_key) {}

double AzureProvider::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

std::string AzureProvider::group_path(const std::string& group) const {
  return "subscriptions/" + opts_.credentials.subscription_id + "/resourceGroups/" + group;
}

std::string AzureProvider::group_name(const LaunchSpec& spec) { return instance_name_for(spec); }

Task<Result<std::vector<Offer>>> AzureProvider::offers(const Requirements& req) {
  if (!catalog_ || now_s() - catalog_at_s_ > static_cast<double>(opts_.catalog_ttl.count())) {
    auto fetched = co_await fetch_catalog(*api_, opts_.credentials.subscription_id, opts_.location);
    if (!fetched) co_return fetched.error();
    auto image = co_await current_image();
    for (auto& o : *fetched) o.image = urn_of(image);
    catalog_ = std::move(*fetched);  // once whole: a call while the image was asked for gets it too
    catalog_at_s_ = now_s();
  }
  std::vector<Offer> out;
  for (const auto& o : *catalog_)
    if (satisfies(o, req))
      out.push_back(o);
  co_return out;
}

Task<Result<MachineQuota>> AzureProvider::machine_quota() {
  const Requirements any;
  auto all = co_await offers(any);
  if (!all) co_return all.error();
  const std::string method = "GET", body;
  const std::string path = "subscriptions/" + opts_.credentials.subscription_id + "/providers/Microsoft.Compute/locations/" +
                           opts_.location + "/usages?" + api("2023-03-01");
  auto got = co_await api_->arm(method, path, body);
  if (!got) co_return got.error();
  double cores = 0, vms = 0;
  if (got->body.contains("value") && got->body["value"].is_array())
    for (const auto& u : got->body["value"]) {
      if (!u.is_object() || !u.contains("name") || !u["name"].is_object() || !u.contains("limit") || !u["limit"].is_number()) continue;
      const std::string name = json_str(u["name"], "value");
      if (name == "cores") cores = u["limit"].get<double>();
      if (name == "virtualMachines") vms = u["limit"].get<double>();
    }
  auto out = machines_within(cores, *all, opts_.location + "'s Total Regional vCPUs quota");
  if (vms >= 1 && vms <= 1e7 && (!out || vms < out->machines))
    out = MachineQuota{static_cast<int>(vms), opts_.location + "'s Virtual Machines quota"};
  if (!out) co_return make_error(Code::not_found, "azure: " + opts_.location + " reports no vCPU or VM quota");
  co_return *out;
}

// The marketplace image as Azure has it now: version "latest" asked for the newest version in the location
// (VirtualMachineImages list, the highest version number), as `az vm image list --all` shows it; the configured
// reference when that cannot be asked.
Task<ImageReference> AzureProvider::current_image() {
  ImageReference i = opts_.image;
  if (i.version != "latest") co_return i;
  const std::string method = "GET", body;
  const std::string path = "subscriptions/" + opts_.credentials.subscription_id + "/providers/Microsoft.Compute/locations/" +
                           opts_.location + "/publishers/" + i.publisher + "/artifacttypes/vmimage/offers/" + i.offer +
                           "/skus/" + i.sku + "/versions?" + api("2023-03-01");
  auto got = co_await api_->arm(method, path, body);
  if (!got || !got->body.is_array()) co_return i;
  std::string best;
  for (const auto& v : got->body)
    if (v.is_object() && !json_str(v, "name").empty() && (best.empty() || version_less(best, json_str(v, "name")))) best = json_str(v, "name");
  if (!best.empty()) i.version = best;
  co_return i;
}

Result<VmSpec> AzureProvider::vm_spec(const Offer& offer, const LaunchSpec& spec) {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "azure: " + why); };
  if (offer.instance_type.empty()) return bad("offer without a VM size");
  if (spec.idempotency_token.empty()) return bad("create needs an idempotency token");
  if (!valid_tag_text(spec.tag)) return bad("tag '" + spec.tag + "' is not a tag value tsum uses (letters, digits, _ . -)");
  if (!valid_tag_text(spec.run_id)) return bad("run id '" + spec.run_id + "' is not a tag value tsum uses");
  auto user_data = cloud_init_user_data(spec, opts_.cloud_init);
  if (!user_data) return user_data.error();
  if (user_data->size() > kMaxCustomData) return bad("custom data over Azure's 64 KiB");
  if (ssh_public_key_.empty()) {
    auto key = throwaway_ssh_public_key();
    if (!key) return key.error();
    ssh_public_key_ = *key;
  }
  const std::string group = group_name(spec);
  return VmSpec{.name = group, .location = opts_.location, .size = offer.instance_type,
                .image = image_of(offer.image).value_or(opts_.image),
                .disk_gb = opts_.disk_gb, .admin_username = opts_.admin_username, .ssh_public_key = ssh_public_key_,
                .user_data = *user_data,
                .subnet_id = "/" + group_path(group) + "/providers/Microsoft.Network/virtualNetworks/" + group + "-vnet/subnets/default",
                .tags = {{opts_.tag_name, spec.tag}, {std::string(kRunTag), spec.run_id}},
                .spot = spec.market == "spot", .zone = spec.zone};
}

InstanceHandle AzureProvider::handle_of(const std::string& group, const std::string& location, const std::string& size,
                                        double created_at) const {
  return {"azure", group,
          {{"subscription", opts_.credentials.subscription_id}, {"location", location}, {"vm", group},
           {"vm_size", size}, {"created_at_s", created_at}}};
}

Task<Status> AzureProvider::wait_for(const std::string& what, const ArmReply& reply, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  const bool by_status = !reply.async_operation.empty();
  const std::string url = by_status ? reply.async_operation : reply.location;
  for (bool done = url.empty(); !done;) {
    if (std::chrono::steady_clock::now() + opts_.operation_poll > until)
      co_return make_error(Code::timeout, "azure: " + what + " not done within " + std::to_string(deadline.count()) + " ms");
    co_await sleep_for(opts_.operation_poll);
    auto answer = co_await api_->arm_get(url);
    if (!answer) co_return answer.error();
    if (!by_status) {
      done = answer->status != 202;  // the Location answers 202 until the operation is over
      continue;
    }
    auto s = parse_async_status(answer->body);
    if (!s) co_return s.error();
    if (s->done() && s->status != "Succeeded") co_return provisioning_error("azure: " + what, *s);
    done = s->done();
  }
  co_return Status{};
}

Task<Status> AzureProvider::claim_group(const VmSpec& vm, const LaunchSpec& spec) {
  const std::string path = group_path(vm.name) + "?" + api(kResourcesApi);
  std::string method = "GET", body;
  auto existing = co_await api_->arm(method, path, body);
  if (existing) {
    auto g = parse_group(existing->body);
    if (!g) co_return g.error();
    auto run = g->tags.find(std::string(kRunTag));
    if (run == g->tags.end() || run->second != spec.run_id || g->tags[opts_.tag_name] != spec.tag)
      co_return make_error(Code::already_exists, "azure: resource group " + vm.name + " is taken by another run's group");
  } else if (existing.code() != Code::not_found) {
    co_return existing.error();
  }
  method = "PUT";
  body = group_body(vm.location, vm.tags).dump();
  auto put = co_await api_->arm(method, path, body);
  if (!put) co_return put.error();
  co_return Status{};
}

Task<Result<InstanceHandle>> AzureProvider::create(const Offer& offer, const LaunchSpec& spec) {
  auto vm = vm_spec(offer, spec);
  if (!vm) co_return vm.error();
  const double created_at = now_s();
  auto claimed = co_await claim_group(*vm, spec);
  if (!claimed) co_return claimed.error();
  const std::string method = "PUT";
  const std::string vnet_path = group_path(vm->name) + "/providers/Microsoft.Network/virtualNetworks/" + vm->name +
                                "-vnet?" + api(kNetworkApi);
  const std::string vnet = vnet_body(vm->location, vm->tags).dump();
  auto network = co_await api_->arm(method, vnet_path, vnet);
  if (!network) co_return network.error();
  auto network_ready = co_await wait_for("virtual network " + vm->name + "-vnet", *network, opts_.operation_deadline);
  if (!network_ready) co_return network_ready.error();
  const std::string vm_path = group_path(vm->name) + "/providers/Microsoft.Compute/virtualMachines/" + vm->name + "?" +
                              api(kComputeApi);
  const std::string body = vm_body(*vm).dump();
  auto put = co_await api_->arm(method, vm_path, body);
  if (!put) co_return put.error();
  auto provisioned = co_await wait_for("virtual machine " + vm->name, *put, opts_.operation_deadline);
  if (!provisioned && provisioned.code() != Code::timeout) {
    const std::string del = "DELETE", group = group_path(vm->name) + "?" + api(kResourcesApi), none;
    auto cleanup = co_await api_->arm(del, group, none);  // the launch failed: its group goes with it
    if (!cleanup) co_return make_error(provisioned.code(), provisioned.error().detail + "; deleting its resource group failed too: " + cleanup.error().detail);
    co_return make_error(provisioned.code(), provisioned.error().detail + "; its resource group is being deleted");
  }
  if (!provisioned) co_return provisioned.error();
  auto h = handle_of(vm->name, vm->location, vm->size, created_at);
  if (vm->spot) h.data["spot"] = true;  // describe then reads a VM gone from its group as an eviction
  co_return h;
}

Task<Result<std::string>> AzureProvider::public_ip(const std::string& group) {
  const std::string path = group_path(group) + "/providers/Microsoft.Network/publicIPAddresses?" + api(kNetworkApi);
  const std::string method = "GET", body;
  auto answer = co_await api_->arm(method, path, body);
  if (!answer) co_return answer.error();
  co_return first_public_ip(answer->body);
}

Task<Result<InstanceStatus>> AzureProvider::describe(const InstanceHandle& h) {
  if (!valid_group_name(h.id)) co_return make_error(Code::invalid_argument, "azure: handle without a valid resource group");
  const std::string vm_name = data_field(h, "vm", h.id);
  const std::string path = group_path(h.id) + "/providers/Microsoft.Compute/virtualMachines/" + vm_name +
                           "?$expand=instanceView&" + api(kComputeApi);
  const std::string method = "GET", body;
  auto answer = co_await api_->arm(method, path, body);
  if (!answer && answer.code() == Code::not_found) {
    // tsum deletes a VM's whole resource group; Azure's eviction of a Spot VM (evictionPolicy Delete) deletes the
    // VM alone: a spot VM gone from a group that is still there was evicted.
    const bool vm_alone = answer.error().detail.find("ResourceGroupNotFound") == std::string::npos;
    InstanceStatus st{InstanceState::gone, "Azure does not know the VM or its group", ""};
    if (vm_alone && h.data.is_object() && h.data.value("spot", false)) {
      st.detail = "Azure evicted the Spot VM (gone from its resource group)";
      st.interrupted = true;
    }
    co_return st;
  }
  if (!answer) co_return answer.error();
  auto vm = parse_vm(answer->body);
  if (!vm) co_return vm.error();
  InstanceStatus out = status_of(*vm);
  if (out.state == InstanceState::exited) co_return out;
  auto ip = co_await public_ip(h.id);
  if (!ip) co_return ip.error();
  out.address = *ip;
  co_return out;
}

Task<Result<std::vector<nlohmann::json>>> AzureProvider::list_all(const std::string& path, const std::string& what) {
  std::vector<nlohmann::json> out;
  std::string next;
  for (int page = 0; page < kMaxListPages; ++page) {
    const std::string method = "GET", body;
    Result<ArmReply> answer = make_error(Code::internal, "no answer");
    if (next.empty()) answer = co_await api_->arm(method, path, body);
    else answer = co_await api_->arm_get(next);
    if (!answer) co_return answer.error();
    auto parsed = parse_page(answer->body);
    for (auto& item : parsed.value) out.push_back(std::move(item));
    if (parsed.next_link.empty()) co_return out;
    next = parsed.next_link;
  }
  co_return make_error(Code::internal, "ARM " + what + ": more than 1000 pages");
}

Task<std::vector<Result<InstanceStatus>>> AzureProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  std::vector<Result<InstanceStatus>> out;
  out.reserve(handles.size());
  const std::string sub = "subscriptions/" + opts_.credentials.subscription_id;
  const std::string vm_path =
      sub + "/providers/Microsoft.Compute/virtualMachines?" + api(kComputeApi) + "&statusOnly=true";
  const std::string ip_path = sub + "/providers/Microsoft.Network/publicIPAddresses?" + api(kNetworkApi);
  auto vms = co_await list_all(vm_path, "virtual machines");
  Result<std::vector<nlohmann::json>> ips = std::vector<nlohmann::json>{};
  if (vms) ips = co_await list_all(ip_path, "public IPs");
  if (!vms || !ips) {
    const Error e = !vms ? vms.error() : ips.error();
    for (size_t i = 0; i < handles.size(); ++i) out.push_back(e);
    co_return out;
  }
  std::map<std::string, AzureVm> vm_of;  // "<group>/<vm>", lower-case
  for (const auto& j : *vms)
    if (auto vm = parse_vm(j)) vm_of[vm->group + "/" + ascii_lower(vm->name)] = std::move(*vm);
  const auto ip_of = public_ips_by_group(*ips);
  for (const auto& h : handles) {
    if (!valid_group_name(h.id)) {
      out.push_back(make_error(Code::invalid_argument, "azure: handle without a valid resource group"));
      continue;
    }
    const auto vm = vm_of.find(ascii_lower(h.id) + "/" + ascii_lower(data_field(h, "vm", h.id)));
    const auto ip = ip_of.find(ascii_lower(h.id));
    if (vm == vm_of.end()) {
      out.push_back(co_await describe(h));  // being created, or gone
      continue;
    }
    InstanceStatus st = status_of(vm->second);
    if (st.state != InstanceState::exited) {
      if (ip == ip_of.end()) {
        out.push_back(co_await describe(h));
        continue;
      }
      st.address = ip->second;
    }
    out.push_back(std::move(st));
  }
  co_return out;
}

Task<Status> AzureProvider::terminate(const InstanceHandle& h) {
  if (!valid_group_name(h.id)) co_return make_error(Code::invalid_argument, "azure: handle without a valid resource group");
  const std::string path = group_path(h.id) + "?" + api(kResourcesApi), method = "DELETE", body;
  auto answer = co_await api_->arm(method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return Status{};  // deleted already
  if (!answer) co_return answer.error();
  co_return co_await wait_for("deleting resource group " + h.id, *answer, opts_.delete_deadline);
}

Task<Result<std::vector<InstanceHandle>>> AzureProvider::list_tagged(std::string_view tag) {
  if (!valid_tag_text(tag)) co_return make_error(Code::invalid_argument, "azure: tag '" + std::string(tag) + "' is not a tag value");
  const std::string filter = "tagName eq '" + opts_.tag_name + "' and tagValue eq '" + std::string(tag) + "'";
  const std::string path = "subscriptions/" + opts_.credentials.subscription_id + "/resourcegroups?" + api(kResourcesApi) +
                           "&$filter=" + http::uri_encode(filter);
  auto items = co_await list_all(path, "resource groups");
  if (!items) co_return items.error();
  auto groups = parse_group_page(nlohmann::json{{"value", std::move(*items)}});  // every page's groups as one
  if (!groups) co_return groups.error();
  std::vector<InstanceHandle> out;
  for (const auto& g : groups->items) out.push_back(handle_of(g.name, g.location, "", 0));
  co_return out;
}

}  // namespace tsum::providers::azure
