/* test_capture_trace.c - the CUPTI trace `dkb run` captures (harness/trace.h): without a driver it degrades
 * with the runtime's reason and still routes NVTX; its join (external ids, the call's range, driver-API
 * launches, markers) on records made up by hand; its JSONL lines canonical and schema-valid. On a GPU,
 * a real kernel traced in the range; skipped with the visible reason elsewhere. */
#include "tests/capture_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_activity.h>

#include "harness/loadmap.h"
#include "harness/trace.h"
#include "kernels/kernels.h"
#include "lib/cjson.h"
#include "lib/sha256.h"

static void trace_capture_without_driver_degrades_and_routes_nvtx(void **s) {
  (void)s;
  SKIP_WITH_DRIVER();
  const char *before = getenv("NVTX_INJECTION64_PATH");
  int preset = before != NULL;
  struct dkb_trace t;
  struct dkb_err err;
  assert_int_equal(dkb_trace_capture(0, "dkb/call/test", 42, NULL, NULL, NULL, &t, &err), -1);
  assert_reason(err.msg, NO_DRIVER, "harness/device.c");
  assert_int_equal(err.code, DKB_ENV);
  assert_int_equal(t.cupti_version, CUPTI_API_VERSION); /* cuptiGetVersion needs no driver */
  assert_int_equal(t.nkernels, 0);
  const char *inj = getenv("NVTX_INJECTION64_PATH");
  assert_non_null(inj);
  assert_string_equal(t.nvtx_injection, inj);
  if (!preset) {
    assert_int_equal(t.nvtx_set_by_dkb, 1);
    /* it names the libcupti this process mapped */
    struct dkb_loadmap m;
    char real[PATH_MAX];
    if (dkb_loadmap_capture(&m, &err)) fail_msg("%s", err.msg);
    assert_non_null(realpath(inj, real));
    assert_string_equal(real, dkb_loadmap_find_role(&m, "cupti")->path);
    dkb_loadmap_release(&m);
  }
  dkb_trace_release(&t);
}

/* A made-up capture: a templated producer and an extern "C" combine launched in the range under
 * external id 42, one more combine launched after the range, one before it under another id. */
static void made_up_trace(struct dkb_trace *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->range_name, sizeof t->range_name, "dkb/call/abc");
  t->external_id = 42;
  t->cupti_version = 130001;
  snprintf(t->nvtx_injection, sizeof t->nvtx_injection, "/usr/local/cuda/lib64/libcupti.so.13");
  t->nvtx_set_by_dkb = 1;
  static const char *names[] = {"_Z24decode_split_kv_producerIfLi128EEvPKT_PS0_i", "decode_split_kv_combine",
                                "decode_split_kv_combine", "decode_split_kv_combine"};
  static const uint32_t corr[] = {5, 6, 9, 2};
  t->nkernels = 4;
  t->kernels = calloc(4, sizeof *t->kernels);
  for (int i = 0; i < 4; i++) {
    struct dkb_trace_kernel *k = &t->kernels[i];
    k->name = strdup(names[i]);
    k->correlation_id = corr[i];
    k->grid[0] = 132 * (i + 1), k->grid[1] = k->grid[2] = 1;
    k->block[0] = 128, k->block[1] = k->block[2] = 1;
    k->cluster[0] = k->cluster[1] = k->cluster[2] = 1;
    k->registers = 64;
    k->dynamic_smem = 1024;
    k->start_ns = 1000000000200ULL + 10 * (uint64_t)i;
    k->end_ns = k->start_ns + 5;
    k->stream_id = 7;
  }
  t->nmarkers = 1;
  t->markers = calloc(1, sizeof *t->markers);
  t->markers[0] = (struct dkb_trace_marker){strdup("dkb/call/abc"), 3, 1000000000100ULL, 1000000000300ULL};
  t->napis = 4;
  t->apis = calloc(4, sizeof *t->apis);
  const uint64_t api_start[] = {1000000000150ULL, 1000000000160ULL, 1000000000400ULL, 1000000000050ULL};
  for (int i = 0; i < 4; i++)
    t->apis[i] = (struct dkb_trace_api){211, "cudaLaunchKernel_v7000", corr[i], 77, 0, api_start[i], api_start[i] + 4, 0};
  t->nextcorr = 3;
  t->extcorr = calloc(3, sizeof *t->extcorr);
  t->extcorr[0] = (struct dkb_trace_extcorr){CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42, 5};
  t->extcorr[1] = (struct dkb_trace_extcorr){CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42, 6};
  t->extcorr[2] = (struct dkb_trace_extcorr){CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 41, 2};
}

