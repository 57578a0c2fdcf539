/* test_measure.c - the measurement building blocks: counters, NVML (through a fake libnvidia-ml), the
 * timing pass's stopping rule and summary. On a machine without a driver they must fail with the
 * runtime's own reason; the gpu_* tests time and count a real kernel, check the cold pass's L2 flush and
 * sample NVML, and skip with the visible reason where there is no GPU. */
#include "tests/capture_util.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "lib/cjson.h"
#include "harness/counters.h"
#include "harness/device.h"
#include "harness/nvml.h"
#include "harness/timing.h"
#include "kernels/kernels.h"

/* --- counters --------------------------------------------------------------------------------- */

/* A long user-range name crashed the NVIDIA counter decoder on the H200: it is refused before any CUDA
 * or CUPTI call, with or without a driver. */
static void counters_refuse_long_range_names_before_touching_cupti(void **s) {
  (void)s;
  struct dkb_counters c;
  struct dkb_err err;
  char name[DKB_COUNTERS_RANGE_MAX + 2];
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = 0;
  assert_int_equal(dkb_counters_collect(0, name, NULL, NULL, NULL, NULL, NULL, &c, &err), -1);
  assert_non_null(strstr(err.msg, "counters range name must have 1..32 characters, got 33"));
  assert_string_equal(c.reason, err.msg);
  assert_int_equal(c.available, 0);
  assert_string_equal(c.v[0].name, "dram__bytes_read.sum");
  assert_int_equal(dkb_counters_collect(0, "", NULL, NULL, NULL, NULL, NULL, &c, &err), -1);
  assert_non_null(strstr(err.msg, "got 0"));
}

static void counters_without_driver_are_unavailable_with_definitions(void **s) {
  (void)s;
  SKIP_WITH_DRIVER();
  struct dkb_counters c;
  struct dkb_err err;
  assert_int_equal(dkb_counters_collect(0, "dkb/call/test", NULL, NULL, NULL, NULL, NULL, &c, &err), -1);
  assert_reason(err.msg, NO_DRIVER, "harness/device.c");
  assert_string_equal(c.reason, err.msg);
  assert_int_equal(c.available, 0);
  assert_string_equal(c.v[0].name, "dram__bytes_read.sum");
  assert_string_equal(c.v[1].name, "dram__bytes_write.sum");
  assert_string_equal(c.v[2].name, "gpu__time_duration.sum");
  assert_string_equal(c.v[0].unit, "byte");
  assert_string_equal(c.v[2].unit, "nsecond");
  json_t *j = dkb_counters_json(&c);
  assert_string_equal(json_string_value(json_object_get(j, "status")), "unavailable");
  assert_null(json_object_get(json_array_get(json_object_get(j, "metrics"), 0), "value"));
  assert_capture_schema("counters", j);
}

/* --- NVML ------------------------------------------------------------------------------------- */

static const char FAKE_NVML[] = "build/tests/fake-nvml/libnvidia-ml.so.1";

static void nvml_absent_reason_is_the_loader_message(void **s) {
  (void)s;
  struct dkb_nvml n;
  struct dkb_err err;
  if (dkb_nvml_open(&n, &err) == 0) {
    dkb_nvml_close(&n);
    print_message("[  SKIP    ] libnvidia-ml.so.1 is installed: the absent-library reason is not exercised here\n");
    skip();
  }
  assert_string_equal(err.msg, "dlopen libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file: No such "
                               "file or directory");
  assert_int_equal(err.code, DKB_ENV);
  assert_null(n.lib);
}

static void nvml_sample_maps_fields_and_clock_event_reasons(void **s) {
  (void)s;
  struct dkb_nvml n;
  struct dkb_nvml_sample smp;
  struct dkb_err err;
  if (dkb_nvml_open_path(&n, FAKE_NVML, &err)) fail_msg("%s", err.msg);
  assert_string_equal(n.driver_version, "580.159.04");
  if (dkb_nvml_sample(&n, "0000:19:00.0", &smp, &err)) fail_msg("%s", err.msg);
  assert_int_equal(smp.sm_clock_mhz, 1980);
  assert_int_equal(smp.mem_clock_mhz, 3201);
  assert_int_equal(smp.temperature_c, 41);
  assert_int_equal(smp.power_mw, 123456);
  assert_int_equal(smp.event_reasons, 0x24);
  assert_false(smp.have & DKB_NVML_ENERGY);
  json_t *j = dkb_nvml_sample_json(&smp);
  char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  assert_string_equal(text,
                      "{\"clocks_event_reasons\":{\"bits\":\"0x24\",\"names\":[\"sw_power_cap\",\"sw_thermal_slowdown\"]},"
                      "\"graphics_clock_mhz\":1980,\"memory_clock_mhz\":3201,\"not_reported\":{\"energy_mj\":\"Not "
                      "Supported\"},\"power_mw\":123456,\"pstate\":0,\"sm_clock_mhz\":1980,\"temperature_c\":41}");
  free(text);
  assert_capture_schema("nvml_sample", j);
  dkb_nvml_close(&n);
  assert_null(n.lib);
}

