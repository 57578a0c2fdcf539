/* test_cudnn.c - the cuDNN plugin's own tests (cmocka), run from the repository root after `make plugins`:
 * the library loads with dlopen on a machine without a driver and exports its entry point alone; its table
 * and ABI version; admission's verdict and reasons on a set of calls; the source manifest (every upstream
 * file hashed again and checked against the wheel's RECORD, the binary node against the library file) and
 * the build report. Its GPU cases are test_gpu.c's, in the same program. */
#include "dkb/backend.h"
#include "plugins/cudnn/test_cudnn.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static void *lib;
static const struct dkb_plugin *plugin;
const struct dkb_backend *be;

static int load(void **s) {
  (void)s;
  lib = dlopen(CUDNN_TEST_SO, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cudnn_test: dlopen %s: %s\n", CUDNN_TEST_SO, dlerror());
    return -1;
  }
  dkb_plugin_entry_fn entry = (dkb_plugin_entry_fn)dlsym(lib, DKB_PLUGIN_ENTRY_NAME);
  plugin = entry ? entry() : NULL;
  be = plugin && plugin->n_backends == 1 ? plugin->backends : NULL;
  return 0;
}

/* --- the table ------------------------------------------------------------------------------------ */

static void the_entry_point_is_the_only_export(void **s) {
  (void)s;
  assert_non_null(dlsym(lib, DKB_PLUGIN_ENTRY_NAME));
  assert_null(dlsym(lib, "cudnn_sdpa_admit"));
  assert_null(dlsym(lib, "dkb_cudnn_source_manifest_json"));
}

static void the_table_has_one_backend_of_abi_1(void **s) {
  (void)s;
  assert_non_null(plugin);
  assert_int_equal(plugin->abi_version, DKB_BACKEND_ABI_VERSION);
  assert_int_equal(plugin->size, sizeof(struct dkb_plugin));
  assert_string_equal(plugin->name, "cudnn");
  assert_int_equal(plugin->n_backends, 1);
  assert_non_null(be);
  assert_string_equal(be->name, "cudnn_sdpa");
  assert_int_equal(be->priority, 60);
  /* the cuDNN it was compiled against plus the frontend's version */
  assert_true(strncmp(be->version, "cudnn-9.", 8) == 0);
  assert_non_null(strstr(be->version, "+frontend-" CUDNN_TEST_FE_VERSION));
  assert_string_equal(plugin->version, be->version);
  assert_non_null(be->admit);
  assert_non_null(be->plan);
  assert_non_null(be->setup);
  assert_non_null(be->launch);
  assert_non_null(be->release);
  assert_non_null(be->last_error);
  assert_non_null(be->admits);
  assert_true(strncmp(be->admits, "decode, q_len 1, fp16/bf16; ", 28) == 0);
}

/* --- admission ------------------------------------------------------------------------------------ */

/* An eligible call: the README's B=4 GQA 32/8 bf16 decode on a contiguous NHD cache, H200. */
struct dkb_call base_call(void) {
  struct dkb_call c;
  memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.abi_version = DKB_BACKEND_ABI_VERSION;
  c.compute_capability = 90;
  c.sm_count = 132;
  c.phase = DKB_ABI_DECODE;
  c.B = 4;
  c.q_len = 1;
  c.H_q = 32;
  c.H_kv = 8;
  c.d_qk = c.d_v = 128;
  c.dtype = c.kv_dtype = DKB_ABI_BF16;
  c.scale = 0.08838834764831845;
  c.max_kv_len = 4096;
  c.total_kv_len = 8964;
  c.layout = DKB_ABI_CONTIGUOUS_NHD;
  c.T_cap = 4096;
  c.cache_rows = 4;
  c.mask_kind = DKB_ABI_MASK_CAUSAL;
  c.split_policy = DKB_ABI_SPLIT_AUTO;
  c.max_splits = DKB_ABI_MAX_SPLITS; /* what dkb passes when the fixture sets no cap */
  c.return_lse = 1;
  return c;
}

int admit(const struct dkb_call *c, struct dkb_reason *r, int cap) {
  int n = -1;
  assert_int_equal(be->admit(be, c, r, cap, &n), 0);
  return n;
}

static void assert_eligible(const struct dkb_call *c) {
  struct dkb_reason r[DKB_MAX_REASONS];
  int n = admit(c, r, DKB_MAX_REASONS);
  if (n) fail_msg("refused: %c %s", r[0].factor, r[0].text);
}