static void trace_finalize_joins_external_ids_and_the_range(void **s) {
  (void)s;
  struct dkb_trace t;
  made_up_trace(&t);
  dkb_trace_finalize(&t);
  assert_non_null(t.range);
  assert_int_equal(t.nsymbols, 2);
  const struct dkb_trace_symbol *p = dkb_trace_find_symbol(&t, "_Z24decode_split_kv_producerIfLi128EEvPKT_PS0_i");
  assert_non_null(p);
  /* as `c++filt` prints it */
  assert_string_equal(p->demangled, "void decode_split_kv_producer<float, 128>(float const*, float*, int)");
  assert_int_equal(p->launches, 1);
  assert_int_equal(p->launches_in_range, 1);
  const struct dkb_trace_symbol *c = dkb_trace_find_symbol(&t, "decode_split_kv_combine");
  assert_string_equal(c->demangled, "decode_split_kv_combine"); /* extern "C": not mangled */
  assert_int_equal(c->launches, 3);
  assert_int_equal(c->launches_in_range, 1); /* corr 9 launched after the range, corr 2 before it */
  assert_int_equal(t.kernels[1].external_id, 42);
  assert_int_equal(t.kernels[2].has_external, 0);
  assert_int_equal(t.kernels[3].external_id, 41);
  assert_int_equal(t.kernels[3].in_range, 0);
  dkb_trace_finalize(&t); /* idempotent */
  assert_int_equal(dkb_trace_find_symbol(&t, "decode_split_kv_combine")->launches, 3);
  json_t *sum = dkb_trace_summary_json(&t);
  json_t *range = json_object_get(sum, "range");
  assert_true(json_is_true(json_object_get(range, "closed")));
  assert_json_int(range, "duration_ns", 200);
  assert_capture_schema("trace_summary", sum);
  dkb_trace_release(&t);
}

static void trace_without_closed_range_counts_nothing_in_range(void **s) {
  (void)s;
  struct dkb_trace t;
  made_up_trace(&t);
  t.markers[0].end_ns = 0; /* END never arrived */
  dkb_trace_finalize(&t);
  for (size_t i = 0; i < t.nsymbols; i++) assert_int_equal(t.symbols[i].launches_in_range, 0);
  snprintf(t.range_name, sizeof t.range_name, "dkb/call/other");
  dkb_trace_finalize(&t);
  assert_null(t.range);
  json_t *sum = dkb_trace_summary_json(&t);
  assert_true(json_is_false(json_object_get(json_object_get(sum, "range"), "found")));
  assert_capture_schema("trace_summary", sum);
  dkb_trace_release(&t);
}

/* CUPTI records built by hand, each passed through the buffer callback's path: a trace of the range
 * "dkb/call/x" under external id 9, its markers, the external id's correlation and a launch API record. */
static void begin_hand_trace(struct dkb_trace *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->range_name, sizeof t->range_name, "dkb/call/x");
  t->external_id = 9;
}

static void take_marker(struct dkb_trace *t, CUpti_ActivityFlag flags, uint32_t id, uint64_t ts, const char *name) {
  CUpti_ActivityMarker2 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags, m.id = id, m.timestamp = ts, m.name = name;
  dkb_trace_take_record(t, &m);
}

static void take_correlation(struct dkb_trace *t, uint64_t external_id, uint32_t correlation_id) {
  CUpti_ActivityExternalCorrelation x;
  memset(&x, 0, sizeof x);
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  x.externalId = external_id, x.correlationId = correlation_id;
  dkb_trace_take_record(t, &x);
}

static void take_api(struct dkb_trace *t, CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation_id) {
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.cbid = cbid;
  a.correlationId = correlation_id, a.start = 1040, a.end = 1045, a.threadId = 5;
  dkb_trace_take_record(t, &a);
}

