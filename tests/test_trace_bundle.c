/* test_trace_bundle.c - what `dkb trace` makes of its records, without a GPU: the record reader and the
 * join on a hand-made record file of a GPU run (tests/data/trace/gpu-run.jsonl.in), the dumps a call range
 * declares checked into its bundle, the trace ladder's findings on mutated bundles, `dkb validate` on
 * trace bundles, the injection library's SHA-256 against libcrypto and its module records, and the
 * dist-info reader. */
#include "tests/util.h"
#include "tests/trace_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "evidence/trace_ladder.h"
#include "harness/pydist.h"
#include "harness/trace_bundle.h"
#include "harness/trace_records.h"
#include "lib/jread.h"
#include "lib/sha256.h"

void inject_sha256(const void *data, size_t n, char hex[65]); /* inject/inject_sha256.c, linked in */

/* ---- the hand-made record file of a GPU run ---- */

/* tests/data/trace/gpu-run.jsonl.in with build/dkb as the mapped object (its real identity), edited by
 * `edit` (a sed script, may be ""), into dir/records/. */
static void write_gpu_records(const char *dir, const char *edit) {
  char exe[4096];
  if (!realpath("build/dkb", exe)) fail_msg("build/dkb: not found");
  struct stat st;
  stat(exe, &st);
  struct run_result r;
  run_sh(&r, "mkdir -p '%s/records' '%s/calls' && sed -e 's|@EXE@|%s|g; s|@DEV@|%llu|; s|@INO@|%llu|; s|@SIZE@|%lld|; "
             "s|@MTIME@|%llu|' %s tests/data/trace/gpu-run.jsonl.in > '%s/records/records.4242.0.jsonl'",
         dir, dir, exe, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
         (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
         edit && *edit ? edit : "", dir);
  if (r.rc) fail_msg("writing records: %s", r.err);
  run_result_release(&r);
}

/* Reads dir/records and builds the bundles; the first one (the call range) is returned. */
static json_t *build_gpu_bundle(const char *dir, const char *dump, struct trace_bundle_set *set) {
  struct tr_proc *procs = NULL;
  size_t n = 0;
  struct dkb_err err;
  char rec[700];
  snprintf(rec, sizeof rec, "%s/records", dir);
  if (tr_read_dir(rec, &procs, &n, &err)) fail_msg("%s: %s", err.file, err.msg);
  assert_int_equal(n, 1);
  json_t *argv = json_pack("[s]", "prog"), *ex = json_pack("{s:s,s:i,s:n}", "kind", "exited", "code", 0, "signal");
  json_t *meta = json_pack("{s:s,s:s,s:s,s:b,s:[]}", "tool", "dkb", "version", "test", "commit", "0", "dirty", 0, "argv");
  const char *dumps[] = {dump};
  struct trace_run run = {dir, NULL, 0, dumps, dump ? 1 : 0, argv, 4242, ex, meta};
  if (trace_bundles_build(procs, n, &run, set, &err)) fail_msg("build: %s", err.msg);
  for (size_t i = 0; i < n; i++) tr_proc_release(&procs[i]);
  free(procs);
  json_decref(argv);
  json_decref(ex);
  json_decref(meta);
  assert_true(set->n >= 1);
  return set->docs[0];
}

static void write_bundles(const char *dir, const struct trace_bundle_set *set) {
  for (size_t i = 0; i < set->n; i++) {
    char p[900];
    snprintf(p, sizeof p, "%s/calls/%s", dir, set->names[i]);
    if (json_dump_file(set->docs[i], p, JSON_INDENT(1) | JSON_SORT_KEYS)) fail_msg("cannot write %s", p);
  }
}

static void trace_join_attributes_launches_by_correlation(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("gpu_join");
  write_gpu_records(d, "");
  struct trace_bundle_set set;
  json_t *b = build_gpu_bundle(d, NULL, &set);
  assert_int_equal(set.n, 1); /* "inner" and "worker" are no calls */
  const json_t *inst = json_object_get(json_object_get(b, "range"), "instances");
  assert_int_equal(json_array_size(inst), 2);
  const json_t *a = json_array_get(inst, 0), *c = json_array_get(inst, 1);
  /* instance 1: a driver launch nested in a runtime one (its kernel carries the driver's id), a kernel in
   * the call range itself, a memcpy, and a launch made while capturing a graph */
  assert_json_int(a, "kernels", 2);
  assert_json_int(a, "launch_calls", 4);
  assert_json_int(a, "captured_launches", 1);
  assert_json_int(a, "launches_without_record", 0);
  assert_json_int(a, "gpu_ns", 6000);
  assert_json_int(a, "memcpys", 1);
  assert_json_int(a, "memcpy_bytes", 4096);
  assert_json_int(a, "loader_map", 0);
  /* instance 2, another thread: one graph launch, two kernels replayed from it; the same loader map */
  assert_json_int(c, "thread_id", 11);
  assert_json_int(c, "kernels", 2);
  assert_json_int(c, "gpu_ns", 3000);
  assert_json_int(c, "loader_map", 0);
  const json_t *ks = json_object_get(b, "kernels");
  assert_int_equal(json_array_size(ks), 2); /* the worker's and the unattributed kernel are not here */
  const json_t *k0 = json_array_get(ks, 0), *k1 = json_array_get(ks, 1);
  assert_string_equal(json_string_value(json_object_get(k0, "demangled")), "flash_fwd_splitkv_kernel(float*, int)");
  assert_string_equal(json_string_value(json_object_get(k0, "role")), "split");
  assert_json_int(k1, "launches", 3);
  assert_json_int(k1, "graph_launches", 2);
  assert_string_equal(json_string_value(json_object_get(k1, "role")), "combine");
  assert_true(json_is_true(json_object_get(json_object_get(b, "split_combine"), "split")));
  assert_true(json_is_true(json_object_get(json_object_get(b, "split_combine"), "combine")));
  /* every finding but checked holds; timed is the median of 6000 and 3000 ns */
  assert_true(finding_holds(b, "loaded"));
  assert_true(finding_holds(b, "declared"));
  assert_true(finding_holds(b, "executed"));
  assert_false(finding_holds(b, "checked"));
  assert_true(finding_holds(b, "timed"));
  assert_near(json_number_value(json_object_get(json_object_get(json_object_get(b, "timed"), "summary"), "median")), 4500, 0);
  const json_t *obj = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(b, "loaded"), "maps"), 0), "objects"), 0);
  char sha[65];
  struct dkb_err err;
  dkb_sha256_file(json_string_value(json_object_get(obj, "path")), sha, &err);
  assert_string_equal(json_string_value(json_object_get(obj, "sha256")), sha);
  assert_string_equal(json_string_value(json_object_get(obj, "identity")), "unchanged");
  write_bundles(d, &set);
  char glob[700];
  snprintf(glob, sizeof glob, "'%s'/calls/*.json", d);
  trace_schema_ok("trace.schema.json", glob);
  char cmd[900];
  snprintf(cmd, sizeof cmd, "build/dkb validate %s", glob);
  trace_expect(cmd, 0, "trace bundle: loaded yes, declared yes, executed yes, checked no, timed yes\n", "");
  trace_bundle_set_release(&set);
}