static void assert_one_reason(const struct dkb_call *c, char factor, const char *text) {
  struct dkb_reason r[DKB_MAX_REASONS];
  assert_int_equal(admit(c, r, DKB_MAX_REASONS), 1);
  assert_int_equal(r[0].factor, factor);
  assert_string_equal(r[0].text, text);
}

static void admits_what_sdpa_cpp_runs(void **s) {
  (void)s;
  struct dkb_call c = base_call();
  assert_eligible(&c);
  c.layout = DKB_ABI_CONTIGUOUS_HND;
  assert_eligible(&c);
  c.layout = DKB_ABI_RAGGED_NHD;
  assert_eligible(&c);
  c.layout = DKB_ABI_PAGED_NHD;
  c.table = DKB_ABI_TABLE_CSR;
  c.page_size = 16;
  assert_eligible(&c);
  c.layout = DKB_ABI_PAGED_HND;
  c.table = DKB_ABI_TABLE_DENSE;
  c.page_size = 1;
  assert_eligible(&c);
  c = base_call();
  c.dtype = c.kv_dtype = DKB_ABI_F16;
  c.mask_kind = DKB_ABI_MASK_NONE;
  c.return_lse = 0;
  c.graph = 1;
  assert_eligible(&c);
  c = base_call();
  c.d_qk = 256;
  c.d_v = 64;
  c.H_kv = 1;
  c.compute_capability = 80;
  assert_eligible(&c);
  c = base_call();
  c.mask_kind = DKB_ABI_MASK_SLIDING_WINDOW;
  c.window = 100; /* a bottom-right band */
  assert_eligible(&c);
  c.window = 4096; /* covers every key: exactly no mask, the sink included */
  c.sink = 4;
  assert_eligible(&c);
}

struct refusal {
  const char *what;
  void (*change)(struct dkb_call *);
  char factor;
  const char *text;
};

static void set_append(struct dkb_call *c) { c->phase = DKB_ABI_APPEND; }
static void set_sm75(struct dkb_call *c) { c->compute_capability = 75; }
static void set_no_device(struct dkb_call *c) { c->compute_capability = -1; }
static void set_fp32(struct dkb_call *c) { c->dtype = c->kv_dtype = DKB_ABI_F32; }
static void set_kv_fp16(struct dkb_call *c) { c->kv_dtype = DKB_ABI_F16; }
static void set_q_len2(struct dkb_call *c) { c->q_len = 2; }
static void set_d100(struct dkb_call *c) { c->d_qk = 100; }
static void set_dv512(struct dkb_call *c) { c->d_v = 512; }
static void set_gqa_3(struct dkb_call *c) { c->H_kv = 3; }
static void set_page24(struct dkb_call *c) {
  c->layout = DKB_ABI_PAGED_NHD;
  c->table = DKB_ABI_TABLE_CSR;
  c->page_size = 24;
}
static void set_no_table(struct dkb_call *c) {
  c->layout = DKB_ABI_PAGED_HND;
  c->page_size = 16;
}
static void set_huge(struct dkb_call *c) { c->max_kv_len = c->T_cap = 3000000000LL; }
static void set_window_sink(struct dkb_call *c) {
  c->mask_kind = DKB_ABI_MASK_SLIDING_WINDOW;
  c->window = 100;
  c->sink = 4;
}
static void set_window0(struct dkb_call *c) { c->mask_kind = DKB_ABI_MASK_SLIDING_WINDOW; }
static void set_flashmask(struct dkb_call *c) { c->mask_kind = DKB_ABI_MASK_FLASHMASK; }
static void set_fixed8(struct dkb_call *c) {
  c->split_policy = DKB_ABI_SPLIT_FIXED;
  c->splits = 8;
}
/* one split is a promise too: the engine split split1-direct's fixed:1 call 8 ways on the H200 */
static void set_fixed1(struct dkb_call *c) {
  c->split_policy = DKB_ABI_SPLIT_FIXED;
  c->splits = 1;
}
static void set_chunk(struct dkb_call *c) {
  c->split_policy = DKB_ABI_SPLIT_CHUNK;
  c->chunk = 1024;
}
/* a cap is a promise too: the engine's split is its own and unreported */
static void set_auto_max8(struct dkb_call *c) { c->max_splits = 8; }
static void set_auto_max1023(struct dkb_call *c) { c->max_splits = DKB_ABI_MAX_SPLITS - 1; }
static void set_chunk_spanning(struct dkb_call *c) {
  c->split_policy = DKB_ABI_SPLIT_CHUNK;
  c->chunk = 4096; /* one chunk spans the longest request */
}