static void nvml_unknown_bus_id_is_nvml_not_found(void **s) {
  (void)s;
  struct dkb_nvml n;
  struct dkb_nvml_sample smp;
  struct dkb_err err;
  if (dkb_nvml_open_path(&n, FAKE_NVML, &err)) fail_msg("%s", err.msg);
  assert_int_equal(dkb_nvml_sample(&n, "0000:99:00.0", &smp, &err), -1);
  assert_reason(err.msg,
                "nvmlDeviceGetHandleByPciBusId_v2: Not Found (NVML_ERROR_NOT_FOUND; "
                "nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, &dev)",
                "harness/nvml.c");
  dkb_nvml_close(&n);
}

static void nvml_reason_names_cover_known_and_unknown_bits(void **s) {
  (void)s;
  const char *names[8];
  assert_int_equal(dkb_nvml_reason_names(0x1 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200, names, 8), 6);
  assert_string_equal(names[0], "gpu_idle");
  assert_string_equal(names[1], "hw_slowdown");
  assert_string_equal(names[2], "hw_thermal_slowdown");
  assert_string_equal(names[3], "hw_power_brake_slowdown");
  assert_string_equal(names[4], "display_clock_setting");
  assert_string_equal(names[5], "unknown_0x200");
  assert_int_equal(dkb_nvml_reason_names(0, names, 8), 0);
}

/* --- timing ----------------------------------------------------------------------------------- */

static int noop_launch(void *arg, void *stream) {
  (void)arg, (void)stream;
  return 0;
}

static void timing_without_driver_gives_runtime_reason(void **s) {
  (void)s;
  SKIP_WITH_DRIVER();
  struct dkb_timing_opts o;
  struct dkb_timing t;
  struct dkb_err err;
  dkb_timing_opts_default(&o);
  assert_int_equal(dkb_timing_run(0, &o, noop_launch, NULL, NULL, &t, &err), -1);
  assert_reason(err.msg, NO_DRIVER, "harness/device.c");
  assert_int_equal(t.n, 0);
}

static void timing_options_keep_the_20_sample_floor(void **s) {
  (void)s;
  struct dkb_timing_opts o;
  struct dkb_err err;
  dkb_timing_opts_default(&o);
  assert_int_equal(dkb_timing_opts_check(&o, &err), 0);
  assert_int_equal(o.min_samples, 20);
  assert_near(o.max_noise, 0.005, 0);
  o.min_samples = 5;
  assert_int_equal(dkb_timing_opts_check(&o, &err), -1);
  assert_string_equal(err.msg, "--min-samples must be >= 20 (got 5)");
  assert_int_equal(err.code, DKB_USAGE);
  dkb_timing_opts_default(&o);
  o.max_time_s = 0;
  assert_int_equal(dkb_timing_opts_check(&o, &err), -1);
  assert_string_equal(err.msg, "--max-time must be > 0 seconds (got 0)");
  struct dkb_timing t;
  assert_int_equal(dkb_timing_run(0, &o, noop_launch, NULL, NULL, &t, &err), -1); /* checked before the device */
  assert_string_equal(err.msg, "--max-time must be > 0 seconds (got 0)");
}

/* Feeds samples[i % n] with wall time elapsed_step * (i + 1) until the rule stops. */
static size_t run_rule(const struct dkb_timing_opts *o, const double *samples, size_t n, double elapsed_step,
                       enum dkb_timing_stop *why) {
  struct dkb_stop_rule r;
  dkb_stop_rule_init(&r, o);
  size_t i = 0;
  *why = DKB_STOP_NONE;
  while (*why == DKB_STOP_NONE && i < 1000000) {
    *why = dkb_stop_rule_add(&r, samples[i % n], elapsed_step * (double)(i + 1));
    i++;
  }
  dkb_stop_rule_release(&r);
  return i;
}

/* Expected stop points come from an independent Python statement of nvbench's measure_cold +
 * stdrel_criterion (sample stdev, noise from 5 samples on, 512-value noise ring). */
