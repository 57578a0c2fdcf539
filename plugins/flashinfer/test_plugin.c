/* test_plugin.c - tests of the FlashInfer plugin: on any machine the library through dlopen as dkb
 * loads it (entry point, ABI version, table, nothing else exported), admit's verdict and reasons on one
 * call per refusal and on the shapes it accepts, plan failing with a reason (never a crash) where no
 * device is, and its two documents written to DIR for check_manifest.py; on an sm_90 GPU the cases of
 * test_gpu.c too (skipped, with the reason, elsewhere).
 *
 * usage: test_plugin LIB DIR   (make flashinfer-test) */
#include "dkb/backend.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

static const char *g_lib, *g_dir;
static void *g_handle;
static const struct dkb_plugin *g_plugin;
const struct dkb_backend *g_decode, *g_tc; /* test_gpu.c uses them too */
void gpu_cases_match_the_reference(void **state);

static int load(void **state) {
  (void)state;
  g_handle = dlopen(g_lib, RTLD_NOW | RTLD_LOCAL);
  if (!g_handle) {
    fprintf(stderr, "test_plugin: cannot dlopen %s: %s\n", g_lib, dlerror());
    return -1;
  }
  dkb_plugin_entry_fn entry = (dkb_plugin_entry_fn)(uintptr_t)dlsym(g_handle, DKB_PLUGIN_ENTRY_NAME);
  if (!entry) return -1;
  g_plugin = entry();
  if (!g_plugin || g_plugin->n_backends != 2) return -1;
  g_decode = &g_plugin->backends[0];
  g_tc = &g_plugin->backends[1];
  return 0;
}

/* ---- the table ------------------------------------------------------------------------------------- */

