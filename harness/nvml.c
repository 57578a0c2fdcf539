/* nvml.c - NVML through dlopen (see nvml.h). There is no nvml.h on our build machines: the few
 * prototypes are the function-pointer fields of struct dkb_nvml, values from NVML's nvml.h. */
#include "harness/nvml.h"
#include "harness/gpucheck.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

/* nvmlReturn_t names from nvml.h, by value. */
static const char *status_name(int st, char buf[32]) {
  static const char *const NAMES[] = {
      "NVML_SUCCESS", "NVML_ERROR_UNINITIALIZED", "NVML_ERROR_INVALID_ARGUMENT", "NVML_ERROR_NOT_SUPPORTED",
      "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_ALREADY_INITIALIZED", "NVML_ERROR_NOT_FOUND",
      "NVML_ERROR_INSUFFICIENT_SIZE", "NVML_ERROR_INSUFFICIENT_POWER", "NVML_ERROR_DRIVER_NOT_LOADED",
      "NVML_ERROR_TIMEOUT", "NVML_ERROR_IRQ_ISSUE", "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_FUNCTION_NOT_FOUND",
      "NVML_ERROR_CORRUPTED_INFOROM", "NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_RESET_REQUIRED",
      "NVML_ERROR_OPERATING_SYSTEM", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"};
  if (st >= 0 && st < (int)(sizeof NAMES / sizeof NAMES[0])) return NAMES[st];
  snprintf(buf, 32, st == 999 ? "NVML_ERROR_UNKNOWN" : "nvmlReturn_t %d", st);
  return buf;
}

/* NVML statuses go through the same formatter as CUDA's, with NVML's own text; `fn` names the NVML
 * entry point the function pointer holds. */
#define NVML_CHECK(n, err, fn, call)                                                                  \
  do {                                                                                                \
    int st_ = (call);                                                                                 \
    if (st_ != 0) {                                                                                   \
      char name_[32], call_[256];                                                                     \
      snprintf(call_, sizeof call_, "%s%s", fn, strchr(#call, '('));                                  \
      dkb_gpucheck_fail((err), DKB_ENV, status_name(st_, name_), (n)->error_string(st_), call_, __FILE__, \
                        __LINE__);                                                                    \
      goto cleanup;                                                                                   \
    }                                                                                                 \
  } while (0)

static void *sym(void *lib, const char *name) { return dlsym(lib, name); }

int dkb_nvml_open_path(struct dkb_nvml *n, const char *lib, struct dkb_err *err) {
  int rc = -1;
  memset(n, 0, sizeof *n);
  n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "dlopen %s: %s", lib, dlerror());
    goto cleanup;
  }
  *(void **)&n->init = sym(n->lib, "nvmlInit_v2");
  *(void **)&n->shutdown = sym(n->lib, "nvmlShutdown");
  *(void **)&n->error_string = sym(n->lib, "nvmlErrorString");
  *(void **)&n->handle_by_pci = sym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&n->clock = sym(n->lib, "nvmlDeviceGetClockInfo");
  static const char *const required[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString",
                                         "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetClockInfo"};
  void *have[] = {(void *)n->init, (void *)n->shutdown, (void *)n->error_string, (void *)n->handle_by_pci,
                  (void *)n->clock};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (!have[i]) {
      dkb_err_set(err, DKB_ENV, NULL, NULL, "%s: NVML lacks %s", lib, required[i]);
      goto cleanup;
    }
  /* Optional: a field whose function is absent is reported as such in each sample. */
  *(void **)&n->temperature = sym(n->lib, "nvmlDeviceGetTemperature");
  *(void **)&n->power = sym(n->lib, "nvmlDeviceGetPowerUsage");
  *(void **)&n->energy = sym(n->lib, "nvmlDeviceGetTotalEnergyConsumption");
  *(void **)&n->pstate = sym(n->lib, "nvmlDeviceGetPerformanceState");
  *(void **)&n->event_reasons = sym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons"); /* R535+ */
  if (!n->event_reasons) *(void **)&n->event_reasons = sym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  NVML_CHECK(n, err, "nvmlInit_v2", n->init());
  int (*drv)(char *, unsigned) = NULL;
  *(void **)&drv = sym(n->lib, "nvmlSystemGetDriverVersion");
  if (drv && drv(n->driver_version, sizeof n->driver_version)) n->driver_version[0] = '\0';
  rc = 0;
cleanup:
  if (rc && n->lib) {
    dlclose(n->lib);
    n->lib = NULL;
  }
  return rc;
}

int dkb_nvml_open(struct dkb_nvml *n, struct dkb_err *err) {
  /* the versioned name: the unversioned .so is only in development packages */
  return dkb_nvml_open_path(n, "libnvidia-ml.so.1", err);
}

void dkb_nvml_close(struct dkb_nvml *n) {
  if (!n->lib) return;
  n->shutdown();
  dlclose(n->lib);
  n->lib = NULL;
}

static const char *const FIELD_NAMES[DKB_NVML_NFIELDS] = {
    "sm_clock_mhz", "memory_clock_mhz", "graphics_clock_mhz", "temperature_c",
    "power_mw",     "energy_mj",        "clocks_event_reasons", "pstate"};

static int field_index(unsigned f) {
  int i = 0;
  while (f > 1) f >>= 1, i++;
  return i;
}

/* Records one field: reported, or why not (absent function or NVML's status text). */
static void take(const struct dkb_nvml *n, struct dkb_nvml_sample *s, unsigned field, int available, int status) {
  if (available && status == 0) {
    s->have |= field;
    return;
  }
  snprintf(s->missing[field_index(field)], sizeof s->missing[0], "%s",
           available ? n->error_string(status) : "not provided by this NVML");
}

int dkb_nvml_sample(const struct dkb_nvml *n, const char *pci_bus_id, struct dkb_nvml_sample *s, struct dkb_err *err) {
  int rc = -1;
  void *dev = NULL;
  memset(s, 0, sizeof *s);
  if (!n->lib) {
    dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "NVML is not open");
    goto cleanup;
  }
  NVML_CHECK(n, err, "nvmlDeviceGetHandleByPciBusId_v2", n->handle_by_pci(pci_bus_id, &dev));
  take(n, s, DKB_NVML_SM_CLOCK, 1, n->clock(dev, NVML_CLOCK_SM, &s->sm_clock_mhz));
  take(n, s, DKB_NVML_MEM_CLOCK, 1, n->clock(dev, NVML_CLOCK_MEM, &s->mem_clock_mhz));
  take(n, s, DKB_NVML_GRAPHICS_CLOCK, 1, n->clock(dev, NVML_CLOCK_GRAPHICS, &s->graphics_clock_mhz));
  take(n, s, DKB_NVML_TEMPERATURE, !!n->temperature,
       n->temperature ? n->temperature(dev, NVML_TEMPERATURE_GPU, &s->temperature_c) : 0);
  take(n, s, DKB_NVML_POWER, !!n->power, n->power ? n->power(dev, &s->power_mw) : 0);
  take(n, s, DKB_NVML_ENERGY, !!n->energy, n->energy ? n->energy(dev, &s->energy_mj) : 0);
  take(n, s, DKB_NVML_EVENT_REASONS, !!n->event_reasons, n->event_reasons ? n->event_reasons(dev, &s->event_reasons) : 0);
  take(n, s, DKB_NVML_PSTATE, !!n->pstate, n->pstate ? n->pstate(dev, &s->pstate) : 0);
  rc = 0;
cleanup:
  return rc;
}

