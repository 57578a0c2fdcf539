/* device.h - what CUDA says about the GPU a run uses (article 0x0BA level 3: GPU name and
 * architecture, driver and CUDA runtime versions). Every GPU pass calls dkb_device_require first, so
 * a machine without a driver or a device fails with the runtime's own reason, e.g.
 * "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (...)". */
#ifndef DKB_DEVICE_H
#define DKB_DEVICE_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"

struct dkb_device {
  int ordinal;                 /* CUDA device ordinal */
  char name[256];              /* cudaDeviceProp.name, e.g. "NVIDIA H200" */
  char uuid[48];               /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it */
  int cc_major, cc_minor;      /* compute capability */
  int sm_count;                /* multiprocessors */
  long long l2_bytes;          /* L2 cache size */
  long long global_mem_bytes;  /* total global memory */
  int sm_clock_khz;            /* peak SM clock (cudaDevAttrClockRate); 0 when not reported */
  int mem_clock_khz;           /* peak memory clock (cudaDevAttrMemoryClockRate); 0 when not reported */
  int mem_bus_width_bits;      /* cudaDevAttrGlobalMemoryBusWidth; 0 when not reported */
  char pci_bus_id[32];         /* "0000:19:00.0": NVML maps the device by this */
};

struct dkb_device_info {
  int driver_version;   /* cudaDriverGetVersion, e.g. 13000; 0 when no driver is installed */
  int runtime_version;  /* cudaRuntimeGetVersion, e.g. 13000 */
  int device_count;     /* -1 when cudaGetDeviceCount failed */
  int available;        /* 1 when dev is filled */
  char reason[1024];    /* why not available (the error message), "" when available */
  struct dkb_device dev;
};

/* 0 when device `ordinal` exists; else -1 with the reason (DKB_ENV): the runtime's message for
 * cudaGetDeviceCount, "no CUDA device (cudaGetDeviceCount returned 0)" or "CUDA device 3 does not
 * exist (2 devices)". Checks the count before anything touches the device. */
int dkb_device_require(int ordinal, struct dkb_err *err);
/* Fills out (versions always, dev when the device exists). Returns 0, or -1 with err set and
 * out->reason holding the same message. Does not create a CUDA context beyond what the property
 * queries need. */
int dkb_device_probe(int ordinal, struct dkb_device_info *out, struct dkb_err *err);
/* The bundle's "device" object: {"status": "available", ...fields} or {"status": "unavailable",
 * "reason": ..., "driver_version", "runtime_version", "device_count"}. New reference. */
json_t *dkb_device_json(const struct dkb_device_info *d);
/* The peak DRAM rate of device `ordinal` in bytes a second, from the memory clock and bus width the bundle
 * records (two transfers a clock: an H200 3.201 GHz x 6016 bits = 4.815 TB/s, an H100 80GB HBM3 2.619 GHz x
 * 5120 bits = 3.352 TB/s); 0 when either is unreported. */
double dkb_device_dram_bytes_per_s(int ordinal);
/* "13.0" from 13000; buf needs 16 bytes. */
void dkb_device_version_text(int version, char buf[16]);

#endif
