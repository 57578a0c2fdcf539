/* fake_nvml.c - a stand-in libnvidia-ml.so.1 for tests/test_capture.c: the few NVML entry points
 * harness/nvml.c calls, returning fixed values, so the NVML path is tested without a driver.
 * One device, PCI bus id "00000000:19:00.0"; any other id is NVML_ERROR_NOT_FOUND (6). */
#include <string.h>

typedef struct fake_device *nvmlDevice_t;
static struct fake_device { int unused; } dev0;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return r == 6 ? "Not Found" : r == 3 ? "Not Supported" : "Unknown Error"; }
int nvmlSystemGetDriverVersion(char *v, unsigned n) {
  strncpy(v, "580.159.04", n);
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *d) {
  if (strcmp(id, "00000000:19:00.0") && strcmp(id, "0000:19:00.0")) return 6;
  *d = &dev0;
  return 0;
}
/* clock ids: 0 graphics, 1 SM, 2 memory */
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz) {
  (void)d;
  *mhz = type == 1 ? 1980 : type == 2 ? 3201 : 1980;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c) {
  (void)d;
  if (sensor != 0) return 3;
  *c = 41;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) {
  (void)d;
  *mw = 123456;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
  (void)d;
  (void)mj;
  return 3; /* not supported: the sample must say so rather than report 0 */
}
/* sw power cap (0x4) and sw thermal slowdown (0x20) */
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
  (void)d;
  *r = 0x4ULL | 0x20ULL;
  return 0;
}
int nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *p) {
  (void)d;
  *p = 0;
  return 0;
}
