#include "workload/machine/nvml.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

namespace tsum::workload {
namespace {

// The few NVML types used here, as nvml.h declares them (the header is not needed to build).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kSuccess = 0;
constexpr unsigned kNameLength = 96;

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_count)(unsigned int*);
  nvmlReturn_t (*device_handle)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*device_name)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
};

namespace {

template <class F>
bool resolve(void* handle, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, symbol));
  return out != nullptr;
}

std::string nvml_error(const Nvml::Api& api, const char* call, nvmlReturn_t rc) {
  const char* text = api.error_string ? api.error_string(rc) : nullptr;
  return std::string(call) + " failed: " + (text ? text : "error " + std::to_string(rc));
}

}  // namespace

Result<std::unique_ptr<Nvml>> Nvml::open(const std::string& library) {
  std::string path = library;
  if (path.empty()) {
    const char* env = std::getenv("TSUM_NVML_LIBRARY");
    path = env && *env ? env : "libnvidia-ml.so.1";
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    const std::string error = "no GPU: cannot load " + path + ": " + (why ? why : "?");
    // The driver's own folder, where container images mount it without adding it to the loader's path.
    if (library.empty() && path == "libnvidia-ml.so.1") {
      handle = dlopen("/usr/local/nvidia/lib64/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    }
    if (handle == nullptr) return make_error(Code::unavailable, error);
  }
  auto api = std::make_unique<Api>();
  const bool ok = resolve(handle, "nvmlInit_v2", api->init) &&
                  resolve(handle, "nvmlShutdown", api->shutdown) &&
                  resolve(handle, "nvmlErrorString", api->error_string) &&
                  resolve(handle, "nvmlDeviceGetCount_v2", api->device_count) &&
                  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api->device_handle) &&
                  resolve(handle, "nvmlDeviceGetName", api->device_name) &&
                  resolve(handle, "nvmlDeviceGetUtilizationRates", api->utilization) &&
                  resolve(handle, "nvmlDeviceGetMemoryInfo", api->memory);
  if (!ok) {
    dlclose(handle);
    return make_error(Code::unavailable, "no GPU: " + path + " lacks an NVML entry point");
  }
  if (const nvmlReturn_t rc = api->init(); rc != kSuccess) {
    auto error = make_error(Code::unavailable, "no GPU: " + nvml_error(*api, "nvmlInit", rc));
    dlclose(handle);
    return error;
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, std::move(api)));
}

Nvml::Nvml(void* handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(handle_);
}

Result<std::vector<GpuSample>> Nvml::sample() const {
  unsigned int count = 0;
  if (const auto rc = api_->device_count(&count); rc != kSuccess) {
    return make_error(Code::unavailable, nvml_error(*api_, "nvmlDeviceGetCount", rc));
  }
  std::vector<GpuSample> out;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (const auto rc = api_->device_handle(i, &device); rc != kSuccess) {
      return make_error(Code::unavailable, nvml_error(*api_, "nvmlDeviceGetHandleByIndex", rc));
    }
    GpuSample s;
    s.index = static_cast<int>(i);
    char name[kNameLength] = {};
    if (api_->device_name(device, name, kNameLength) == kSuccess) s.name = name;
    nvmlUtilization_t util{};
    if (const auto rc = api_->utilization(device, &util); rc != kSuccess) {
      return make_error(Code::unavailable, nvml_error(*api_, "nvmlDeviceGetUtilizationRates", rc));
    }
    nvmlMemory_t memory{};
    if (const auto rc = api_->memory(device, &memory); rc != kSuccess) {
      return make_error(Code::unavailable, nvml_error(*api_, "nvmlDeviceGetMemoryInfo", rc));
    }
    s.util_pct = util.gpu;
    s.mem_used_bytes = memory.used;
    s.mem_total_bytes = memory.total;
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<std::set<int>> cuda_visible_indices() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) return std::nullopt;
  std::set<int> out;
  std::stringstream in(env);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    out.insert(std::stoi(item));
  }
  return out;
}

}  // namespace tsum::workload