static void entry_point_and_table(void **state) {
  (void)state;
  assert_int_equal(g_plugin->abi_version, DKB_BACKEND_ABI_VERSION);
  assert_int_equal(g_plugin->size, sizeof(struct dkb_plugin));
  assert_string_equal(g_plugin->name, "flashinfer");
  assert_string_equal(g_decode->name, "flashinfer_decode");
  assert_string_equal(g_tc->name, "flashinfer_decode_tc");
  assert_int_equal(g_decode->priority, 50);
  assert_int_equal(g_tc->priority, 51);
  for (int i = 0; i < 2; i++) {
    const struct dkb_backend *b = &g_plugin->backends[i];
    assert_string_equal(b->version, "0.7.2.post1");
    assert_non_null(b->role);
    assert_true(strlen(b->name) <= 47 && strspn(b->name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(b->name));
    assert_non_null(b->admit);
    assert_non_null(b->plan);
    assert_non_null(b->setup);
    assert_non_null(b->launch);
    assert_non_null(b->release);
    assert_non_null(b->last_error);
  }
  assert_non_null(g_plugin->source_manifest_json);
  assert_non_null(g_plugin->build_report_json);
}

/* Everything but the entry point has hidden visibility: the generated documents are not dlsym-able. */
static void only_the_entry_point_is_exported(void **state) {
  (void)state;
  assert_null(dlsym(g_handle, "dkb_plugin_source_manifest_json"));
  assert_null(dlsym(g_handle, "dkb_plugin_build_report_json"));
  assert_null(dlsym(g_handle, "dkb_plugin_entry_v2"));
}

/* ---- admission ------------------------------------------------------------------------------------- */

/* B=16, T=8192, GQA 4 (32/8), d=128, bf16, paged NHD with 16-key pages in a CSR table, causal, auto
 * split, H200: fixtures/bench/b16-t8192-g4-paged16.json's scalars. */
static struct dkb_call base_call(void) {
  struct dkb_call c;
  memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.abi_version = DKB_BACKEND_ABI_VERSION;
  c.device = 0;
  c.compute_capability = 90;
  c.sm_count = 132;
  c.phase = DKB_ABI_DECODE;
  c.B = 16;
  c.q_len = 1;
  c.H_q = 32;
  c.H_kv = 8;
  c.d_qk = c.d_v = 128;
  c.dtype = c.kv_dtype = DKB_ABI_BF16;
  c.scale = 0.08838834764831845;
  c.max_kv_len = 8192;
  c.total_kv_len = 16 * 8192;
  c.layout = DKB_ABI_PAGED_NHD;
  c.table = DKB_ABI_TABLE_CSR;
  c.page_size = 16;
  c.num_pages = 16 * 8192 / 16;
  c.n_page_indices = c.num_pages;
  c.mask_kind = DKB_ABI_MASK_CAUSAL;
  c.split_policy = DKB_ABI_SPLIT_AUTO;
  c.max_splits = 1024;
  c.return_lse = 1;
  return c;
}

static struct dkb_call contiguous(int layout, int64_t T_cap) {
  struct dkb_call c = base_call();
  c.layout = layout;
  c.table = DKB_ABI_TABLE_NONE;
  c.page_size = c.num_pages = c.n_page_indices = 0;
  c.T_cap = T_cap;
  c.cache_rows = c.B;
  return c;
}

static int admit(const struct dkb_backend *b, const struct dkb_call *c, struct dkb_reason *r) {
  int n = -1;
  int rc = b->admit(b, c, r, DKB_MAX_REASONS, &n);
  if (rc) fail_msg("%s: admit returned %d: %s", b->name, rc, b->last_error(NULL));
  return n;
}

static void assert_admitted(const struct dkb_backend *b, const struct dkb_call *c, const char *what) {
  struct dkb_reason r[DKB_MAX_REASONS];
  int n = admit(b, c, r);
  if (n) fail_msg("%s refuses %s: %c %s (%d reasons)", b->name, what, r[0].factor, r[0].text, n);
}

/* The call is refused with exactly these reasons, in order: "F text" each, NULL-terminated. */
static void assert_refused(const struct dkb_backend *b, const struct dkb_call *c, ...) {
  struct dkb_reason r[DKB_MAX_REASONS];
  int n = admit(b, c, r), i = 0;
  va_list ap;
  va_start(ap, c);
  for (const char *want; (want = va_arg(ap, const char *)); i++) {
    if (i >= n) fail_msg("%s: reason %d missing, expected '%s'", b->name, i, want);
    char got[DKB_REASON_TEXT_MAX + 4];
    snprintf(got, sizeof got, "%c %s", r[i].factor, r[i].text);
    assert_string_equal(got, want);
  }
  va_end(ap);
  if (n != i) fail_msg("%s: %d reasons, expected %d; the first extra: %c %s", b->name, n, i, r[i].factor, r[i].text);
}

static void admits_the_shapes_it_was_built_for(void **state) {
  (void)state;
  const struct dkb_backend *both[] = {g_decode, g_tc};
  for (int i = 0; i < 2; i++) {
    const struct dkb_backend *b = both[i];
    for (int dt = DKB_ABI_F16; dt <= DKB_ABI_BF16; dt++)
      for (int d = 64; d <= 256; d *= 2)
        for (int g = 1; g <= 16; g *= 2) {
          struct dkb_call c = base_call();
          c.dtype = c.kv_dtype = dt;
          c.d_qk = c.d_v = d;
          c.H_kv = 2;
          c.H_q = 2 * g;
          assert_admitted(b, &c, "paged NHD, fp16/bf16, d 64/128/256, groups 1-16");
          c.layout = DKB_ABI_PAGED_HND;
          c.table = DKB_ABI_TABLE_DENSE;
          c.table_width = 512;
          c.cache_rows = 16;
          assert_admitted(b, &c, "paged HND with a dense table");
        }
    struct dkb_call c = base_call();
    c.H_q = 48; /* group 6 */
    assert_admitted(b, &c, "group 6");
    c = base_call();
    c.mask_kind = DKB_ABI_MASK_NONE;
    assert_admitted(b, &c, "no mask");
    c.mask_kind = DKB_ABI_MASK_SLIDING_WINDOW;
    c.window = 1024;
    assert_admitted(b, &c, "a sliding window without sinks");
    c = base_call();
    c.graph = 1;
    assert_admitted(b, &c, "graph mode");
    c.return_lse = 0;
    assert_admitted(b, &c, "no LSE");
    c = base_call();
    c.page_size = 1;
    c.num_pages = c.total_kv_len;
    assert_admitted(b, &c, "pages of one key");
    c = contiguous(DKB_ABI_CONTIGUOUS_NHD, 8192);
    assert_admitted(b, &c, "contiguous NHD");
    c = contiguous(DKB_ABI_CONTIGUOUS_HND, 8200);
    assert_admitted(b, &c, "contiguous HND");
    c = contiguous(DKB_ABI_RAGGED_NHD, 0);
    c.cache_rows = 0;
    assert_admitted(b, &c, "ragged NHD");
    c = base_call();
    c.B = 1;
    c.max_kv_len = c.total_kv_len = 131072;
    c.H_q = 8;
    c.H_kv = 1;
    c.num_pages = 131072 / 16;
    assert_admitted(b, &c, "B=1 T=131072 MQA");
  }
  /* the tensor-core path: any group up to 16, a fixed split of 1, chunks in whole pages */
  struct dkb_call c = base_call();
  c.H_q = 40; /* group 5 */
  assert_admitted(g_tc, &c, "group 5");
  c = base_call();
  c.split_policy = DKB_ABI_SPLIT_FIXED;
  c.splits = 1;
  assert_admitted(g_tc, &c, "split=fixed, splits=1 (disable_split_kv)");
  c = base_call();
  c.split_policy = DKB_ABI_SPLIT_CHUNK;
  c.chunk = 2048;
  assert_admitted(g_tc, &c, "split=chunk 2048 with 16-key pages");
  c = contiguous(DKB_ABI_CONTIGUOUS_NHD, 8192);
  c.split_policy = DKB_ABI_SPLIT_CHUNK;
  c.chunk = 100;
  assert_admitted(g_tc, &c, "split=chunk 100 on pages of one key");
}

static void refuses_each_thing_it_cannot_do(void **state) {
  (void)state;
  struct dkb_call c = base_call();
  c.phase = DKB_ABI_APPEND;
  assert_refused(g_decode, &c, "P phase=append unsupported", NULL);
  c = base_call();
  c.compute_capability = -1;
  assert_refused(g_decode, &c, "H compute_capability unknown: no CUDA device", NULL);
  c.compute_capability = 80;
  assert_refused(g_tc, &c, "H compute_capability=80 unsupported (built for sm_90a only)", NULL);
  c.compute_capability = 100;
  assert_refused(g_decode, &c, "H compute_capability=100 unsupported (built for sm_90a only)", NULL);
  c = base_call();
  c.dtype = c.kv_dtype = DKB_ABI_F32;
  assert_refused(g_decode, &c, "D dtype=fp32 unsupported", NULL);
  c = base_call();
  c.kv_dtype = DKB_ABI_F16;
  assert_refused(g_tc, &c, "K kv_dtype=fp16 unsupported with dtype=bf16 (one storage dtype)", NULL);
  c = base_call();
  c.q_len = 2;
  assert_refused(g_decode, &c, "Q q_len=2 unsupported", NULL);
  assert_refused(g_tc, &c, "Q q_len=2 unsupported", NULL);
  c = base_call();
  c.d_v = 64;
  assert_refused(g_decode, &c, "Q head_dim_vo=64 unsupported with head_dim_qk=128 (equal head dims only)", NULL);
  c = base_call();
  c.d_qk = c.d_v = 96;
  assert_refused(g_decode, &c, "Q head_dim_qk=96 unsupported (built: 64, 128, 256)", NULL);
  c.d_qk = c.d_v = 512;
  assert_refused(g_tc, &c, "Q head_dim_qk=512 unsupported (built: 64, 128, 256)", NULL);
  c = base_call();
  c.H_q = 40; /* group 5 */
  assert_refused(g_decode, &c, "G group_size=5 unsupported (flashinfer dispatches 1, 2, 3, 4, 6, 8, 16)", NULL);
  c.H_q = 32;
  c.H_kv = 1;
  assert_refused(g_decode, &c, "G group_size=32 unsupported (flashinfer dispatches 1, 2, 3, 4, 6, 8, 16)", NULL);
  assert_refused(g_tc, &c, "G group_size=32 unsupported (built for cta_tile_q=16: groups up to 16)", NULL);
  c = base_call();
  c.table = DKB_ABI_TABLE_NONE;
  assert_refused(g_decode, &c, "L table=0 unsupported (dense or csr)", NULL);
  c = base_call();
  c.page_size = 1 << 22;
  c.num_pages = 1;
  assert_refused(g_decode, &c, "L page_size=4194304 unsupported: a page of 4294967296 elements exceeds uint32 strides",
                 NULL);
  c = base_call();
  c.max_kv_len = (int64_t)1 << 27;
  c.total_kv_len = (int64_t)16 << 27;
  c.num_pages = c.total_kv_len / 16;
  assert_refused(g_decode, &c, "L total_kv_len=2147483648 unsupported: flashinfer's page iterator is 32-bit", NULL);
  c = contiguous(DKB_ABI_CONTIGUOUS_NHD, 1 << 27);
  assert_refused(g_decode, &c, "L cache_rows*T_cap=2147483648 unsupported: token page ids are int32", NULL);
  c = contiguous(DKB_ABI_CONTIGUOUS_HND, 1 << 22);
  assert_refused(g_tc, &c,
                 "L T_cap=4194304 unsupported: a cache row of 4294967296 elements exceeds uint32 strides", NULL);
  c = contiguous(DKB_ABI_CONTIGUOUS_HND, 1 << 27);
  c.H_kv = 1;
  c.H_q = 4;
  c.d_qk = c.d_v = 64;
  c.B = 16;
  assert_refused(g_tc, &c, "L T_cap=134217728 unsupported: a cache row of 8589934592 elements exceeds uint32 strides",
                 "L B*T_cap=2147483648 unsupported: flashinfer's page iterator is 32-bit", NULL);
  c = base_call();
  c.mask_kind = DKB_ABI_MASK_FLASHMASK;
  assert_refused(g_decode, &c, "M mask=flashmask unsupported", NULL);
  c.mask_kind = DKB_ABI_MASK_SLIDING_WINDOW;
  c.window = 100;
  c.sink = 4;
  assert_refused(g_tc, &c, "M sink=4 unsupported (window_left only)", NULL);
  c = base_call();
  c.split_policy = DKB_ABI_SPLIT_FIXED;
  c.splits = 8;
  assert_refused(g_decode, &c, "C split=fixed unsupported (flashinfer's planner chooses the split)", NULL);
  assert_refused(g_tc, &c, "C split=fixed with splits=8 unsupported (flashinfer fixes a chunk, not a count)", NULL);
  c.splits = 1;
  assert_refused(g_decode, &c, "C split=fixed unsupported (flashinfer's planner chooses the split)", NULL);
  c = base_call();
  c.split_policy = DKB_ABI_SPLIT_CHUNK;
  c.chunk = 100;
  assert_refused(g_decode, &c, "C split=chunk unsupported (flashinfer's planner chooses the split)", NULL);
  assert_refused(g_tc, &c, "C chunk=100 unsupported: not a multiple of flashinfer's page_size=16", NULL);
  c.chunk = 2048;
  c.graph = 1;
  assert_refused(g_tc, &c, "C split=chunk unsupported with graph=true (flashinfer's padded grid)", NULL);
  c = base_call();
  c.max_splits = 8; /* 8192 keys in 16-key pages: chunks of at least 8 pages, so up to 64 of them */
  assert_refused(g_decode, &c, "C max_splits=8 unsupported: flashinfer's planner may cut a request into 64", NULL);
  c.max_splits = 64;
  assert_admitted(g_decode, &c, "max_splits=64");
  c.max_splits = 32; /* the tensor-core planner's grid: 2 x 132 SMs over 8 K/V heads */
  assert_refused(g_tc, &c, "C max_splits=32 unsupported: flashinfer's planner may cut a request into 33", NULL);
  c = base_call();
  c.B = 1;
  c.max_kv_len = c.total_kv_len = 1 << 20;
  c.num_pages = c.total_kv_len / 16;
  c.H_kv = 1;
  c.H_q = 8; /* MQA: up to 16 CTAs on each of 132 SMs, all of one request */
  assert_refused(g_decode, &c, "C max_splits=1024 unsupported: flashinfer's planner may cut a request into 2112", NULL);
  c.H_kv = 8;
  c.H_q = 32;
  assert_admitted(g_decode, &c, "T=2^20 over 8 K/V heads (at most 264 chunks)");
}

static void reasons_come_in_factor_order_and_respect_cap(void **state) {
  (void)state;
  struct dkb_call c = base_call();
  c.phase = DKB_ABI_APPEND;
  c.q_len = 3;
  c.split_policy = DKB_ABI_SPLIT_FIXED;
  c.splits = 8;
  c.mask_kind = DKB_ABI_MASK_FLASHMASK;
  c.H_q = 40;
  assert_refused(g_decode, &c, "P phase=append unsupported", "Q q_len=3 unsupported",
                 "G group_size=5 unsupported (flashinfer dispatches 1, 2, 3, 4, 6, 8, 16)",
                 "M mask=flashmask unsupported", "C split=fixed unsupported (flashinfer's planner chooses the split)",
                 NULL);
  struct dkb_reason r[1];
  int n = -1;
  assert_int_equal(g_decode->admit(g_decode, &c, r, 1, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(r[0].factor, 'P');
  n = -1;
  assert_int_equal(g_decode->admit(g_decode, &c, NULL, 0, &n), 0);
  assert_int_equal(n, 0);
}

static void a_call_of_another_abi_is_an_error(void **state) {
  (void)state;
  struct dkb_call c = base_call();
  struct dkb_reason r[DKB_MAX_REASONS];
  int n = -1;
  c.abi_version = 2;
  assert_int_equal(g_decode->admit(g_decode, &c, r, DKB_MAX_REASONS, &n), DKB_BACKEND_ERROR);
  assert_string_equal(g_decode->last_error(NULL), "call abi_version=2, the plugin's is 1");
  c = base_call();
  c.size = 64;
  assert_int_equal(g_tc->admit(g_tc, &c, r, DKB_MAX_REASONS, &n), DKB_BACKEND_ERROR);
  assert_non_null(strstr(g_tc->last_error(NULL), "call size=64"));
}

/* ---- plan without a device ------------------------------------------------------------------------ */

/* plan() of an admitted call with its host arrays: on a machine without a GPU it ends in an error with
 * a reason (the device query fails), never an exception or a crash; on an H200 it plans, and the plan
 * says what the ABI needs. */
static void plan_fails_cleanly_or_plans(void **state) {
  (void)state;
  enum { B = 4, T = 4096, P = 16, NP = B * T / P };
  static int64_t kv_len[B];
  static int32_t indptr[B + 1], indices[NP], last[B];
  for (int b = 0; b < B; b++) kv_len[b] = T - 7 * b;
  for (int b = 0, k = 0; b < B; b++) {
    indptr[b] = k;
    for (int j = 0; j < (kv_len[b] + P - 1) / P; j++, k++) indices[k] = (int32_t)(((int64_t)k * 7919) % NP);
    indptr[b + 1] = k;
    last[b] = (int32_t)(kv_len[b] - (indptr[b + 1] - indptr[b] - 1) * P);
  }
  const struct dkb_backend *both[] = {g_decode, g_tc};
  for (int i = 0; i < 2; i++) {
    const struct dkb_backend *b = both[i];
    struct dkb_call c = base_call();
    c.B = B;
    c.max_kv_len = T;
    c.total_kv_len = 0;
    for (int r = 0; r < B; r++) c.total_kv_len += kv_len[r];
    c.num_pages = NP;
    c.n_page_indices = indptr[B];
    c.kv_len = kv_len;
    c.page_indptr = indptr;
    c.page_indices = indices;
    c.last_page_len = last;
    assert_admitted(b, &c, "the planned call");
    struct dkb_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.size = sizeof plan;
    void *st = (void *)&plan;
    int rc = b->plan(b, &c, &plan, &st);
    if (rc) {
      assert_true(rc > 0); /* a cudaError_t */
      assert_null(st);
      const char *why = b->last_error(NULL);
      assert_non_null(strstr(why, "plan: cudaGetDevice: "));
      continue;
    }
    assert_non_null(st);
    assert_true(plan.splits >= 1);
    assert_true(plan.n_workspaces >= 1 && plan.n_workspaces <= DKB_MAX_WORKSPACES);
    assert_int_equal(plan.ws[0].kind, DKB_WS_PERSISTENT);
    assert_int_equal(plan.lse_base, DKB_LSE_BASE2);
    assert_int_equal(plan.empty_row, DKB_EMPTY_ZERO_NEGINF);
    assert_int_equal(plan.launch_flags, 0);
    if (plan.splits > 1) assert_int_equal(plan.n_kernels, 2);
    assert_int_equal(plan.kernels[0].role, DKB_KERNEL_PRODUCER);
    assert_int_equal(plan.kernels[0].match, DKB_MATCH_FUNCTION);
    assert_non_null(plan.plan_json);
    assert_int_equal(plan.plan_json[0], '{');
    b->release(st);
  }
}

/* ---- the documents --------------------------------------------------------------------------------- */

static void write_doc(const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  fputs(text, f);
  fputc('\n', f);
  if (fclose(f)) fail_msg("cannot write %s", path);
}

static void documents_are_written_for_the_checker(void **state) {
  (void)state;
  assert_int_equal(g_plugin->source_manifest_json[0], '{');
  assert_int_equal(g_plugin->build_report_json[0], '{');
  assert_non_null(strstr(g_plugin->source_manifest_json, "\"schema\":\"dkb.source-manifest/v1\""));
  assert_non_null(strstr(g_plugin->build_report_json, "\"schema\":\"dkb.build-report/v1\""));
  mkdir(g_dir, 0777);
  write_doc("source_manifest.json", g_plugin->source_manifest_json);
  write_doc("build_report.json", g_plugin->build_report_json);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_plugin LIB DIR\n");
    return 2;
  }
  g_lib = argv[1];
  g_dir = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(entry_point_and_table),
      cmocka_unit_test(only_the_entry_point_is_exported),
      cmocka_unit_test(admits_the_shapes_it_was_built_for),
      cmocka_unit_test(refuses_each_thing_it_cannot_do),
      cmocka_unit_test(reasons_come_in_factor_order_and_respect_cap),
      cmocka_unit_test(a_call_of_another_abi_is_an_error),
      cmocka_unit_test(plan_fails_cleanly_or_plans),
      cmocka_unit_test(documents_are_written_for_the_checker),
      cmocka_unit_test(gpu_cases_match_the_reference),
  };
  return cmocka_run_group_tests_name("flashinfer plugin", tests, load, NULL);
}