/* A kernel record of correlation id `corr`, one thread in one CTA, run from 2000 to 2500 ns. */
static void hand_kernel(CUpti_ActivityKernel10 *k, char *name, uint32_t corr) {
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->correlationId = corr;
  k->gridX = k->gridY = k->gridZ = k->blockX = k->blockY = k->blockZ = 1;
  k->start = 2000, k->end = 2500;
}

/* A kernel launched through the driver API (cuDNN's runtime-compiled SDPA kernels) is the call's when its
 * driver record began in the range and carries the call's external correlation. */
static void trace_ties_driver_api_launches_to_the_call(void **s) {
  (void)s;
  struct dkb_trace t;
  begin_hand_trace(&t);
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 1000, "dkb/call/x");
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 1100, NULL);
  take_correlation(&t, 9, 21);
  take_api(&t, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 21);
  CUpti_ActivityKernel10 k;
  char name[] = "cudnn_generated_fort_native_sdpa_sm80_kernel0_0";
  hand_kernel(&k, name, 21);
  dkb_trace_take_record(&t, &k);
  dkb_trace_finalize(&t);
  assert_true(t.apis[0].driver);
  assert_string_equal(t.apis[0].name, "cuLaunchKernelEx");
  const struct dkb_trace_symbol *sym = dkb_trace_find_symbol(&t, name);
  assert_non_null(sym);
  assert_int_equal(sym->launches_in_range, 1);
  struct dkb_buf b;
  struct dkb_err err;
  dkb_buf_init(&b);
  assert_int_equal(dkb_trace_jsonl(&t, &b, &err), 0);
  assert_non_null(strstr(b.p, "\"record\":\"driver\""));
  assert_non_null(strstr(b.p, "\"driver\":1"));
  dkb_buf_release(&b);
  dkb_trace_release(&t);
}

/* Markers pair by id; an instantaneous one is not a range; an END of an unknown id closes the open push. */
static void trace_takes_cupti_records_and_pairs_markers(void **s) {
  (void)s;
  struct dkb_trace t;
  begin_hand_trace(&t);
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 1000, "dkb/call/x");
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 1010, "inner");
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 1020, NULL);
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 5, 1030, "instant");
  take_marker(&t, CUPTI_ACTIVITY_FLAG_MARKER_END, 99, 1100, NULL);
  take_correlation(&t, 9, 17);
  take_api(&t, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 17);
  CUpti_ActivityKernel10 k;
  char name[] = "_Z6kernelPf";
  hand_kernel(&k, name, 17);
  k.gridX = 2, k.gridY = 4, k.blockX = 64;
  k.clusterX = 1, k.clusterY = 2, k.clusterZ = 1;
  k.registersPerThread = 32, k.staticSharedMemory = 16, k.dynamicSharedMemory = 128;
  k.streamId = 13;
  dkb_trace_take_record(&t, &k);
  name[0] = 'X'; /* CUPTI frees the buffer after the callback: the name must have been copied */
  dkb_trace_finalize(&t);
  assert_int_equal(t.nmarkers, 2);
  assert_non_null(t.range);
  assert_int_equal(t.range->start_ns, 1000);
  assert_int_equal(t.range->end_ns, 1100);
  assert_int_equal(t.markers[1].end_ns, 1020);
  assert_string_equal(t.apis[0].name, "cudaLaunchKernel_v7000");
  const struct dkb_trace_symbol *sym = dkb_trace_find_symbol(&t, "_Z6kernelPf");
  assert_non_null(sym);
  assert_string_equal(sym->demangled, "kernel(float*)"); /* c++filt */
  assert_int_equal(sym->launches_in_range, 1);
  assert_int_equal(sym->first->grid[1], 4);
  assert_int_equal(sym->first->cluster[1], 2);
  json_t *sum = dkb_trace_summary_json(&t);
  json_t *cl = json_object_get(json_array_get(json_object_get(sum, "kernels"), 0), "cluster");
  assert_int_equal(json_integer_value(json_array_get(cl, 1)), 2);
  assert_capture_schema("trace_summary", sum); /* takes sum */
  assert_int_equal(sym->first->dynamic_smem, 128);
  assert_int_equal(sym->first->stream_id, 13);
  dkb_trace_release(&t);
}

