/* nvml.h - clocks, clock-event (throttle) reasons, power and temperature through NVML, sampled before
 * and after the timed pass (article 0x0BB K_env: clocks/power policy). NVML is dlopen'ed
 * (libnvidia-ml.so.1) so dkb starts where no driver exists; the device is found by its PCI bus id
 * (from dkb_device_probe), not by an index that may differ between CUDA and NVML. */
#ifndef DKB_NVML_H
#define DKB_NVML_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"

struct dkb_nvml {
  void *lib;                /* dlopen handle; NULL when closed */
  char driver_version[96];  /* nvmlSystemGetDriverVersion, "" when not reported */
  int (*init)(void);
  int (*shutdown)(void);
  const char *(*error_string)(int);
  int (*handle_by_pci)(const char *, void **);
  int (*clock)(void *, int, unsigned *);
  int (*temperature)(void *, int, unsigned *);
  int (*power)(void *, unsigned *);
  int (*energy)(void *, unsigned long long *);
  int (*event_reasons)(void *, unsigned long long *);
  int (*pstate)(void *, int *);
};

/* The values one sample asks for; a field is valid when its bit is in `have`. */
enum dkb_nvml_field {
  DKB_NVML_SM_CLOCK = 1 << 0,
  DKB_NVML_MEM_CLOCK = 1 << 1,
  DKB_NVML_GRAPHICS_CLOCK = 1 << 2,
  DKB_NVML_TEMPERATURE = 1 << 3,
  DKB_NVML_POWER = 1 << 4,
  DKB_NVML_ENERGY = 1 << 5,
  DKB_NVML_EVENT_REASONS = 1 << 6,
  DKB_NVML_PSTATE = 1 << 7,
};
#define DKB_NVML_NFIELDS 8

struct dkb_nvml_sample {
  unsigned sm_clock_mhz, mem_clock_mhz, graphics_clock_mhz;
  unsigned temperature_c;
  unsigned power_mw;                  /* nvmlDeviceGetPowerUsage (a 1 s average on Hopper) */
  unsigned long long energy_mj;       /* since driver load: use the difference of two samples */
  unsigned long long event_reasons;   /* nvmlClocksEventReason* bits; names via dkb_nvml_reason_names */
  int pstate;                         /* 0 = P0 (maximum performance) */
  unsigned have;                      /* enum dkb_nvml_field bits that were reported */
  char missing[DKB_NVML_NFIELDS][96]; /* per field (bit index): why it was not reported */
};

/* Opens libnvidia-ml.so.1 and initializes NVML. -1 with err (DKB_ENV) naming the step that failed,
 * e.g. "dlopen libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file: No such file or
 * directory". */
int dkb_nvml_open(struct dkb_nvml *n, struct dkb_err *err);
/* The same from an explicit library path (tests use a fake NVML). */
int dkb_nvml_open_path(struct dkb_nvml *n, const char *lib, struct dkb_err *err);
/* One sample of the device with this PCI bus id ("0000:19:00.0" as cudaDeviceGetPCIBusId writes it).
 * -1 with err when the device is not found; a field NVML does not support is left out of `have`
 * with its reason in `missing`. */
int dkb_nvml_sample(const struct dkb_nvml *n, const char *pci_bus_id, struct dkb_nvml_sample *s,
                    struct dkb_err *err);
void dkb_nvml_close(struct dkb_nvml *n);
/* Names of the set bits ("gpu_idle", "sw_power_cap", "hw_slowdown", ..., "unknown_0x200") in bit
 * order; returns how many were written (at most max). */
size_t dkb_nvml_reason_names(unsigned long long bits, const char **names, size_t max);
/* The same names as a JSON array. New reference. */
json_t *dkb_nvml_reason_names_json(unsigned long long bits);
/* The bits back from their JSON text ("0x" and 1 to 16 hex digits, as dkb_nvml_sample_json writes
 * them): 0, or -1 (bits untouched) for any other text. */
int dkb_nvml_reason_bits_parse(const char *text, unsigned long long *bits);
/* Bit 0 of the clock event reasons: the GPU was idle (before a timed region: not a limit on it). */
#define DKB_NVML_REASON_GPU_IDLE 0x1ull
/* 1 when one of the reason bits holds the clocks below what the load asks for: a power cap, a thermal
 * or hardware slowdown, the power brake. Not gpu_idle, sync_boost, or the application or display clock
 * settings (a setting, not a slowdown), nor an unknown bit. */
int dkb_nvml_reasons_slow(unsigned long long bits);
/* {"sm_clock_mhz": .., "memory_clock_mhz": .., "graphics_clock_mhz": .., "temperature_c": ..,
 *  "power_mw": .., "energy_mj": .., "pstate": .., "clocks_event_reasons": {"bits": "0x24", "names": [..]},
 *  "not_reported": {"field": "reason"}} with only the reported fields present. New reference. */
json_t *dkb_nvml_sample_json(const struct dkb_nvml_sample *s);

#endif