static const struct refusal REFUSALS[] = {
    {"append", set_append, 'P', "phase=append unsupported (the plugin does not write the cache)"},
    {"sm_75", set_sm75, 'H', "compute_capability=75 unsupported (cudnn sdpa needs sm_80 or newer)"},
    {"no device", set_no_device, 'H', "compute_capability unknown: no CUDA device"},
    {"kv fp16 under bf16", set_kv_fp16, 'K', "kv_dtype=fp16 unsupported with dtype=bf16 (one storage dtype)"},
    {"q_len 2", set_q_len2, 'Q', "q_len=2 unsupported (one-token decode)"},
    {"d_qk 100", set_d100, 'Q', "head_dim_qk=100 unsupported"},
    {"d_v 512", set_dv512, 'Q', "head_dim_vo=512 unsupported"},
    {"H_kv 3", set_gqa_3, 'G', "gqa H_q=32 H_kv=3 unsupported"},
    {"page 24", set_page24, 'L', "page_size=24 unsupported (cudnn paged caches need a power of two)"},
    {"paged, no table", set_no_table, 'L', "table=none unsupported"},
    {"3e9 keys", set_huge, 'L', "max_kv_len=3000000000 unsupported (int32 sequence lengths)"},
    {"window 100, sink 4", set_window_sink, 'M',
     "mask=sliding_window unsupported with sink=4 (cudnn has no sink keys)"},
    {"window 0", set_window0, 'M', "window=0 unsupported"},
    {"flashmask", set_flashmask, 'M', "mask=flashmask unsupported"},
    {"fixed 8", set_fixed8, 'C', "split=fixed:8 unsupported (the cudnn engine picks its own K/V split)"},
    {"fixed 1", set_fixed1, 'C', "split=fixed:1 unsupported (the cudnn engine picks its own K/V split)"},
    {"chunk 1024", set_chunk, 'C', "split=chunk:1024 unsupported (the cudnn engine picks its own K/V split)"},
    {"chunk spanning every request", set_chunk_spanning, 'C',
     "split=chunk:4096 unsupported (the cudnn engine picks its own K/V split)"},
    {"auto, at most 8", set_auto_max8, 'C',
     "max_splits=8 unsupported (the cudnn engine picks its own K/V split and reports none)"},
    {"auto, at most 1023", set_auto_max1023, 'C',
     "max_splits=1023 unsupported (the cudnn engine picks its own K/V split and reports none)"},
};

static void refuses_each_factor_with_its_reason(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++) {
    struct dkb_call c = base_call();
    REFUSALS[i].change(&c);
    print_message("  %s\n", REFUSALS[i].what);
    assert_one_reason(&c, REFUSALS[i].factor, REFUSALS[i].text);
  }
  struct dkb_call c = base_call();
  set_fp32(&c); /* fp32 Q and K/V: one D reason, the K/V dtype matches */
  assert_one_reason(&c, 'D', "dtype=fp32 unsupported");
}

static void reasons_come_in_factor_order_up_to_cap(void **s) {
  (void)s;
  struct dkb_call c = base_call();
  set_fixed8(&c);
  set_flashmask(&c);
  set_q_len2(&c);
  set_fp32(&c);
  set_append(&c);
  struct dkb_reason r[DKB_MAX_REASONS];
  assert_int_equal(admit(&c, r, DKB_MAX_REASONS), 5);
  const char order[] = "PDQMC";
  for (int i = 0; i < 5; i++) assert_int_equal(r[i].factor, order[i]);
  assert_int_equal(admit(&c, r, 2), 2);
  assert_int_equal(r[1].factor, 'D');
}

