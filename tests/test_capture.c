/* test_capture.c - the runtime-capture building blocks: the CUDA/CUPTI checking macro, device probe,
 * and loader map. On a machine without a driver the GPU paths must fail with the runtime's own reason; the
 * gpu_* test probes the device, and skips with the visible reason where there is no GPU. The CUPTI trace:
 * test_capture_trace.c; counters, NVML and timing: test_measure.c. */
#include "tests/capture_util.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include "lib/cjson.h"
#include "harness/device.h"
#include "harness/gpucheck.h"
#include "harness/loadmap.h"
#include "lib/sha256.h"

static cudaError_t fails_with(cudaError_t e) { return e; }
static CUptiResult fails_cupti(CUptiResult e) { return e; }

static int macro_cuda(struct dkb_err *err, cudaError_t e) {
  int rc = -1;
  DKB_CUDA_CHECK(err, fails_with(e));
  rc = 0;
cleanup:
  return rc;
}

/* --- the checking macro ----------------------------------------------------------------------- */

static void check_macro_records_call_text_location_and_exit_code(void **s) {
  (void)s;
  struct dkb_err err;
  int line = __LINE__ + 2;
  int rc = -1;
  DKB_CUDA_CHECK(&err, fails_with(cudaErrorIllegalAddress));
  rc = 0;
cleanup:
  assert_int_equal(rc, -1);
  char want[512];
  snprintf(want, sizeof want,
           "fails_with: an illegal memory access was encountered (cudaErrorIllegalAddress; "
           "fails_with(cudaErrorIllegalAddress) at tests/test_capture.c:%d)",
           line);
  assert_string_equal(err.msg, want);
  assert_int_equal(err.code, DKB_FAIL); /* a kernel fault is the thing under test failing */
  assert_int_equal(macro_cuda(&err, cudaErrorMemoryAllocation), -1);
  assert_int_equal(err.code, DKB_ENV);
  assert_int_equal(macro_cuda(&err, cudaSuccess), 0);
}

static int set_bad_device(struct dkb_err *err) {
  int rc = -1;
  DKB_CUDA_CHECK(err, cudaSetDevice(9999));
  rc = 0;
cleanup:
  return rc;
}

/* With a driver, cudaSetDevice(9999) is a non-sticky cudaErrorInvalidDevice that the macro must clear.
 * Without one the runtime answers every call, cudaGetLastError included, with
 * cudaErrorInsufficientDriver: nothing can clear that, and the test says so. */
static void check_macro_clears_the_runtime_last_error(void **s) {
  (void)s;
  struct dkb_err err;
  int n = 0;
  int driver = cudaGetDeviceCount(&n) != cudaErrorInsufficientDriver;
  assert_int_equal(set_bad_device(&err), -1);
  if (driver) {
    assert_true(!strncmp(err.msg, "cudaSetDevice: invalid device ordinal (cudaErrorInvalidDevice; ", 63));
    assert_int_equal(cudaGetLastError(), cudaSuccess);
  } else {
    assert_reason(err.msg,
                  "cudaSetDevice: CUDA driver version is insufficient for CUDA runtime version "
                  "(cudaErrorInsufficientDriver; cudaSetDevice(9999)",
                  "tests/test_capture.c");
    assert_int_equal(cudaGetLastError(), cudaErrorInsufficientDriver);
    print_message("[  INFO    ] no driver: the runtime's error is permanent, clearing is checked on a GPU machine\n");
  }
}

static int cupti_check(struct dkb_err *err, CUptiResult r) {
  int rc = -1;
  DKB_CUPTI_CHECK(err, fails_cupti(r));
  rc = 0;
cleanup:
  return rc;
}

static void cupti_check_uses_cupti_name_and_message(void **s) {
  (void)s;
  struct dkb_err err;
  assert_int_equal(cupti_check(&err, CUPTI_ERROR_UNKNOWN), -1);
  /* CUPTI's message for UNKNOWN is its name, so it is said once */
  assert_reason(err.msg, "fails_cupti: CUPTI_ERROR_UNKNOWN (fails_cupti(r)", "tests/test_capture.c");
  assert_int_equal(cupti_check(&err, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), -1);
  static const char privileges[] =
      "fails_cupti: User doesn't have sufficient privileges which are required to start the profiling session.";
  assert_true(!strncmp(err.msg, privileges, strlen(privileges)));
  assert_non_null(strstr(err.msg, "https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES "
                                  "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; fails_cupti(r) at tests/test_capture.c:"));
  assert_int_equal(err.code, DKB_ENV);
}

/* --- device ----------------------------------------------------------------------------------- */

