/* test_preflight.c - `dkb preflight`: on this host (expectations read from the filesystem, exact text on a
 * CPU host without the NVIDIA driver), the JSON schema, --require-level, that no GPU library is loaded,
 * and the state mapping on fake host trees (ready, no_gpu, profiler_unavailable, libcuda in stubs or
 * off the loader path, ld.so.conf includes, a missing NVTX injection library). */
#include "tests/util.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/fsutil.h"
#include "harness/preflight.h"

static json_t *preflight_json(void) {
  struct run_result r;
  run_sh(&r, "build/dkb preflight --json");
  assert_int_equal(r.rc, 0);
  json_error_t je;
  json_t *doc = json_loads(r.out, 0, &je);
  if (!doc) fail_msg("preflight --json: %s\n%s", je.text, r.out);
  run_result_release(&r);
  return doc;
}

static int has_reason(const json_t *doc, const char *id, int blocking) {
  const json_t *rs = json_object_get(doc, "reasons");
  for (size_t i = 0; i < json_array_size(rs); i++) {
    const json_t *r = json_array_get(rs, i);
    if (!strcmp(json_string_value(json_object_get(r, "id")), id)) return json_is_true(json_object_get(r, "blocking")) == blocking;
  }
  return 0;
}

/* What preflight reports agrees with the files it claims to read. */
static void preflight_agrees_with_this_host(void **s) {
  (void)s;
  json_t *d = preflight_json();
  int driver = access("/proc/driver/nvidia/version", R_OK) == 0;
  const json_t *drv = json_object_get(d, "driver");
  assert_int_equal(json_is_true(json_object_get(drv, "present")), driver);
  glob_t g;
  size_t nodes = glob("/dev/nvidia*", 0, NULL, &g) == 0 ? g.gl_pathc : 0;
  if (nodes) globfree(&g);
  assert_int_equal(json_array_size(json_object_get(d, "device_nodes")), nodes);
  const char *t = json_string_value(json_object_get(d, "terminal"));
  if (!driver) {
    assert_string_equal(t, "cuda_runtime_unavailable");
    assert_json_int(d, "max_level", 2);
    assert_true(has_reason(d, "nvidia_driver_not_loaded", 1));
  }
  json_decref(d);
}

/* This CPU machine: no NVIDIA driver, no libcuda.so.1 (only the toolkit's stub, which never counts). */
static void preflight_on_a_cpu_host_stops_at_level_2(void **s) {
  (void)s;
  if (access("/proc/driver/nvidia/version", F_OK) == 0) {
    print_message("[  SKIP    ] this host has an NVIDIA driver\n");
    skip();
  }
  json_t *d = preflight_json();
  assert_true(json_is_false(json_object_get(json_object_get(d, "driver"), "present")));
  assert_true(json_is_null(json_object_get(json_object_get(d, "driver"), "version")));
  assert_int_equal(json_array_size(json_object_get(d, "gpus")), 0);
  assert_true(has_reason(d, "libcuda_not_found", 1) || has_reason(d, "libcuda_off_loader_path", 1));
  json_decref(d);
  struct run_result r;
  run_sh(&r, "build/dkb preflight");
  assert_int_equal(r.rc, 0);
  assert_int_equal(strncmp(r.out, "dkb preflight: cuda_runtime_unavailable, evidence up to level 2\n", 64), 0);
  assert_non_null(strstr(r.out, "\n  nvidia driver          not loaded (no /proc/driver/nvidia/version)\n"));
  assert_non_null(strstr(r.out, "\n  blocking nvidia_driver_not_loaded: /proc/driver/nvidia/version is absent: no NVIDIA kernel "
                                "driver, so the CUDA runtime cannot initialize\n"));
  run_result_release(&r);
  run_sh(&r, "build/dkb preflight --require-level 2 >/dev/null");
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  run_sh(&r, "build/dkb preflight --require-level 3 >/dev/null");
  assert_int_equal(r.rc, 4);
  assert_string_equal(r.err, "dkb: error: this host can produce evidence up to level 2 (cuda_runtime_unavailable), level 3 was required\n");
  run_result_release(&r);
}