static void a_call_of_another_abi_or_no_room_is_an_error(void **s) {
  (void)s;
  struct dkb_call c = base_call();
  c.size = 8;
  struct dkb_reason r[4];
  int n = -1;
  assert_int_equal(be->admit(be, &c, r, 4, &n), DKB_BACKEND_ERROR);
  char want[160];
  snprintf(want, sizeof want, "cudnn_sdpa: admit: call of size 8, abi 1, the plugin needs size %zu, abi 1",
           sizeof(struct dkb_call));
  assert_string_equal(be->last_error(NULL), want);
  c = base_call(); /* no room for a reason would read as eligible */
  assert_int_equal(be->admit(be, &c, r, 0, &n), DKB_BACKEND_ERROR);
  assert_string_equal(be->last_error(NULL), "cudnn_sdpa: admit: cap=0 leaves no room for a reason");
}

/* Without a driver plan fails with a reason (no exception escapes) and returns no state. */
static void plan_without_a_device_fails_with_a_reason(void **s) {
  (void)s;
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
    print_message("[  SKIP    ] a CUDA device is present: the no-device failure is not exercised here\n");
    skip();
  }
  (void)cudaGetLastError();
  struct dkb_call c = base_call();
  int64_t kv[4] = {4096, 3587, 1024, 257};
  c.kv_len = kv;
  struct dkb_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.size = sizeof plan;
  void *state = (void *)1;
  assert_int_equal(be->plan(be, &c, &plan, &state), DKB_BACKEND_ERROR);
  assert_null(state);
  assert_true(strncmp(be->last_error(NULL), "cudnn_sdpa: plan: ", 18) == 0);
}

/* --- the documents -------------------------------------------------------------------------------- */

static int sha256_hex(const char *path, char out[65]) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  unsigned char buf[1 << 16], md[32];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(ctx, buf, k);
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  fclose(f);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
  return 0;
}

/* The RECORD hash of path (urlsafe base64 without padding) as hex, or "" when RECORD has no entry. */
static void record_sha256(const char *path, char out[65]) {
  static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  out[0] = 0;
  FILE *f = fopen(CUDNN_TEST_RECORD, "r");
  assert_non_null(f);
  char line[4096];
  size_t n = strlen(path);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, path, n) || strncmp(line + n, ",sha256=", 8)) continue;
    unsigned char md[33];
    int bits = 0, nb = 0;
    unsigned acc = 0;
    for (const char *p = line + n + 8; *p && *p != ',' && nb < 33; p++) {
      const char *q = strchr(B64, *p);
      assert_non_null(q);
      acc = acc << 6 | (unsigned)(q - B64);
      bits += 6;
      if (bits >= 8) md[nb++] = (unsigned char)(acc >> (bits -= 8));
    }
    assert_int_equal(nb, 32);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
    break;
  }
  fclose(f);
}

static const char *str(const json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  if (!v) fail_msg("no string '%s'", key);
  return v;
}

static void check_file(const json_t *f, int *n_up, int *n_bin) {
  const char *path = str(f, "path"), *root = str(f, "root"), *sha = str(f, "sha256");
  char full[1024], got[65], rec[65];
  if (!strcmp(root, "upstream")) {
    snprintf(full, sizeof full, "%s/%s", CUDNN_TEST_UPSTREAM, path);
    record_sha256(path, rec);
    assert_string_equal(rec, sha);
    assert_string_equal(str(f, "record_sha256"), sha);
    ++*n_up;
  } else if (!strcmp(root, "binary")) {
    snprintf(full, sizeof full, "%s", str(f, "found_at"));
    assert_string_equal(path, "libcudnn_engines_runtime_compiled.so.9");
    struct stat st;
    assert_int_equal(stat(full, &st), 0);
    assert_int_equal(json_integer_value(json_object_get(f, "size")), st.st_size);
    ++*n_bin;
  } else {
    assert_string_equal(root, "repo");
    snprintf(full, sizeof full, "%s", path);
  }
  if (sha256_hex(full, got)) fail_msg("cannot read %s", full);
  if (strcmp(got, sha)) fail_msg("%s: SHA-256 %s, the manifest says %s", full, got, sha);
}

