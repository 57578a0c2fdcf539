/* preflight.h - what evidence can this host produce? (article 0x0BC "Preflight has a valid terminal state")
 * Inspects the host WITHOUT creating a CUDA context and without loading a GPU library: no CUDA call,
 * no dlopen of libcuda, libcupti or libnvidia-ml. It reads /proc/driver/nvidia, /dev, the loader's
 * search path (LD_LIBRARY_PATH, `ldconfig -p`, /etc/ld.so.conf, default and CUDA folders, stubs
 * excluded) and PATH, and maps what it finds to a terminal state and the highest evidence level:
 *   cuda_runtime_unavailable -> 2   no NVIDIA kernel driver or no libcuda.so.1 on the loader path
 *   no_gpu                   -> 2   driver present, no GPU listed or device node
 *   profiler_unavailable     -> 4   no libcupti, or NVTX_INJECTION64_PATH names a missing file
 *   ready                    -> 6
 * Levels 1-2 need only dkb's own build (source manifest and call chain); level 3 needs the CUDA driver,
 * runtime and a device coordinate; level 5 needs CUPTI activity and NVTX ranges; level 6 adds nothing a
 * host must supply beyond level 5 (counters and clocks are optional evidence). */
#ifndef DKB_PREFLIGHT_H
#define DKB_PREFLIGHT_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"

#define PREFLIGHT_PATH_MAX 1024

struct preflight_opts {
  const char *root;             /* filesystem root to inspect: "" for this host; tests pass a fake tree */
  const char *ld_library_path;  /* LD_LIBRARY_PATH value, NULL if unset */
  const char *path_env;         /* PATH value (for nvidia-smi), NULL if unset */
  const char *nvtx_injection;   /* NVTX_INJECTION64_PATH value, NULL if unset */
  int use_ldconfig;             /* read the loader cache with `ldconfig -p` (only meaningful for root "") */
  int use_linked;               /* report libcudart/libcupti already mapped into this process (root "") */
  int uid;                      /* effective uid, for profiling-permission hints */
};
/* Options describing this process and host (root "", its environment, ldconfig and linked libraries). */
void preflight_opts_host(struct preflight_opts *o);

struct preflight_lib {
  const char *soname;              /* searched name ("libcupti.so.*" matches any version) */
  int found;
  int on_loader_path;              /* found where the dynamic loader looks (or already mapped) */
  char path[PREFLIGHT_PATH_MAX];   /* as found (host path, without the inspected root) */
  char where[24];                  /* linked, LD_LIBRARY_PATH, ld.so.cache, ld.so.conf, default, nvidia, cuda_toolkit */
};

struct preflight_reason {
  char id[48];                     /* stable snake_case id */
  char detail[400];
  int blocking;                    /* 1 when it lowers the level this host can produce */
};

struct preflight_gpu {
  char bus_id[32];                 /* from /proc/driver/nvidia/gpus/<bus id> */
  char model[128];                 /* its information file's Model line */
};

struct preflight {
  char sysname[64], release[128], machine[64], hostname[256];
  int driver_present;
  char driver_version[64];         /* e.g. 580.159.04 */
  char driver_text[512];           /* first line of /proc/driver/nvidia/version */
  struct preflight_gpu gpus[16];
  size_t ngpus;
  char dev_nodes[32][64];          /* /dev/nvidia* entries */
  size_t ndev;
  int gpu_nodes;                   /* how many of them are /dev/nvidia<N> */
  struct preflight_lib libcuda, libcudart, libcupti, libnvml;
  int nvidia_smi;
  char nvidia_smi_path[PREFLIGHT_PATH_MAX];
  int nvtx_set, nvtx_exists;
  char nvtx[PREFLIGHT_PATH_MAX];
  int rm_profiling_admin_only;     /* -1 unknown */
  int perf_event_paranoid_known, perf_event_paranoid;
  int uid;
  const char *terminal;            /* ready, cuda_runtime_unavailable, no_gpu, profiler_unavailable */
  int max_level;                   /* highest evidence level this host can produce */
  struct preflight_reason reasons[16];
  size_t nreasons;
};

/* Inspects the host. Never fails for what it finds missing (that is data); -1 only on an internal
 * error (err set). */
int preflight_inspect(const struct preflight_opts *o, struct preflight *p, struct dkb_err *err);
/* The report's body (schemas/preflight.schema.json without "schema" and "meta"). */
json_t *preflight_to_json(const struct preflight *p);

#endif