static void device_probe_without_driver_gives_runtime_reason(void **s) {
  (void)s;
  SKIP_WITH_DRIVER();
  struct dkb_device_info info;
  struct dkb_err err;
  assert_int_equal(dkb_device_probe(0, &info, &err), -1);
  assert_reason(err.msg, NO_DRIVER, "harness/device.c");
  assert_string_equal(info.reason, err.msg);
  assert_int_equal(err.code, DKB_ENV);
  assert_int_equal(info.available, 0);
  assert_int_equal(info.driver_version, 0); /* cudaDriverGetVersion without a driver */
  assert_int_equal(info.runtime_version, CUDART_VERSION);
  assert_int_equal(info.device_count, -1);
  json_t *j = dkb_device_json(&info);
  assert_string_equal(json_string_value(json_object_get(j, "status")), "unavailable");
  assert_string_equal(json_string_value(json_object_get(j, "reason")), err.msg);
  char rt[16];
  dkb_device_version_text(CUDART_VERSION, rt);
  assert_string_equal(json_string_value(json_object_get(j, "runtime_version_text")), rt);
  assert_capture_schema("device", j);
  assert_int_equal(dkb_device_require(0, &err), -1);
  assert_reason(err.msg, NO_DRIVER, "harness/device.c");
}

static void device_version_text_splits_major_minor(void **s) {
  (void)s;
  char b[16];
  dkb_device_version_text(13000, b);
  assert_string_equal(b, "13.0");
  dkb_device_version_text(12080, b);
  assert_string_equal(b, "12.8");
  dkb_device_version_text(0, b);
  assert_string_equal(b, "0.0");
}

/* --- loader map ------------------------------------------------------------------------------- */

static void loadmap_hashes_own_executable_like_sha256sum(void **s) {
  (void)s;
  struct dkb_loadmap m;
  struct dkb_err err;
  if (dkb_loadmap_capture(&m, &err)) fail_msg("%s", err.msg);
  char exe[PATH_MAX];
  assert_non_null(realpath("/proc/self/exe", exe));
  const struct dkb_loaded_object *self = dkb_loadmap_find_role(&m, "dkb");
  assert_non_null(self);
  assert_string_equal(self->path, exe);
  struct run_result r;
  run_sh(&r, "sha256sum '%s'", exe);
  assert_int_equal(r.rc, 0);
  assert_true(strlen(r.out) > 64);
  r.out[64] = '\0';
  assert_string_equal(self->sha256, r.out);
  run_result_release(&r);
  print_message("[  INFO    ] loader map: %zu objects, %lld bytes hashed in %.3f s\n", m.n, m.hashed_bytes,
                m.hash_seconds);
  dkb_loadmap_release(&m);
}

static void loadmap_names_cuda_libraries_by_role_with_real_paths(void **s) {
  (void)s;
  struct dkb_loadmap m;
  struct dkb_err err;
  if (dkb_loadmap_capture(&m, &err)) fail_msg("%s", err.msg);
  const char *need[] = {"cudart", "cupti", "crypto", "libc"};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (!dkb_loadmap_find_role(&m, need[i])) fail_msg("no object with role %s", need[i]);
  assert_non_null(strstr(dkb_loadmap_find_role(&m, "cudart")->path, "/libcudart.so"));
  assert_non_null(strstr(dkb_loadmap_find_role(&m, "cupti")->path, "/libcupti.so"));
  long long sum = 0;
  for (size_t i = 0; i < m.n; i++) {
    char real[PATH_MAX];
    assert_non_null(realpath(m.v[i].path, real));
    assert_string_equal(real, m.v[i].path); /* canonical: no symlink left */
    assert_true(dkb_is_sha256_hex(m.v[i].sha256));
    if (i) assert_true(strcmp(m.v[i - 1].path, m.v[i].path) < 0); /* sorted, each once */
    sum += m.v[i].size;
  }
  assert_true(sum == m.hashed_bytes);
  dkb_loadmap_release(&m);
}

/* A library deleted after it was mapped cannot be hashed: the capture fails naming it. */
static void loadmap_fails_on_a_mapped_object_whose_file_is_gone(void **s) {
  (void)s;
  char lib[512];
  struct run_result r;
  snprintf(lib, sizeof lib, "%s/deleted-lib.so", tmp_dir());
  run_sh(&r, "cp build/tests/fake-nvml/libnvidia-ml.so.1 %s", lib);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  assert_int_equal(unlink(lib), 0);
  struct dkb_loadmap m;
  struct dkb_err err;
  assert_int_equal(dkb_loadmap_capture(&m, &err), -1);
  assert_string_equal(err.file, lib);
  assert_string_equal(err.msg, "mapped object has no file to hash: No such file or directory");
  assert_int_equal(err.code, DKB_ENV);
  assert_int_equal(m.n, 0);
  dlclose(h);
  if (dkb_loadmap_capture(&m, &err)) fail_msg("after dlclose: %s", err.msg);
  dkb_loadmap_release(&m);
}