static void stop_rule_matches_nvbench_stdrel(void **s) {
  (void)s;
  struct dkb_timing_opts o;
  enum dkb_timing_stop why;
  const double constant[] = {100.0}, alternating[] = {100.0, 200.0};
  dkb_timing_opts_default(&o);
  o.min_time_s = 0;
  assert_int_equal(run_rule(&o, constant, 1, 0, &why), 20); /* noise 0 from the start: the floor decides */
  assert_string_equal(dkb_timing_stop_name(why), "noise_reached");
  o.min_time_s = 0.00505; /* 100 us samples: the sum passes 5050 us at the 51st */
  assert_int_equal(run_rule(&o, constant, 1, 0, &why), 51);
  assert_string_equal(dkb_timing_stop_name(why), "noise_reached");
  o.min_time_s = 0;
  assert_int_equal(run_rule(&o, alternating, 2, 0, &why), 80); /* noise settles near 1/3 */
  assert_string_equal(dkb_timing_stop_name(why), "noise_stable");
  o.max_samples = 30;
  assert_int_equal(run_rule(&o, alternating, 2, 0, &why), 30);
  assert_string_equal(dkb_timing_stop_name(why), "max_samples");
  o.max_samples = 100000;
  o.max_time_s = 0.5;
  assert_int_equal(run_rule(&o, alternating, 2, 0.01, &why), 51);
  assert_string_equal(dkb_timing_stop_name(why), "max_time");
  /* three slow samples first: the noise decays slowly and the ring of 512 values decides */
  double mix[4000];
  for (int i = 0; i < 4000; i++) mix[i] = i < 3 ? 150.0 : 100.0;
  o.max_time_s = 15;
  struct dkb_stop_rule r;
  dkb_stop_rule_init(&r, &o);
  size_t n = 0;
  why = DKB_STOP_NONE;
  while (why == DKB_STOP_NONE && n < 4000) why = dkb_stop_rule_add(&r, mix[n++], 0);
  assert_int_equal(n, 3248);
  assert_string_equal(dkb_timing_stop_name(why), "noise_stable");
  dkb_stop_rule_release(&r);
}

static const double SYNTH[20] = {12.5,  10.0,   11.0, 10.5,  30.0,  10.25, 10.75, 11.5, 9.75,  10.0,
                                 10.125, 10.375, 11.25, 10.625, 9.875, 10.5,  10.0,  12.0, 10.25, 10.75};

static void timing_summary_is_dkb_stats_of_the_raw_samples(void **s) {
  (void)s;
  struct dkb_timing t;
  memset(&t, 0, sizeof t);
  t.samples_us = malloc(sizeof SYNTH);
  memcpy(t.samples_us, SYNTH, sizeof SYNTH);
  t.n = 20;
  dkb_timing_summarize(&t);
  /* numpy: min, max, mean, median, percentile(95) (linear), std(ddof=1), std/mean */
  assert_int_equal(t.stats.count, 20);
  assert_near(t.stats.min, 9.75, 0);
  assert_near(t.stats.max, 30.0, 0);
  assert_near(t.stats.mean, 11.6, 1e-12);
  assert_near(t.stats.median, 10.5, 0);
  assert_near(t.stats.p95, 13.375000000000012, 1e-12);
  assert_near(t.stats.stdev, 4.3904052084900815, 1e-12);
  assert_near(t.stats.rel_stdev, 0.37848320762845533, 1e-12);
  assert_near(t.final_noise, t.stats.rel_stdev, 0);
  /* the rule's running noise agrees with the summary's */
  struct dkb_timing_opts o;
  struct dkb_stop_rule r;
  dkb_timing_opts_default(&o);
  dkb_stop_rule_init(&r, &o);
  for (int i = 0; i < 20; i++) dkb_stop_rule_add(&r, SYNTH[i], 0);
  assert_near(dkb_stop_rule_noise(&r), t.stats.rel_stdev, 1e-12);
  dkb_stop_rule_release(&r);
  dkb_timing_release(&t);
}