size_t dkb_nvml_reason_names(unsigned long long bits, const char **names, size_t max) {
  /* nvmlClocksEventReason* values, bit 0 upward */
  static const char *const NAMES[] = {"gpu_idle",           "applications_clocks_setting", "sw_power_cap",
                                      "hw_slowdown",        "sync_boost",                  "sw_thermal_slowdown",
                                      "hw_thermal_slowdown", "hw_power_brake_slowdown",    "display_clock_setting"};
  static _Thread_local char unknown[64][32];
  size_t k = 0;
  for (int b = 0; b < 64 && k < max; b++) {
    if (!(bits >> b & 1)) continue;
    if (b < (int)(sizeof NAMES / sizeof NAMES[0])) {
      names[k++] = NAMES[b];
    } else {
      snprintf(unknown[b], sizeof unknown[b], "unknown_0x%llx", 1ULL << b);
      names[k++] = unknown[b];
    }
  }
  return k;
}

json_t *dkb_nvml_reason_names_json(unsigned long long bits) {
  const char *names[64];
  const size_t k = dkb_nvml_reason_names(bits, names, 64);
  json_t *arr = json_array();
  for (size_t i = 0; i < k; i++) json_array_append_new(arr, json_string(names[i]));
  return arr;
}

int dkb_nvml_reason_bits_parse(const char *text, unsigned long long *bits) {
  if (strncmp(text, "0x", 2)) return -1;
  const char *hex = text + 2;  /* 1 to 16 hex digits after "0x", as dkb_nvml_sample_json writes them */
  const size_t nh = strlen(hex);
  if (nh < 1 || nh > 16 || strspn(hex, "0123456789abcdefABCDEF") != nh) return -1;
  *bits = strtoull(hex, NULL, 16);
  return 0;
}

int dkb_nvml_reasons_slow(unsigned long long bits) {
  /* sw_power_cap, hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown: bits 2, 3, 5-7 */
  return (bits & 0xECull) != 0;
}

json_t *dkb_nvml_sample_json(const struct dkb_nvml_sample *s) {
  json_t *j = json_object(), *missing = json_object();
  const unsigned long long vals[DKB_NVML_NFIELDS] = {s->sm_clock_mhz, s->mem_clock_mhz, s->graphics_clock_mhz,
                                                     s->temperature_c, s->power_mw,     s->energy_mj,
                                                     s->event_reasons, (unsigned long long)s->pstate};
  for (int i = 0; i < DKB_NVML_NFIELDS; i++) {
    unsigned f = 1u << i;
    if (!(s->have & f)) {
      json_object_set_new(missing, FIELD_NAMES[i], json_string(s->missing[i]));
    } else if (f == DKB_NVML_EVENT_REASONS) {
      json_t *arr = dkb_nvml_reason_names_json(s->event_reasons);
      char bits[24]; /* hex text: a 64-bit mask may not fit a JSON-safe integer */
      snprintf(bits, sizeof bits, "0x%llx", s->event_reasons);
      json_object_set_new(j, FIELD_NAMES[i], json_pack("{s:s, s:o}", "bits", bits, "names", arr));
    } else {
      json_object_set_new(j, FIELD_NAMES[i], json_integer((json_int_t)vals[i]));
    }
  }
  json_object_set_new(j, "not_reported", missing);
  return j;
}