static void trace_jsonl_lines_are_canonical_schema_valid_records(void **s) {
  (void)s;
  struct dkb_trace t;
  struct dkb_buf b;
  struct dkb_err err;
  made_up_trace(&t);
  dkb_trace_finalize(&t);
  dkb_buf_init(&b);
  assert_int_equal(dkb_trace_jsonl(&t, &b, &err), 0);
  const char *path = tmp_file("trace.jsonl", b.p);
  struct run_result r;
  /* every line canonical and valid; offsets from the earliest timestamp (the API record at ...050) */
  run_sh(&r,
         "/usr/bin/python3 -c '\n"
         "import json, sys\n"
         "from jsonschema import Draft202012Validator\n"
         "v = Draft202012Validator(json.load(open(\"schemas/trace-record.schema.json\")))\n"
         "lines = open(sys.argv[1]).read().split(\"\\n\")\n"
         "assert lines[-1] == \"\"\n"
         "recs = [json.loads(l) for l in lines[:-1]]\n"
         "for l, x in zip(lines, recs):\n"
         "    assert json.dumps(x, sort_keys=True, separators=(\",\", \":\")) == l, l\n"
         "    for e in v.iter_errors(x): print(l, e.message)\n"
         "print([x[\"record\"] for x in recs].count(\"kernel\"), len(recs), recs[0][\"origin_ns\"], recs[1][\"start_ns\"])\n"
         "' %s",
         path);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out, "4 13 1000000000050 150\n");
  run_result_release(&r);
  dkb_buf_release(&b);
  dkb_trace_release(&t);
}

static void gpu_trace_observes_kernel_launches_in_the_range(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct roofline_call c;
  struct dkb_trace t;
  struct dkb_err err;
  struct dkb_buf b;
  char sha[65];
  int sms = 0;
  roofline_setup(&c, 64u << 20, 2);
  assert_int_equal(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  assert_int_equal(roofline_launch(&c, NULL), 0); /* a launch outside the capture: not in the trace */
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  if (dkb_trace_capture(0, "dkb/call/test", 0x1234567, roofline_launch, &c, NULL, &t, &err))
    fail_msg("%s", err.msg);
  const struct dkb_trace_symbol *k = dkb_trace_find_symbol(&t, dkb_roofline_symbol);
  if (!k) fail_msg("no %s record (%zu kernels, %zu markers)", dkb_roofline_symbol, t.nkernels, t.nmarkers);
  assert_non_null(t.range);
  assert_true(t.range->end_ns > t.range->start_ns);
  assert_int_equal(k->launches, 2);
  assert_int_equal(k->launches_in_range, 2);
  assert_string_equal(k->demangled, dkb_roofline_symbol);
  assert_int_equal(k->first->grid[0], sms * 8);
  assert_int_equal(k->first->block[0], 256);
  assert_int_equal(k->first->external_id, 0x1234567);
  assert_int_equal(t.dropped, 0);
  dkb_buf_init(&b);
  assert_int_equal(dkb_trace_jsonl(&t, &b, &err), 0);
  assert_int_equal(dkb_sha256_buf(b.p, b.n, sha, &err), 0);
  print_message("[  INFO    ] trace: %zu kernel, %zu marker, %zu runtime, %zu external records, sha256 %s\n",
                t.nkernels, t.nmarkers, t.napis, t.nextcorr, sha);
  assert_capture_schema("trace_summary", dkb_trace_summary_json(&t));
  dkb_buf_release(&b);
  dkb_trace_release(&t);
  /* a second capture in the same process works the same */
  if (dkb_trace_capture(0, "dkb/call/again", 7, roofline_launch, &c, NULL, &t, &err)) fail_msg("%s", err.msg);
  assert_int_equal(dkb_trace_find_symbol(&t, dkb_roofline_symbol)->launches_in_range, 2);
  dkb_trace_release(&t);
  roofline_teardown(&c);
}

DKB_TEST_GROUP(capture_trace, cmocka_unit_test(trace_capture_without_driver_degrades_and_routes_nvtx),
               cmocka_unit_test(trace_finalize_joins_external_ids_and_the_range),
               cmocka_unit_test(trace_without_closed_range_counts_nothing_in_range),
               cmocka_unit_test(trace_takes_cupti_records_and_pairs_markers),
               cmocka_unit_test(trace_ties_driver_api_launches_to_the_call),
               cmocka_unit_test(trace_jsonl_lines_are_canonical_schema_valid_records),
               cmocka_unit_test(gpu_trace_observes_kernel_launches_in_the_range))