static void timing_json_keeps_every_sample_and_is_schema_valid(void **s) {
  (void)s;
  struct dkb_timing t;
  struct dkb_err err;
  memset(&t, 0, sizeof t);
  dkb_timing_opts_default(&t.opts);
  t.opts.cold = 1;
  t.flush_bytes = 2 * 62914560LL;
  t.samples_us = malloc(sizeof SYNTH);
  memcpy(t.samples_us, SYNTH, sizeof SYNTH);
  t.n = 20;
  t.stop = DKB_STOP_MAX_TIME;
  dkb_timing_summarize(&t);
  json_t *j = dkb_timing_json(&t, &err);
  assert_non_null(j);
  json_t *arr = json_object_get(j, "samples");
  assert_int_equal(json_array_size(arr), 20);
  for (int i = 0; i < 20; i++) assert_near(json_real_value(json_array_get(arr, i)), SYNTH[i], 0);
  assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "max_time");
  assert_json_int(json_object_get(j, "summary"), "count", 20);
  assert_capture_schema("timing", j);
  t.samples_us[3] = NAN;
  assert_null(dkb_timing_json(&t, &err));
  assert_string_equal(err.msg, "timing sample 3 is not finite");
  dkb_timing_release(&t);
}

/* --- on a GPU --------------------------------------------------------------------------------- */

static void gpu_timing_collects_positive_samples_hot_cold_and_graph(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct roofline_call c;
  struct dkb_timing_opts o;
  struct dkb_timing t;
  struct dkb_err err;
  int l2 = 0;
  roofline_setup(&c, 256u << 20, 1);
  assert_int_equal(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), cudaSuccess);
  for (int mode = 0; mode < 3; mode++) {
    dkb_timing_opts_default(&o);
    o.max_time_s = 3;
    o.min_time_s = 0.05;
    o.cold = mode == 1;
    o.graph = mode == 2;
    if (dkb_timing_run(0, &o, roofline_launch, &c, NULL, &t, &err)) fail_msg("mode %d: %s", mode, err.msg);
    assert_true(t.n >= 20);
    for (size_t i = 0; i < t.n; i++) assert_true(t.samples_us[i] > 0);
    assert_int_equal(t.stats.count, t.n);
    assert_true(t.stop != DKB_STOP_NONE);
    if (o.cold) assert_int_equal(t.flush_bytes, 2LL * l2);
    print_message("[  INFO    ] %s: %zu samples, median %.2f us (%.0f GB/s), noise %.3f%%, stop %s\n",
                  mode == 0 ? "hot" : mode == 1 ? "cold" : "graph", t.n, t.stats.median,
                  (double)(256u << 20) / (t.stats.median * 1e3), 100 * t.final_noise, dkb_timing_stop_name(t.stop));
    json_t *j = dkb_timing_json(&t, &err);
    assert_non_null(j);
    assert_capture_schema("timing", j);
    dkb_timing_release(&t);
  }
  roofline_teardown(&c);
}