static void preflight_json_is_schema_valid(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb preflight --json --require-level 1 > %s/pf.json && "
             "/usr/bin/python3 tests/schema_check.py schemas/preflight.schema.json %s/pf.json", tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  run_sh(&r, "build/dkb preflight --require-level x");
  assert_int_equal(r.rc, 2);
  assert_string_equal(r.err, "dkb: error: --require-level must be an integer from 0 to 6 (got 'x')\n"
                             "usage: dkb preflight [--json] [--require-level N]\n");
  run_result_release(&r);
}

/* The loader's own trace: preflight dlopens nothing (no CUDA, CUPTI or NVML library is loaded). */
static void preflight_loads_no_gpu_library(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "LD_DEBUG=files build/dkb preflight --json 2>&1 >/dev/null | grep -E 'dynamically loaded|libcuda\\.so|libnvidia-ml' || true");
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "");
  run_result_release(&r);
}

/* ---- fake host trees ---------------------------------------------------------------------------- */

static void put(const char *root, const char *path, const char *text, int mode) {
  char full[1024], dir[1024];
  struct dkb_err err;
  snprintf(full, sizeof full, "%s%s", root, path);
  snprintf(dir, sizeof dir, "%s", full);
  *strrchr(dir, '/') = '\0';
  if (dkb_mkdirs(dir, &err)) fail_msg("%s", err.msg);
  FILE *f = fopen(full, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  chmod(full, (mode_t)mode);
}

static const char *fake_root(const char *name) {
  static char root[512];
  snprintf(root, sizeof root, "%s/host-%s", tmp_dir(), name);
  return root;
}

/* An H200-like host: driver, one GPU, device nodes, libcuda on the default path, NVML through
 * LD_LIBRARY_PATH, CUPTI in the toolkit, nvidia-smi on PATH, counters restricted to root. */
static const char *gpu_host(const char *name, int gpu, int cupti) {
  const char *root = fake_root(name);
  put(root, "/proc/driver/nvidia/version",
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 30 2026\n"
      "GCC version:  gcc version 13.3.0\n", 0644);
  put(root, "/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n", 0644);
  put(root, "/dev/nvidiactl", "", 0644);
  if (gpu) {
    put(root, "/proc/driver/nvidia/gpus/0000:18:00.0/information", "Model: \t\t NVIDIA H200\nIRQ:   \t\t 34\n", 0644);
    put(root, "/dev/nvidia0", "", 0644);
  }
  put(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "", 0644);
  put(root, "/usr/local/cuda-13.0/lib64/stubs/libcuda.so.1", "", 0644);
  put(root, "/usr/local/nvidia/lib64/libnvidia-ml.so.1", "", 0644);
  if (cupti) put(root, "/usr/local/cuda-13.0/lib64/libcupti.so.13", "", 0644);
  put(root, "/usr/bin/nvidia-smi", "#!/bin/sh\n", 0755);
  return root;
}

static void inspect(const char *root, const char *ld_path, const char *nvtx, struct preflight *p) {
  struct preflight_opts o = {root, ld_path, "/usr/bin:/bin", nvtx, 0, 0, 1000};
  struct dkb_err err;
  assert_int_equal(preflight_inspect(&o, p, &err), 0);
  json_t *doc = preflight_to_json(p);
  assert_non_null(doc); /* every field packs */
  json_decref(doc);
}

static int reason(const struct preflight *p, const char *id) {
  for (size_t i = 0; i < p->nreasons; i++)
    if (!strcmp(p->reasons[i].id, id)) return p->reasons[i].blocking ? 2 : 1;
  return 0;
}

static void fake_gpu_host_is_ready(void **s) {
  (void)s;
  struct preflight p;
  inspect(gpu_host("ready", 1, 1), "/usr/local/nvidia/lib64", NULL, &p);
  assert_string_equal(p.terminal, "ready");
  assert_int_equal(p.max_level, 6);
  assert_string_equal(p.driver_version, "580.159.04");
  assert_int_equal(p.ngpus, 1);
  assert_string_equal(p.gpus[0].bus_id, "0000:18:00.0");
  assert_string_equal(p.gpus[0].model, "NVIDIA H200");
  assert_int_equal(p.ndev, 2);
  assert_string_equal(p.dev_nodes[0], "/dev/nvidia0");
  assert_string_equal(p.libcuda.path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  assert_string_equal(p.libcuda.where, "default");
  assert_string_equal(p.libnvml.where, "LD_LIBRARY_PATH");
  assert_string_equal(p.libcupti.path, "/usr/local/cuda-13.0/lib64/libcupti.so.13");
  assert_string_equal(p.libcupti.where, "cuda_toolkit");
  assert_int_equal(p.rm_profiling_admin_only, 1);
  assert_int_equal(reason(&p, "counters_restricted"), 1);
  assert_true(p.nvidia_smi);
  assert_int_equal(reason(&p, "nvidia_smi_missing"), 0);
}

static void fake_host_without_gpu_is_no_gpu(void **s) {
  (void)s;
  struct preflight p;
  inspect(gpu_host("nogpu", 0, 1), "/usr/local/nvidia/lib64", NULL, &p);
  assert_string_equal(p.terminal, "no_gpu");
  assert_int_equal(p.max_level, 2);
  assert_int_equal(reason(&p, "no_gpu_device"), 2);
}

static void fake_host_without_cupti_stops_at_level_4(void **s) {
  (void)s;
  struct preflight p;
  inspect(gpu_host("nocupti", 1, 0), "/usr/local/nvidia/lib64", NULL, &p);
  assert_string_equal(p.terminal, "profiler_unavailable");
  assert_int_equal(p.max_level, 4);
  assert_int_equal(reason(&p, "libcupti_not_found"), 2);
  inspect(gpu_host("nvtx", 1, 1), "/usr/local/nvidia/lib64", "/opt/nsight/libToolsInjection64.so", &p);
  assert_string_equal(p.terminal, "profiler_unavailable");
  assert_int_equal(reason(&p, "nvtx_injection_missing"), 2);
}

/* The toolkit's stub libcuda never counts; a real one off the loader path is reported as such. */
static void libcuda_stub_or_off_path_is_no_cuda(void **s) {
  (void)s;
  const char *root = fake_root("stub");
  put(root, "/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu\n", 0644);
  put(root, "/dev/nvidia0", "", 0644);
  put(root, "/usr/local/cuda-13.0/lib64/stubs/libcuda.so.1", "", 0644);
  struct preflight p;
  inspect(root, "/usr/local/cuda-13.0/lib64/stubs", NULL, &p);
  assert_string_equal(p.terminal, "cuda_runtime_unavailable");
  assert_int_equal(p.max_level, 2);
  assert_false(p.libcuda.found);
  assert_int_equal(reason(&p, "libcuda_not_found"), 2);
  put(root, "/usr/local/nvidia/lib64/libcuda.so.1", "", 0644);
  inspect(root, NULL, NULL, &p);
  assert_string_equal(p.terminal, "cuda_runtime_unavailable");
  assert_int_equal(reason(&p, "libcuda_off_loader_path"), 2);
  assert_string_equal(p.libcuda.where, "nvidia");
  /* listed in /etc/ld.so.conf.d, the same folder is on the loader path */
  put(root, "/etc/ld.so.conf", "# comment\ninclude /etc/ld.so.conf.d/*.conf\n", 0644);
  put(root, "/etc/ld.so.conf.d/nvidia.conf", "/usr/local/nvidia/lib64\n", 0644);
  inspect(root, NULL, NULL, &p);
  assert_string_equal(p.libcuda.where, "ld.so.conf");
  assert_true(p.libcuda.on_loader_path);
  assert_int_equal(reason(&p, "libcuda_off_loader_path"), 0);
}

DKB_TEST_GROUP(preflight, cmocka_unit_test(preflight_agrees_with_this_host),
               cmocka_unit_test(preflight_on_a_cpu_host_stops_at_level_2), cmocka_unit_test(preflight_json_is_schema_valid),
               cmocka_unit_test(preflight_loads_no_gpu_library), cmocka_unit_test(fake_gpu_host_is_ready),
               cmocka_unit_test(fake_host_without_gpu_is_no_gpu), cmocka_unit_test(fake_host_without_cupti_stops_at_level_4),
               cmocka_unit_test(libcuda_stub_or_off_path_is_no_cuda))