static void loadmap_role_comes_from_the_basename(void **s) {
  (void)s;
  struct { const char *path, *role; } cases[] = {
      {"/usr/local/cuda-13.0/lib/libcudart.so.13.0.88", "cudart"},
      {"/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "cuda"},
      {"/usr/local/cuda-13.0/lib/libcupti.so.2025.3.1", "cupti"},
      {"/usr/local/cuda-13.0/lib/libnvperf_host.so", "nvperf"},
      {"/usr/local/cuda-13.0/lib/libnvperf_target.so", "nvperf"},
      {"/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "nvml"},
      {"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "crypto"},
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc"},
      {"/usr/lib/x86_64-linux-gnu/libcap.so.2", "other"},
      {"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1", "other"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    assert_string_equal(dkb_loadmap_role(cases[i].path, 0), cases[i].role);
  assert_string_equal(dkb_loadmap_role("/work/build/dkb", 1), "dkb");
}

static void loadmap_artifact_is_canonical_schema_valid_and_named_by_its_hash(void **s) {
  (void)s;
  struct dkb_loadmap m;
  struct dkb_err err;
  struct dkb_buf b;
  char sha[65], path[512];
  if (dkb_loadmap_capture(&m, &err)) fail_msg("%s", err.msg);
  dkb_buf_init(&b);
  assert_int_equal(dkb_loadmap_artifact(&m, &b, sha, &err), 0);
  snprintf(path, sizeof path, "%s", tmp_file("loader-map.json", b.p));
  struct run_result r;
  /* independent: Python's canonical form of the same document, and its SHA-256 */
  run_sh(&r,
         "/usr/bin/python3 -c 'import json,hashlib,sys; t=open(sys.argv[1]).read(); "
         "c=json.dumps(json.loads(t), sort_keys=True, separators=(\",\",\":\")); "
         "print(c == t, hashlib.sha256(c.encode()).hexdigest())' %s && "
         "/usr/bin/python3 tests/schema_check.py schemas/loader-map.schema.json %s",
         path, path);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  char want[128];
  snprintf(want, sizeof want, "True %s\n", sha);
  assert_string_equal(r.out, want);
  run_result_release(&r);
  dkb_buf_release(&b);
  dkb_loadmap_release(&m);
}

/* --- on a GPU --------------------------------------------------------------------------------- */

static void gpu_device_probe_reports_the_device(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct dkb_device_info info;
  struct dkb_err err;
  if (dkb_device_probe(0, &info, &err)) fail_msg("%s", err.msg);
  assert_true(info.available && info.device_count >= 1);
  assert_true(info.driver_version >= info.runtime_version / 1000 * 1000);
  assert_true(info.dev.name[0] && info.dev.cc_major >= 7 && info.dev.sm_count > 0 && info.dev.l2_bytes > 0);
  print_message("[  INFO    ] %s sm_%d%d, %d SMs, L2 %lld B, %s, driver %d runtime %d\n", info.dev.name,
                info.dev.cc_major, info.dev.cc_minor, info.dev.sm_count, info.dev.l2_bytes, info.dev.pci_bus_id,
                info.driver_version, info.runtime_version);
  assert_capture_schema("device", dkb_device_json(&info));
  struct dkb_loadmap m; /* the driver is mapped once CUDA is initialized */
  if (dkb_loadmap_capture(&m, &err)) fail_msg("%s", err.msg);
  assert_non_null(dkb_loadmap_find_role(&m, "cuda"));
  print_message("[  INFO    ] loader map after CUDA init: %zu objects, %lld bytes hashed in %.3f s\n", m.n,
                m.hashed_bytes, m.hash_seconds);
  dkb_loadmap_release(&m);
}

DKB_TEST_GROUP(capture, cmocka_unit_test(check_macro_records_call_text_location_and_exit_code),
               cmocka_unit_test(check_macro_clears_the_runtime_last_error),
               cmocka_unit_test(cupti_check_uses_cupti_name_and_message),
               cmocka_unit_test(device_probe_without_driver_gives_runtime_reason),
               cmocka_unit_test(device_version_text_splits_major_minor),
               cmocka_unit_test(loadmap_hashes_own_executable_like_sha256sum),
               cmocka_unit_test(loadmap_names_cuda_libraries_by_role_with_real_paths),
               cmocka_unit_test(loadmap_fails_on_a_mapped_object_whose_file_is_gone),
               cmocka_unit_test(loadmap_role_comes_from_the_basename),
               cmocka_unit_test(loadmap_artifact_is_canonical_schema_valid_and_named_by_its_hash),
               cmocka_unit_test(gpu_device_probe_reports_the_device))