static void gpu_counters_measure_the_bytes_the_kernel_reads(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct roofline_call c;
  struct dkb_counters k;
  struct dkb_err err;
  /* 1 GiB, far beyond the 60 MiB L2: the range profiler does not flush caches, and a 256 MiB read
   * measured 240528128 B (10 % from L2) on the H200. */
  size_t bytes = (size_t)1 << 30;
  roofline_setup(&c, bytes, 1);
  if (dkb_counters_collect(0, "dkb/counters/test", roofline_launch, &c, NULL, NULL, NULL, &k, &err)) {
    if (strstr(err.msg, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")) {
      print_message("[  SKIP    ] counters restricted on this machine: %s\n", err.msg);
      roofline_teardown(&c);
      skip();
    }
    fail_msg("%s", err.msg);
  }
  print_message("[  INFO    ] %s: dram read %.0f B, write %.0f B, gpu time %.0f ns, %d pass(es)\n", k.chip, k.v[0].value,
                k.v[1].value, k.v[2].value, k.passes);
  assert_true(k.v[0].value >= 0.9 * (double)bytes && k.v[0].value <= 1.1 * (double)bytes);
  assert_true(k.v[2].value > 0);
  assert_capture_schema("counters", dkb_counters_json(&k));
  roofline_teardown(&c);
}

static int memset_launch(void *arg, void *stream) {
  const struct dkb_l2_flush *f = arg;
  return (int)cudaMemsetAsync(f->buf, 0, (size_t)f->bytes, (cudaStream_t)stream);
}

/* The cold pass's flush reads, so the lines it leaves in L2 are clean: a 64 MiB read through L2 after it
 * writes back a fraction of what it does after a memset of the same buffer, whose dirty lines it evicts:
 * the DRAM traffic a memset flush puts inside each timed interval. Both counted by CUPTI around the read. */
static void gpu_l2_flush_leaves_no_dirty_lines_where_a_memset_does(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct dkb_l2_flush fl, work = {0};
  struct dkb_counters k;
  struct dkb_err err;
  const size_t bytes = (size_t)64 << 20;
  if (dkb_l2_flush_init(0, &fl, &err)) fail_msg("%s", err.msg);
  assert_int_equal(cudaMalloc(&work.buf, bytes), cudaSuccess);
  assert_int_equal(cudaMemset(work.buf, 0, bytes), cudaSuccess);
  work.bytes = (long long)bytes;
  /* Each way twice, as a timing pass repeats it; the second pass is judged (the first also finds what
   * the setup's memsets left). */
  double rd[4], wr[4];
  for (int m = 0; m < 4; m++) {
    if (dkb_counters_collect(0, "dkb/flush/test", dkb_l2_flush_launch, &work, NULL, m >= 2 ? memset_launch : dkb_l2_flush_launch,
                             &fl, &k, &err)) {
      if (strstr(err.msg, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")) {
        print_message("[  SKIP    ] counters restricted on this machine: %s\n", err.msg);
        dkb_l2_flush_release(&work);
        dkb_l2_flush_release(&fl);
        skip();
      }
      fail_msg("%s", err.msg);
    }
    rd[m] = k.v[0].value;
    wr[m] = k.v[1].value;
    print_message("[  INFO    ] %s flush of %lld B, then a %zu B read (pass %d): dram read %.0f B, write %.0f B\n",
                  m >= 2 ? "memset" : "read", fl.bytes, bytes, m % 2 + 1, rd[m], wr[m]);
  }
  /* H200 (two instances): after the read flush 2.9-3.2 MB written back, after the memset 20.8-21.0 MB.
   * Those 3 MB are not explained (the flush's lines are clean; decode calls, whose K/V loads are
   * evict-first, wrote back 0.0 MB after the same flush), so the bound is relative. Like it, warm decode
   * calls counted one to a range wrote back 0.9-3.8 MB, 50 to a range 0.08-0.29 MB each: once per
   * range, not per call. */
  assert_true(rd[1] >= 0.9 * (double)bytes); /* the flush evicted the buffer the read finds */
  assert_true(wr[3] > 0.25 * (double)bytes); /* the counters do see write-back: the checks below can fail */
  assert_true(wr[1] < 0.1 * (double)bytes);
  assert_true(wr[1] < 0.25 * wr[3]);
  dkb_l2_flush_release(&work);
  dkb_l2_flush_release(&fl);
}

static void gpu_nvml_samples_the_cuda_device(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct dkb_nvml n;
  struct dkb_nvml_sample smp;
  struct dkb_device_info info;
  struct dkb_err err;
  if (dkb_device_probe(0, &info, &err)) fail_msg("%s", err.msg);
  if (dkb_nvml_open(&n, &err)) {
    print_message("[  SKIP    ] NVML unavailable: %s\n", err.msg);
    skip();
  }
  if (dkb_nvml_sample(&n, info.dev.pci_bus_id, &smp, &err)) fail_msg("%s", err.msg);
  assert_true(smp.have & DKB_NVML_SM_CLOCK);
  assert_true(smp.sm_clock_mhz > 0);
  json_t *j = dkb_nvml_sample_json(&smp);
  char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  print_message("[  INFO    ] NVML %s: %s\n", n.driver_version, text);
  free(text);
  assert_capture_schema("nvml_sample", j);
  dkb_nvml_close(&n);
}

DKB_TEST_GROUP(measure, cmocka_unit_test(counters_refuse_long_range_names_before_touching_cupti),
               cmocka_unit_test(counters_without_driver_are_unavailable_with_definitions),
               cmocka_unit_test(nvml_absent_reason_is_the_loader_message),
               cmocka_unit_test(nvml_sample_maps_fields_and_clock_event_reasons),
               cmocka_unit_test(nvml_unknown_bus_id_is_nvml_not_found),
               cmocka_unit_test(nvml_reason_names_cover_known_and_unknown_bits),
               cmocka_unit_test(timing_without_driver_gives_runtime_reason),
               cmocka_unit_test(timing_options_keep_the_20_sample_floor),
               cmocka_unit_test(stop_rule_matches_nvbench_stdrel),
               cmocka_unit_test(timing_summary_is_dkb_stats_of_the_raw_samples),
               cmocka_unit_test(timing_json_keeps_every_sample_and_is_schema_valid),
               cmocka_unit_test(gpu_timing_collects_positive_samples_hot_cold_and_graph),
               cmocka_unit_test(gpu_counters_measure_the_bytes_the_kernel_reads),
               cmocka_unit_test(gpu_l2_flush_leaves_no_dirty_lines_where_a_memset_does),
               cmocka_unit_test(gpu_nvml_samples_the_cuda_device))