static void the_source_manifest_checks_against_record_and_the_library(void **s) {
  (void)s;
  json_error_t e;
  json_t *m = json_loads(plugin->source_manifest_json, JSON_REJECT_DUPLICATES, &e);
  assert_non_null(m);
  assert_string_equal(str(m, "schema"), "dkb.source-manifest/v1");
  size_t i;
  json_t *f;
  int n_up = 0, n_bin = 0, frontend_h = 0;
  json_array_foreach(json_object_get(m, "files"), i, f) {
    check_file(f, &n_up, &n_bin);
    frontend_h |= !strcmp(str(f, "path"), "include/cudnn_frontend.h");
  }
  assert_true(n_up >= 50); /* every frontend header the compiler read (85 for 1.32.0) */
  assert_int_equal(n_bin, 1);
  assert_true(frontend_h);
  json_t *sym;
  int binary_syms = 0;
  json_array_foreach(json_object_get(m, "symbols"), i, sym) {
    int binary = !strcmp(str(sym, "kind"), "binary");
    binary_syms += binary;
    if (binary && strcmp(str(sym, "symbol"), KERNEL_PREFIX) && strcmp(str(sym, "symbol"), COMBINE_PREFIX))
      fail_msg("binary symbol '%s' is neither of the plan's kernel prefixes", str(sym, "symbol"));
    assert_int_equal(json_object_get(sym, "span") == NULL, binary); /* a span for source, none for a library */
  }
  assert_int_equal(binary_syms, 2);
  /* the SDPA kernel writes O itself unless the engine splits: both layers; lean reduction merges a split */
  const char *layers[] = {"admission", "plan", "launch", "producer+combine", "combine"};
  for (size_t l = 0; l < 5; l++) {
    int seen = 0;
    json_t *node;
    json_array_foreach(json_object_get(json_object_get(m, "chain"), "nodes"), i, node) {
      if (strcmp(str(node, "layer"), layers[l])) continue;
      seen = 1;
      if (l >= 3) assert_string_equal(str(node, "root"), "binary");
    }
    if (!seen) fail_msg("no %s node in the chain", layers[l]);
  }
  json_t *up = json_object_get(m, "upstream");
  assert_string_equal(str(up, "package"), "nvidia-cudnn-frontend");
  assert_string_equal(str(up, "version"), CUDNN_TEST_FE_VERSION);
  assert_string_equal(str(up, "archive_sha256"), CUDNN_TEST_PIN);
  json_decref(m);
}

static void the_build_report_names_compiler_flags_and_the_pinned_wheel(void **s) {
  (void)s;
  json_error_t e;
  json_t *r = json_loads(plugin->build_report_json, JSON_REJECT_DUPLICATES, &e);
  assert_non_null(r);
  assert_string_equal(str(r, "schema"), "dkb.build-report/v1");
  json_t *cc = json_object_get(json_object_get(r, "compilers"), "plugin");
  assert_non_null(strstr(str(cc, "version"), "release 13"));
  assert_non_null(strstr(str(r, "flags"), "-cudart shared"));
  assert_non_null(strstr(str(r, "flags"), "-z,defs"));
  json_t *up = json_object_get(r, "upstream");
  assert_string_equal(str(up, "package"), "nvidia-cudnn-frontend");
  assert_string_equal(str(up, "archive_sha256"), CUDNN_TEST_PIN);
  char path[512], got[65];
  snprintf(path, sizeof path, "build/plugins/dl/%s", str(up, "archive"));
  if (sha256_hex(path, got)) fail_msg("cannot read %s", path);
  assert_string_equal(got, CUDNN_TEST_PIN);
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_entry_point_is_the_only_export),
      cmocka_unit_test(the_table_has_one_backend_of_abi_1),
      cmocka_unit_test(admits_what_sdpa_cpp_runs),
      cmocka_unit_test(refuses_each_factor_with_its_reason),
      cmocka_unit_test(reasons_come_in_factor_order_up_to_cap),
      cmocka_unit_test(a_call_of_another_abi_or_no_room_is_an_error),
      cmocka_unit_test(plan_without_a_device_fails_with_a_reason),
      cmocka_unit_test(the_source_manifest_checks_against_record_and_the_library),
      cmocka_unit_test(the_build_report_names_compiler_flags_and_the_pinned_wheel),
      cmocka_unit_test(gpu_contiguous_nhd_strided),
      cmocka_unit_test(gpu_contiguous_hnd_remapped_rows),
      cmocka_unit_test(gpu_ragged_nhd),
      cmocka_unit_test(gpu_paged_nhd_csr),
      cmocka_unit_test(gpu_paged_nhd_window),
      cmocka_unit_test(gpu_paged_hnd_dense),
  };
  return cmocka_run_group_tests_name("cudnn plugin", tests, load, NULL);
}
