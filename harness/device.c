/* device.c - CUDA device probe (see device.h). */
#include "harness/device.h"
#include "harness/gpucheck.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

int dkb_device_require(int ordinal, struct dkb_err *err) {
  int rc = -1, count = 0;
  DKB_CUDA_CHECK(err, cudaGetDeviceCount(&count));
  if (count == 0) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "no CUDA device (cudaGetDeviceCount returned 0)");
    goto cleanup;
  }
  if (ordinal < 0 || ordinal >= count) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "CUDA device %d does not exist (%d device%s)", ordinal, count,
                count == 1 ? "" : "s");
    goto cleanup;
  }
  rc = 0;
cleanup:
  return rc;
}

void dkb_device_version_text(int version, char buf[16]) {
  snprintf(buf, 16, "%d.%d", version / 1000, version % 1000 / 10);
}

static void uuid_text(const unsigned char b[16], char out[48]) {
  char *o = out + sprintf(out, "GPU-");
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
    o += sprintf(o, "%02x", b[i]);
  }
}

/* An attribute a driver may not report is recorded as 0 rather than failing the probe. */
static int attr_or_zero(enum cudaDeviceAttr a, int dev) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    v = 0;
  }
  return v;
}

double dkb_device_dram_bytes_per_s(int ordinal) {
  return 1e3 * attr_or_zero(cudaDevAttrMemoryClockRate, ordinal) * 2.0 * attr_or_zero(cudaDevAttrGlobalMemoryBusWidth, ordinal) / 8.0;
}

int dkb_device_probe(int ordinal, struct dkb_device_info *out, struct dkb_err *err) {
  int rc = -1;
  struct cudaDeviceProp p;
  memset(out, 0, sizeof *out);
  out->device_count = -1;
  /* Both work without a driver: the driver version is then 0. */
  DKB_CUDA_CHECK(err, cudaDriverGetVersion(&out->driver_version));
  DKB_CUDA_CHECK(err, cudaRuntimeGetVersion(&out->runtime_version));
  if (dkb_device_require(ordinal, err)) goto cleanup;
  DKB_CUDA_CHECK(err, cudaGetDeviceCount(&out->device_count));
  DKB_CUDA_CHECK(err, cudaGetDeviceProperties(&p, ordinal));
  struct dkb_device *d = &out->dev;
  d->ordinal = ordinal;
  snprintf(d->name, sizeof d->name, "%s", p.name);
  uuid_text((const unsigned char *)p.uuid.bytes, d->uuid);
  d->cc_major = p.major;
  d->cc_minor = p.minor;
  d->sm_count = p.multiProcessorCount;
  d->l2_bytes = p.l2CacheSize;
  d->global_mem_bytes = (long long)p.totalGlobalMem;
  d->sm_clock_khz = attr_or_zero(cudaDevAttrClockRate, ordinal);
  d->mem_clock_khz = attr_or_zero(cudaDevAttrMemoryClockRate, ordinal);
  d->mem_bus_width_bits = attr_or_zero(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  DKB_CUDA_CHECK(err, cudaDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof d->pci_bus_id, ordinal));
  out->available = 1;
  rc = 0;
cleanup:
  if (rc) {
    if (out->device_count < 0) {
      int n = 0; /* the count may be fine even when a later query failed */
      out->device_count = cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
      (void)cudaGetLastError();
    }
    dkb_err_format(err, out->reason, sizeof out->reason);
  }
  return rc;
}

json_t *dkb_device_json(const struct dkb_device_info *info) {
  char drv[16], rt[16];
  dkb_device_version_text(info->driver_version, drv);
  dkb_device_version_text(info->runtime_version, rt);
  json_t *j = json_pack("{s:s, s:i, s:s, s:i, s:s, s:i}", "status", info->available ? "available" : "unavailable",
                        "driver_version", info->driver_version, "driver_version_text", drv, "runtime_version",
                        info->runtime_version, "runtime_version_text", rt, "device_count", info->device_count);
  if (!info->available) {
    json_object_set_new(j, "reason", json_string(info->reason));
    return j;
  }
  const struct dkb_device *d = &info->dev;
  char cc[16], arch[16];
  snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
  snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
  json_t *dev = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:i, s:i, s:i, s:s}", "ordinal", d->ordinal, "name",
                          d->name, "uuid", d->uuid, "compute_capability", cc, "architecture", arch, "sm_count",
                          d->sm_count, "l2_bytes", (json_int_t)d->l2_bytes, "global_memory_bytes",
                          (json_int_t)d->global_mem_bytes, "sm_clock_khz", d->sm_clock_khz, "memory_clock_khz",
                          d->mem_clock_khz, "memory_bus_width_bits", d->mem_bus_width_bits, "pci_bus_id",
                          d->pci_bus_id);
  json_object_set_new(j, "device", dev);
  return j;
}