/* Each edit of the records takes away one requirement; the finding says which. */
static void trace_incomplete_records_are_findings(void **s) {
  (void)s;
  static const struct { const char *edit, *finding, *reason; } CASES[] = {
      {"-e '/\"r\":\"end\"/d'", "executed", "executed_no_exit_path"},
      {"-e 's|\"lines\":32|\"lines\":33|'", "executed", "executed_records_lost"},
      {"-e 's|\"why\":\"exit\",\"code\":0,\"outcome\":\"done\"|\"why\":\"exit\",\"code\":0,\"outcome\":\"timed_out\"|'", "executed", "executed_not_flushed"},
      {"-e '/\"corr\":7,\"name\"/d' -e 's|\"lines\":32|\"lines\":31|'", "executed", "executed_launch_without_record"},
      {"-e 's|\"start\":1700000000000016000|\"start\":0|'", "executed", "executed_kernel_record_incomplete"},
      {"-e 's|\"r\":\"flush\",\"why\":\"range_end\",\"code\":0,\"outcome\":\"done\"|\"r\":\"dropped\",\"n\":2|'", "executed", "executed_records_dropped"},
      {"-e 's|\"symbols\":\\[\"_Z24flash_fwd_splitkv_kernelPfi\",|\"symbols\":[|'", "loaded", "loaded_kernel_module_unbound"},
      {"-e 's|\"mtime_ns\":[0-9]*|\"mtime_ns\":1|'", "loaded", "loaded_object_changed"},
      {"-e 's|\"code\":0,\"text\":\"CUPTI_SUCCESS\"}|\"code\":39,\"text\":\"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\"}|'", "executed", "executed_cupti_unavailable"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "gpu_edit%zu", i);
    const char *d = trace_fresh_dir(name);
    write_gpu_records(d, CASES[i].edit);
    struct trace_bundle_set set;
    json_t *b = build_gpu_bundle(d, NULL, &set);
    if (!finding_has_reason(b, CASES[i].finding, CASES[i].reason))
      fail_msg("edit %s: no %s in %s: %s", CASES[i].edit, CASES[i].reason, CASES[i].finding,
               json_dumps(json_object_get(b, "findings"), JSON_INDENT(1)));
    assert_false(finding_holds(b, CASES[i].finding));
    if (!strcmp(CASES[i].finding, "executed")) assert_false(finding_holds(b, "timed")); /* timed needs executed */
    trace_bundle_set_release(&set);
  }
}

