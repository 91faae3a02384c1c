/* A stand-in for libnvidia-ml.so.1 with two GPUs, for testing the dlopen path of workload/nvml.
 * FAKE_NVML_FAIL=init makes nvmlInit_v2 fail as on a machine without a driver; FAKE_NVML_FAIL=util
 * makes the utilization query fail as for a GPU that fell off the bus. */
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

static struct nvmlDevice_st { int index; } devices[2] = {{0}, {1}};

static int failing(const char* what) {
  const char* f = getenv("FAKE_NVML_FAIL");
  return f && strcmp(f, what) == 0;
}

int nvmlInit_v2(void) { return failing("init") ? 9 /* DRIVER_NOT_LOADED */ : 0; }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "GPU is lost"; }
int nvmlDeviceGetCount_v2(unsigned int* n) { *n = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i >= 2) return 2; /* INVALID_ARGUMENT */
  *d = &devices[i];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int len) {
  strncpy(name, d->index == 0 ? "Fake H100 A" : "Fake H100 B", len - 1);
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  if (failing("util")) return 15; /* GPU_IS_LOST */
  u->gpu = d->index == 0 ? 30 : 70;
  u->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = 80ULL << 30;
  m->used = (d->index == 0 ? 1ULL : 3ULL) << 30;
  m->free = m->total - m->used;
  return 0;
}