static void trace_records_reader_names_file_line_and_pointer(void **s) {
  (void)s;
  static const struct { const char *text, *err; } CASES[] = {
      {"{\"r\":\"push\",\"id\":1,\"parent\":0,\"tid\":1,\"depth\":0,\"t\":1,\"name\":\"x\"}\n", ":1: /r: the first record must be start (got 'push')"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"bogus\"}\n", ":2: /r: unknown record kind 'bogus'"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"pop\",\"id\":5,\"tid\":1,\"t\":2}\n", ":2: /id: pops range 5, which was never pushed"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null,\"zz\":1}\n", ":1: /zz: unknown key"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"kernel\",\"corr\":1}\n", ":2: /: missing required key 'name'"},
      {"{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\nnot json\n", ":2: not a JSON record"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const char *path = tmp_file("records.9.0.jsonl", CASES[i].text);
    struct tr_proc p;
    struct dkb_err err;
    dkb_err_clear(&err);
    assert_int_equal(tr_proc_read(path, &p, &err), -1);
    assert_int_equal(err.code, DKB_INPUT);
    char msg[2048];
    dkb_err_format(&err, msg, sizeof msg);
    if (!strstr(msg, CASES[i].err)) fail_msg("case %zu: '%s' lacks '%s'", i, msg, CASES[i].err);
  }
  /* a last line cut off by a dying process is counted, not an error */
  const char *path = tmp_file("records.9.1.jsonl", "{\"r\":\"start\",\"v\":1,\"pid\":1,\"ppid\":1,\"how\":\"cuda\",\"time_ns\":1,\"exe\":null}\n{\"r\":\"pu");
  struct tr_proc p;
  struct dkb_err err;
  assert_int_equal(tr_proc_read(path, &p, &err), 0);
  assert_true(p.truncated);
  assert_int_equal(p.lines, 1);
  tr_proc_release(&p);
}

/* The dumps `dkb trace` searches, as the bundles of the hand-made run see them (its call range declares
 * fixtures/decode/default.json's call key): a folder of dumps is read in name order; each dump of the
 * declared key is checked into the bundle, so one within tolerance and one beyond it leave `checked`
 * failing on the second; a dump whose index cannot be read matches no call and is listed without a key. */
static void trace_checks_the_dumps_of_the_declared_call_key(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("gpu_dumps");
  write_gpu_records(d, "");
  char dumps[700];
  snprintf(dumps, sizeof dumps, "%s/dumps", d);
  struct run_result r;
  run_sh(&r, "set -e; build/dkb run fixtures/decode/default.json -o '%s/run' --dump '%s/a' --no-timing --quiet >/dev/null; "
             "/usr/bin/python3 tests/data/check/candidate.py '%s/a'", dumps, dumps, dumps);
  if (r.rc) fail_msg("making the dump: %s%s", r.out, r.err);
  run_result_release(&r);
  char one[800];
  snprintf(one, sizeof one, "%s/a", dumps);
  struct trace_bundle_set set;
  json_t *b = build_gpu_bundle(d, one, &set);
  const json_t *checked = json_object_get(json_object_get(b, "checked"), "dumps");
  assert_int_equal(json_array_size(checked), 1);
  assert_true(json_is_true(json_object_get(json_array_get(checked, 0), "passed")));
  assert_true(finding_holds(b, "checked"));
  assert_false(set.dump_failed);
  assert_false(set.dump_malformed);
  trace_bundle_set_release(&set);

  run_sh(&r, "set -e; cp -r '%s/a' '%s/b'; /usr/bin/python3 tests/data/check/candidate.py '%s/b' --perturb 777; "
             "cp -r '%s/a' '%s/c'; printf '{' > '%s/c/index.json'; rm -rf '%s/run'", dumps, dumps, dumps, dumps, dumps, dumps, dumps);
  if (r.rc) fail_msg("editing the dumps: %s%s", r.out, r.err);
  run_result_release(&r);
  b = build_gpu_bundle(d, dumps, &set);
  checked = json_object_get(json_object_get(b, "checked"), "dumps");
  assert_int_equal(json_array_size(checked), 2);
  assert_true(json_is_true(json_object_get(json_array_get(checked, 0), "passed")));
  assert_false(json_is_true(json_object_get(json_array_get(checked, 1), "passed")));
  assert_non_null(strstr(json_string_value(json_object_get(json_array_get(checked, 1), "dir")), "/dumps/b"));
  assert_false(finding_holds(b, "checked"));
  assert_true(finding_has_reason(b, "checked", "checked_failed"));
  assert_true(set.dump_failed);
  assert_true(set.dump_malformed);
  const json_t *listed = json_object_get(set.summary, "dumps");
  assert_int_equal(json_array_size(listed), 3);
  for (size_t i = 0; i < 2; i++)
    assert_string_equal(json_string_value(json_object_get(json_array_get(listed, i), "call_key_sha256")), TRACE_KEY_SHA);
  assert_true(json_is_null(json_object_get(json_array_get(listed, 2), "call_key_sha256")));
  assert_non_null(strstr(json_string_value(json_object_get(json_array_get(listed, 2), "dir")), "/dumps/c"));
  trace_bundle_set_release(&set);
}

/* ---- the trace ladder on mutated bundles ---- */

/* The split/combine rule on the kernel names dkb trace met on the H200 (PyTorch's flash and cuDNN SDPA,
 * FlashInfer, FlexAttention) and on names it must not take for either. */
static void trace_kernel_roles_follow_the_stated_rule(void **s) {
  (void)s;
  static const struct { const char *name; int role; } CASES[] = {
      {"void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", 2},
      {"void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", 1},
      {"void cudnn::fusion::lean_reduction_kernel<false, false, false>", 1},
      {"flashinfer::PersistentVariableLengthMergeStatesKernel", 1},
      {"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_64x64x128_4x1x1_kernel0_0", 0},
      {"triton_tem_fused_flex_attention_0", 0},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", 0},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    if (trace_kernel_role(CASES[i].name) != CASES[i].role)
      fail_msg("%s: role %d, want %d", CASES[i].name, trace_kernel_role(CASES[i].name), CASES[i].role);
  assert_non_null(strstr(TRACE_SPLIT_RULE, "lean_reduction"));
}

static void trace_ladder_recomputes_instead_of_trusting(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("gpu_ladder");
  write_gpu_records(d, "");
  struct trace_bundle_set set;
  json_t *good = build_gpu_bundle(d, NULL, &set);
  static const struct { const char *ptr, *key; const char *value_json, *finding, *reason; } CASES[] = {
      {"/declared", "call_key_sha256", "\"0000000000000000000000000000000000000000000000000000000000000000\"", "declared", "declared_digest_mismatch"},
      {"/declared/call_key", "B", "5", "declared", "declared_key_inconsistent"},
      {"/timed/summary", "median", "1.0", "timed", "timed_summary_mismatch"},
      {"/timed", "tracing", "false", "timed", "timed_not_labelled_tracing"},
      {"", "article_levels", "\"6\"", NULL, "bundle_article_level_claimed"},
      {"", "claims", "[\"checked\"]", NULL, "bundle_claim_unproven"},
      {"/kernels/0", "launches", "7", "executed", "executed_counts_inconsistent"},
      {"/kernels/0", "role", "null", NULL, "bundle_split_combine_mismatch"},
      {"/split_combine", "combine", "false", NULL, "bundle_split_combine_mismatch"},
      {"/split_combine", "rule", "\"by name\"", NULL, "bundle_split_combine_mismatch"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    json_t *doc = json_deep_copy(good);
    json_error_t je;
    json_object_set_new(jr_resolve(doc, CASES[i].ptr), CASES[i].key, json_loads(CASES[i].value_json, JSON_DECODE_ANY, &je));
    struct trace_grade g;
    trace_grade_init(&g);
    struct dkb_err err;
    assert_int_equal(trace_ladder_evaluate(doc, "mutant", NULL, &g, &err), 0);
    int found = 0;
    for (size_t k = 0; k < g.n; k++) found |= !strcmp(g.items[k].reason, CASES[i].reason);
    if (!found) fail_msg("mutation %s/%s: no %s", CASES[i].ptr, CASES[i].key, CASES[i].reason);
    if (CASES[i].finding) {
      int f = 0;
      while (strcmp(trace_finding_names[f], CASES[i].finding)) f++;
      assert_false(g.holds[f]);
    } else {
      assert_false(trace_grade_honest(&g));
    }
    trace_grade_release(&g);
    json_decref(doc);
  }
  /* structure errors are a malformed document */
  json_t *doc = json_deep_copy(good);
  json_object_set_new(json_object_get(doc, "range"), "instances", json_string("x"));
  struct trace_grade g;
  trace_grade_init(&g);
  struct dkb_err err;
  assert_int_equal(trace_ladder_evaluate(doc, "bad.json", NULL, &g, &err), -1);
  char msg[1200];
  dkb_err_format(&err, msg, sizeof msg);
  assert_string_equal(msg, "bad.json: /range/instances: must be an array (got string)");
  trace_grade_release(&g);
  json_decref(doc);
  /* dkb validate: a record file changed after the bundle was written; a claim edited in */
  write_bundles(d, &set);
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "build/dkb validate '%s'/calls/*.json", d);
  trace_expect(cmd, 0, NULL, "");
  snprintf(cmd, sizeof cmd, "echo >> '%s/records/records.4242.0.jsonl' && build/dkb validate '%s'/calls/*.json", d, d);
  trace_expect(cmd, 1, "bundle_records_mismatch", "");
  trace_bundle_set_release(&set);
}

/* ---- pieces ---- */

static void inject_sha256_equals_libcrypto(void **s) {
  (void)s;
  static const size_t N[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 1 << 20};
  unsigned char *buf = malloc(1 << 20);
  for (size_t i = 0; i < (1 << 20); i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  for (size_t i = 0; i < sizeof N / sizeof N[0]; i++) {
    char a[65], b[65];
    struct dkb_err err;
    inject_sha256(buf, N[i], a);
    dkb_sha256_buf(buf, N[i], b, &err);
    if (strcmp(a, b)) fail_msg("%zu bytes: %s, libcrypto %s", N[i], a, b);
  }
  free(buf);
}

/* The module records of a cubin, of the same cubin in a fatbin container and of bytes that are neither, and
 * two loader maps, from a driver linked with the library's objects (tests/data/trace/inject_selftest.c). */
static void inject_module_records_hash_and_list_symbols(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("selftest");
  struct run_result r;
  run_sh(&r, "mkdir -p '%s' && DKB_TRACE_DIR='%s' build/tests/inject_selftest build/tests/tiny.cubin", d, d);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  struct tr_proc *p = NULL;
  size_t n = 0;
  struct dkb_err err;
  if (tr_read_dir(d, &p, &n, &err)) fail_msg("%s: %s", err.file, err.msg);
  assert_int_equal(n, 1);
  assert_int_equal(p->nmodules, 3);
  char sha[65];
  dkb_sha256_file("build/tests/tiny.cubin", sha, &err);
  assert_string_equal(p->modules[0].sha256, sha);
  for (int m = 0; m < 2; m++) {
    assert_string_equal(p->modules[m].format, m ? "fatbin" : "elf");
    assert_int_equal(p->modules[m].nsymbols, 3);
    int plain = 0, templ = 0, internal = 0;
    for (size_t k = 0; k < p->modules[m].nsymbols; k++) {
      plain |= !strcmp(p->modules[m].symbols[k], "dkb_tiny_plain");
      templ |= !strcmp(p->modules[m].symbols[k], "_Z17dkb_tiny_templateILi3EEvPf");
      internal |= strstr(p->modules[m].symbols[k], "dkb_tiny_internal") != NULL;
    }
    assert_true(plain && templ && internal);
  }
  assert_string_equal(p->modules[2].format, "other");
  assert_int_equal(p->modules[2].nsymbols, 0);
  char exe[4096];
  assert_non_null(realpath("build/tests/inject_selftest", exe));
  assert_string_equal(p->modules[0].in_object, exe);
  assert_int_equal(p->nmaps, 2);
  assert_int_equal(p->maps[1].same_as, 0);
  int main_seen = 0;
  for (size_t k = 0; k < p->maps[0].nobjects; k++) main_seen |= p->maps[0].objects[k].main && !strcmp(p->maps[0].objects[k].path, exe);
  assert_true(main_seen);
  assert_true(p->has_end);
  tr_proc_release(p);
  free(p);
}

static void pydist_maps_installed_files_and_checks_record(void **s) {
  (void)s;
  const char *d = trace_fresh_dir("site");
  struct run_result r;
  run_sh(&r, "mkdir -p '%s/lib/python3.12/site-packages/pkg/sub' '%s/lib/python3.12/site-packages/demo_pkg-1.2.dist-info' && "
             "printf 'ext bytes' > '%s/lib/python3.12/site-packages/pkg/_ext.so' && "
             "printf 'other' > '%s/lib/python3.12/site-packages/pkg/sub/a,b.so' && "
             "printf 'tampered' > '%s/lib/python3.12/site-packages/pkg/old.so' && "
             "printf 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.2\\n\\nbody Name: no\\n' > "
             "'%s/lib/python3.12/site-packages/demo_pkg-1.2.dist-info/METADATA' && cd '%s/lib/python3.12/site-packages' && "
             "{ printf 'pkg/_ext.so,sha256=%%s,9\\n' $(/usr/bin/python3 -c \"import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'ext bytes').digest()).rstrip(b'=').decode())\"); "
             "printf '\"pkg/sub/a,b.so\",sha256=%%s,5\\n' $(/usr/bin/python3 -c \"import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'other').digest()).rstrip(b'=').decode())\"); "
             "printf 'pkg/old.so,sha256=AAAA,3\\ndemo_pkg-1.2.dist-info/RECORD,,\\n'; } > demo_pkg-1.2.dist-info/RECORD",
         d, d, d, d, d, d, d);
  if (r.rc) fail_msg("%s", r.err);
  run_result_release(&r);
  struct pydist *pd = pydist_new();
  struct pydist_match m;
  const char *files[] = {"pkg/_ext.so", "pkg/sub/a,b.so", "pkg/old.so"};
  const int want[] = {1, 1, 0};
  for (int i = 0; i < 3; i++) {
    char path[900], real[4096], sha[65];
    struct dkb_err err;
    snprintf(path, sizeof path, "%s/lib/python3.12/site-packages/%s", d, files[i]);
    assert_non_null(realpath(path, real));
    dkb_sha256_file(real, sha, &err);
    assert_int_equal(pydist_lookup(pd, real, sha, &m), 1);
    assert_string_equal(m.name, "demo-pkg");
    assert_string_equal(m.version, "1.2");
    assert_int_equal(m.record_match, want[i]);
  }
  char zero[65];
  memset(zero, '0', 64);
  zero[64] = '\0';
  assert_int_equal(pydist_lookup(pd, "/usr/lib/x86_64-linux-gnu/libc.so.6", zero, &m), 0);
  pydist_free(pd);
}

DKB_TEST_GROUP(trace_bundle, cmocka_unit_test(trace_join_attributes_launches_by_correlation),
               cmocka_unit_test(trace_incomplete_records_are_findings),
               cmocka_unit_test(trace_records_reader_names_file_line_and_pointer),
               cmocka_unit_test(trace_checks_the_dumps_of_the_declared_call_key),
               cmocka_unit_test(trace_kernel_roles_follow_the_stated_rule),
               cmocka_unit_test(trace_ladder_recomputes_instead_of_trusting), cmocka_unit_test(inject_sha256_equals_libcrypto),
               cmocka_unit_test(inject_module_records_hash_and_list_symbols),
               cmocka_unit_test(pydist_maps_installed_files_and_checks_record))
