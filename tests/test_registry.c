/* test_registry.c - backend admission of article 0x07 through the C API: the base call's teaching and
 * plan digests, the seven-case matrix with its exact reason vectors, malformed calls, the forced
 * policy, the plan lifecycle, a second registry table in the same machinery, record verification. */
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

#include "lib/cjson.h"
#include "dispatch/registry.h"

#define BASE_DIGEST "f4813d5b08179c23e85c587f0da636b380caeb8338e74c0c4a5faa87cd66d2eb"
#define PLAN_DIGEST "2a378ec0dc32475c6b2cf67212cd405d9184e23d54d27eeb1c57471ad470c3a8"

/* The base decode call of 0x07D. */
static struct dispatch_key base_call(void) {
  struct dispatch_key k;
  dispatch_key_init(&k);
  k.phase = DK_DECODE;
  k.device_type = DK_CUDA;
  k.compute_capability = 90;
  k.dtype = k.kv_dtype = DKB_F16;
  k.q_len = 1;
  k.kv_len = 4096;
  k.num_q_heads = 32;
  k.num_kv_heads = 8;
  k.head_dim_qk = k.head_dim_vo = 128;
  k.cache_layout = DK_PAGED_NHD;
  k.page_size = 16;
  k.mask_kind = DK_MASK_CAUSAL;
  k.requires_deterministic = 1;
  k.cuda_graph = 1;
  return k;
}

static void assert_reasons(const struct admit_reasons *r, size_t n, const char *const *want) {
  assert_int_equal(r->n, n);
  assert_int_equal(r->dropped, 0);
  for (size_t i = 0; i < n; i++) assert_string_equal(r->text[i], want[i]);
}

static const struct admission_candidate *cand(const struct admission *a, const char *name) {
  for (size_t i = 0; i < a->n; i++)
    if (!strcmp(a->cand[i].backend->name, name)) return &a->cand[i];
  fail_msg("no candidate %s", name);
  return NULL;
}

static void base_call_digests_match_article(void **s) {
  (void)s;
  struct dispatch_key k = base_call();
  struct dkb_err err;
  char hex[65], other[65];
  assert_int_equal(dispatch_key_digest(&k, DK_TEACHING, hex, &err), 0);
  assert_string_equal(hex, BASE_DIGEST);
  struct plan_key p;
  plan_key_project(&k, &p);
  assert_int_equal(plan_key_digest(&p, other, &err), 0);
  assert_string_equal(other, PLAN_DIGEST);
  k.head_dim_qk = 64; /* changing only d_qk changes the teaching digest */
  assert_int_equal(dispatch_key_digest(&k, DK_TEACHING, other, &err), 0);
  assert_string_not_equal(other, BASE_DIGEST);
  assert_string_equal(other, "65ce2f4ef16230b2a55cb61f6ecb66a044a884567490fae254bb246151c3737d");
}

/* The same bytes hashed by Python's json.dumps(sort_keys, compact): the digest is reproducible from
 * the readable key alone. */
static void teaching_key_digest_reproduces_in_python(void **s) {
  (void)s;
  struct dispatch_key k = base_call();
  json_t *j = dispatch_key_to_json(&k, DK_TEACHING);
  assert_int_equal(json_object_size(j), 20);
  char *text = json_dumps(j, JSON_INDENT(1)); /* any layout: python re-serializes it */
  const char *path = tmp_file("teaching_key.json", text);
  free(text);
  json_decref(j);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 -c 'import json,hashlib,sys; d=json.load(open(sys.argv[1])); "
             "print(hashlib.sha256(json.dumps(d,sort_keys=True,separators=(\",\",\":\")).encode()).hexdigest())' %s",
         path);
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, BASE_DIGEST "\n");
  run_result_release(&r);
}

struct matrix_case {
  const char *name;
  enum admission_outcome outcome;
  const char *selected;
};

static void seven_case_matrix_reproduces_0x07D(void **s) {
  (void)s;
  struct dispatch_key k[7];
  for (int i = 0; i < 7; i++) k[i] = base_call();
  k[1].mask_kind = DK_MASK_DENSE_CUSTOM, k[1].cuda_graph = 0;
  k[2].head_dim_qk = k[2].head_dim_vo = 80, k[2].cuda_graph = 0;
  k[3].mask_kind = DK_MASK_DENSE_CUSTOM, k[3].cuda_graph = 0;
  snprintf(k[3].backend_request, sizeof k[3].backend_request, "decode_paged_fast");
  k[4].phase = DK_PREFILL, k[4].q_len = 128, k[4].cache_layout = DK_CONTIGUOUS_NHD, k[4].page_size = DK_ABSENT;
  k[5].device_type = k[5].workspace_device_type = DK_CPU, k[5].compute_capability = DK_ABSENT;
  k[5].cache_layout = DK_CONTIGUOUS_NHD, k[5].page_size = DK_ABSENT, k[5].cuda_graph = 0;
  k[6].mask_kind = DK_MASK_DENSE_CUSTOM;
  static const struct matrix_case want[7] = {
      {"paged decode", ADM_SELECTED, "decode_paged_fast"},
      {"custom mask", ADM_SELECTED_AFTER_FALLBACK, "paged_reference"},
      {"head dimension", ADM_SELECTED_AFTER_FALLBACK, "paged_reference"},
      {"forced custom-mask fast path", ADM_FORCED_ERROR, NULL},
      {"prefill", ADM_SELECTED, "prefill_contiguous_fast"},
      {"CPU decode", ADM_SELECTED, "math_reference"},
      {"custom mask under graph mode", ADM_NO_ELIGIBLE, NULL},
  };
  static struct admission a[7];
  int selections = 0, errors = 0, fallbacks = 0;
  for (int i = 0; i < 7; i++) {
    const struct dispatch_backend *b = dispatch_admit(&dispatch_teaching_registry, &k[i], &a[i]);
    if (a[i].outcome != want[i].outcome) fail_msg("%s: outcome %s", want[i].name, admission_outcome_name(a[i].outcome));
    if (want[i].selected) assert_string_equal(b->name, want[i].selected);
    else assert_null(b);
    selections += b != NULL;
    errors += b == NULL;
    fallbacks += admission_backend_fallback(&a[i]);
  }
  assert_int_equal(selections, 5);
  assert_int_equal(errors, 2);
  assert_int_equal(fallbacks, 2);

  /* base: nothing above the winner, the complete vectors below it */
  assert_true(a[0].cand[0].eligible && a[0].selected == 0);
  assert_reasons(&cand(&a[0], "paged_reference")->reasons, 1, (const char *[]){"cuda_graph=true unsupported"});
  assert_reasons(&cand(&a[0], "math_reference")->reasons, 1, (const char *[]){"cache_layout=paged_nhd unsupported"});
  assert_false(cand(&a[0], "prefill_contiguous_fast")->in_domain);
  /* custom mask: the fast path rejects the mask */
  assert_reasons(&cand(&a[1], "decode_paged_fast")->reasons, 1, (const char *[]){"mask_kind=dense_custom unsupported"});
  /* head dimension: both failed predicates kept */
  const struct admission_candidate *hd = cand(&a[2], "decode_paged_fast");
  assert_reasons(&hd->reasons, 2, (const char *[]){"head_dim_qk=80 unsupported", "head_dim_vo=80 unsupported"});
  assert_true(hd->reasons.factor[0] == 'Q' && hd->reasons.factor[1] == 'Q');
  /* forced: its reasons, no fallback although paged_reference is eligible */
  assert_reasons(&a[3].error, 1, (const char *[]){"mask_kind=dense_custom unsupported"});
  assert_true(cand(&a[3], "paged_reference")->eligible);
  assert_int_equal(a[3].selected, -1);
  /* prefill: the candidate domain changes, no fallback is reported */
  assert_false(cand(&a[4], "decode_paged_fast")->in_domain);
  assert_reasons(&cand(&a[4], "decode_paged_fast")->domain, 1, (const char *[]){"phase=prefill not in domain"});
  assert_false(admission_backend_fallback(&a[4]));
  /* CPU: every CUDA backend leaves the domain */
  for (size_t i = 0; i < a[5].n; i++)
    assert_int_equal(a[5].cand[i].in_domain, !strcmp(a[5].cand[i].backend->name, "math_reference"));
  /* graph + dense mask: every in-domain candidate has reasons */
  for (size_t i = 0; i < a[6].n; i++)
    if (a[6].cand[i].in_domain) assert_true(a[6].cand[i].reasons.n > 0);
}

static void malformed_calls_are_errors_not_unsupported(void **s) {
  (void)s;
  struct admission a;
  struct dispatch_key k = base_call();
  k.num_q_heads = 30;
  assert_null(dispatch_admit(&dispatch_teaching_registry, &k, &a));
  assert_int_equal(a.outcome, ADM_MALFORMED_CALL);
  assert_int_equal(a.n, 0); /* no backend was asked */
  assert_reasons(&a.malformed, 1, (const char *[]){"num_q_heads=30 is not a multiple of num_kv_heads=8"});

  k = base_call();
  k.q_len = 0, k.kv_len = -1, k.dropout_p = 1.5, k.page_size = DK_ABSENT;
  dispatch_admit(&dispatch_teaching_registry, &k, &a);
  assert_reasons(&a.malformed, 4,
                 (const char *[]){"q_len=0 must be > 0", "kv_len=-1 must be > 0", "dropout_p=1.5 outside [0, 1]",
                                  "cache_layout=paged_nhd requires page_size"});
  k = base_call();
  k.cache_layout = DK_CONTIGUOUS_NHD; /* page_size 16 without paging */
  k.mask_kind = DK_MASK_SLIDING_WINDOW;
  k.device_type = DK_CPU;
  dispatch_admit(&dispatch_teaching_registry, &k, &a);
  assert_reasons(&a.malformed, 4,
                 (const char *[]){"page_size=16 given for non-paged cache_layout=contiguous_nhd",
                                  "mask_kind=sliding_window requires window > 0",
                                  "compute_capability=90 given for device_type=cpu",
                                  "cuda_graph=true requires device_type=cuda"});
  k = base_call();
  k.training = 1;
  struct admit_reasons why;
  admit_reasons_clear(&why);
  assert_int_equal(dispatch_key_check(&k, &why), 1);
  assert_string_equal(why.text[0], "training=true contradicts phase=decode");
}

static void forced_backend_never_falls_back(void **s) {
  (void)s;
  struct admission a;
  struct dispatch_key k = base_call();
  snprintf(k.backend_request, sizeof k.backend_request, "paged_reference");
  assert_null(dispatch_admit(&dispatch_teaching_registry, &k, &a)); /* decode_paged_fast is eligible, unused */
  assert_int_equal(a.outcome, ADM_FORCED_ERROR);
  assert_reasons(&a.error, 1, (const char *[]){"cuda_graph=true unsupported"});
  assert_true(a.cand[0].eligible);
  k.cuda_graph = 0;
  const struct dispatch_backend *b = dispatch_admit(&dispatch_teaching_registry, &k, &a);
  assert_string_equal(b->name, "paged_reference");
  assert_int_equal(a.outcome, ADM_SELECTED); /* forced success is not a fallback */
  snprintf(k.backend_request, sizeof k.backend_request, "nope");
  assert_null(dispatch_admit(&dispatch_teaching_registry, &k, &a));
  assert_reasons(&a.error, 1, (const char *[]){"backend_request=nope is not registered in registry teaching"});
}

static void plan_lifecycle_reuses_or_replans(void **s) {
  (void)s;
  struct dispatch_key k = base_call(), run;
  struct plan_key planned, now;
  const char *changed[16];
  plan_key_project(&k, &planned);
  run = k, run.kv_len = 4113, run.batch = 3; /* declared dynamic lengths / page list */
  plan_key_project(&run, &now);
  assert_int_equal(plan_key_diff(&planned, &now, changed, 16), 0);
  run = k, run.head_dim_qk = run.head_dim_vo = 256;
  plan_key_project(&run, &now);
  assert_int_equal(plan_key_diff(&planned, &now, changed, 16), 2);
  assert_string_equal(changed[0], "head_dim_qk");
  assert_string_equal(changed[1], "head_dim_vo");
  run = k, run.workspace_device_index = 1;
  plan_key_project(&run, &now);
  assert_int_equal(plan_key_diff(&planned, &now, changed, 16), 1);
  assert_string_equal(changed[0], "workspace_device");
  run = k, run.cuda_graph = 0;
  plan_key_project(&run, &now);
  assert_int_equal(plan_key_diff(&planned, &now, changed, 16), 1);
  assert_string_equal(changed[0], "cuda_graph");
}

/* A second table in the same machinery, the way dkb's CUDA backends will be registered. */
static void sm90_only(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  (void)b;
  if (k->compute_capability != 90) admit_fail(out, "compute_capability=%lld unsupported", k->compute_capability);
}
static void head_dim_compiled(const struct dispatch_backend *b, const struct dispatch_key *k, struct admit_reasons *out) {
  const long long *dims = b->caps;
  for (int i = 0; dims[i]; i++)
    if (dims[i] == k->head_dim_qk) return;
  admit_fail(out, "head_dim_qk=%lld not compiled in", k->head_dim_qk);
}
static const long long DIMS_A[] = {128, 0}, DIMS_B[] = {64, 128, 256, 0};
static const struct dispatch_backend OWN[] = {
    {"own_split_kv", 1, 1u << DK_CUDA, 1u << DK_DECODE, {[ADMIT_I] = head_dim_compiled, [ADMIT_H] = sm90_only}, DIMS_A,
     "test"},
    {"own_generic", 2, 1u << DK_CUDA, 1u << DK_DECODE, {[ADMIT_I] = head_dim_compiled}, DIMS_B, "test"},
};
static const struct dispatch_registry OWN_REG = {"own", OWN, 2};

static void separate_registry_uses_same_stages(void **s) {
  (void)s;
  char why[128];
  assert_int_equal(dispatch_registry_check(&OWN_REG, why, sizeof why), 0);
  struct admission a;
  struct dispatch_key k = base_call();
  k.compute_capability = 100;
  k.head_dim_qk = k.head_dim_vo = 64;
  const struct dispatch_backend *b = dispatch_admit(&OWN_REG, &k, &a);
  assert_string_equal(b->name, "own_generic");
  assert_int_equal(a.outcome, ADM_SELECTED_AFTER_FALLBACK);
  assert_reasons(&a.cand[0].reasons, 2,
                 (const char *[]){"head_dim_qk=64 not compiled in", "compute_capability=100 unsupported"});
  assert_true(a.cand[0].reasons.factor[0] == 'I' && a.cand[0].reasons.factor[1] == 'H');
  static const struct dispatch_backend DUP[] = {OWN[0], {"other", 1, 1u << DK_CUDA, 1u << DK_DECODE, {0}, NULL, ""}};
  static const struct dispatch_registry DUP_REG = {"dup", DUP, 2};
  assert_int_equal(dispatch_registry_check(&DUP_REG, why, sizeof why), -1);
  assert_string_equal(why, "backends own_split_kv and other share a name or a priority");
}

/* The why line of an admission that selected nothing, built afresh in b. */
static const char *why_none(const struct admission *a, struct dkb_buf *b) {
  dkb_buf_release(b);
  dkb_buf_init(b);
  admission_why_none(a, b);
  return b->p;
}

/* The one-line why of an empty admission names each refused in-domain candidate with every reason,
 * a forced backend's reasons, or the malformed call's; a selection appends nothing. */
static void why_none_names_every_refused_candidate(void **s) {
  (void)s;
  struct admission a;
  struct dkb_buf b;
  dkb_buf_init(&b);
  struct dispatch_key k = base_call();
  k.compute_capability = 100;
  k.head_dim_qk = k.head_dim_vo = 80;
  assert_null(dispatch_admit(&OWN_REG, &k, &a));
  assert_string_equal(why_none(&a, &b), "every candidate was refused: own_split_kv (head_dim_qk=80 not compiled in; "
                                        "compute_capability=100 unsupported); own_generic (head_dim_qk=80 not compiled in)");
  snprintf(k.backend_request, sizeof k.backend_request, "own_generic");
  assert_null(dispatch_admit(&OWN_REG, &k, &a));
  assert_string_equal(why_none(&a, &b), "the forced backend own_generic was refused: head_dim_qk=80 not compiled in");
  k = base_call();
  k.num_q_heads = 30;
  assert_null(dispatch_admit(&OWN_REG, &k, &a));
  assert_string_equal(why_none(&a, &b), "the call is malformed: num_q_heads=30 is not a multiple of num_kv_heads=8");
  k = base_call();
  k.phase = DK_PREFILL; /* no backend's domain */
  assert_null(dispatch_admit(&OWN_REG, &k, &a));
  assert_string_equal(why_none(&a, &b), "every candidate was refused: no backend's domain (platform, phase) holds this call");
  k = base_call();
  assert_non_null(dispatch_admit(&OWN_REG, &k, &a));
  assert_null(why_none(&a, &b));
  /* requests: auto and registered names pass and append nothing; anything else says what could be named */
  dkb_buf_release(&b);
  dkb_buf_init(&b);
  assert_int_equal(dispatch_request_known(&OWN_REG, "auto", &b), 1);
  assert_int_equal(dispatch_request_known(&OWN_REG, "own_generic", &b), 1);
  assert_null(b.p);
  assert_int_equal(dispatch_request_known(&OWN_REG, "own", &b), 0);
  assert_string_equal(b.p, "'own' is not a backend of registry own (known: auto, own_split_kv, own_generic)");
  dkb_buf_release(&b);
}

static void admission_record_is_schema_valid(void **s) {
  (void)s;
  struct admission a;
  struct dkb_err err;
  struct dispatch_key keys[3] = {base_call(), base_call(), base_call()};
  keys[1].head_dim_qk = keys[1].head_dim_vo = 80, keys[1].cuda_graph = 0;
  keys[2].num_q_heads = 30;
  char paths[3][600];
  for (int i = 0; i < 3; i++) {
    dispatch_admit(&dispatch_teaching_registry, &keys[i], &a);
    json_t *j = admission_to_json(&a, &err);
    assert_non_null(j);
    struct dkb_buf b;
    dkb_buf_init(&b);
    assert_int_equal(cjson_write(j, 2, &b, &err), 0);
    char name[32];
    snprintf(name, sizeof name, "admission%d.json", i);
    snprintf(paths[i], sizeof paths[i], "%s", tmp_file(name, b.p));
    dkb_buf_release(&b);
    json_decref(j);
  }
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/admission.schema.json %s %s %s", paths[0], paths[1],
         paths[2]);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

static int verify(const struct admission *a, const char *claimed_text, char reason[64]) {
  struct dkb_err err;
  dkb_err_clear(&err);
  struct jr r = {.file = "claimed", .err = &err, .code = DKB_INPUT};
  json_t *c = jr_load_string(claimed_text, "claimed", &err);
  assert_non_null(c);
  char detail[512];
  int rc = admission_verify(&r, c, "", a, reason, detail, sizeof detail);
  json_decref(c);
  return rc;
}

static void recorded_admission_is_verified(void **s) {
  (void)s;
  struct admission a;
  struct dispatch_key k = base_call();
  k.head_dim_qk = k.head_dim_vo = 80, k.cuda_graph = 0;
  dispatch_admit(&dispatch_teaching_registry, &k, &a);
  char reason[64];
  struct dkb_err err;
  json_t *own = admission_to_json(&a, &err); /* the record verifies against itself */
  char *text = json_dumps(own, 0);
  assert_int_equal(verify(&a, text, reason), 0);
  free(text);
  json_decref(own);
  assert_int_equal(verify(&a, "{\"candidates\": [{\"backend\": \"decode_paged_fast\", \"reasons\": "
                              "[\"head_dim_qk=80 unsupported\"]}]}", reason), 1);
  assert_string_equal(reason, "truncated_rejection_vector");
  assert_int_equal(verify(&a, "{\"selected\": \"math_reference\"}", reason), 1);
  assert_string_equal(reason, "paged_cache_without_address_contract");
  assert_int_equal(verify(&a, "{\"backend_fallback\": false}", reason), 1);
  assert_string_equal(reason, "fallback_mismatch");
  assert_int_equal(verify(&a, "{\"candidate_order\": [\"paged_reference\"]}", reason), 1);
  assert_string_equal(reason, "record_mismatch");
  assert_int_equal(verify(&a, "{\"candidates\": [{\"backend\": \"math_reference\", \"priority\": 1}]}", reason), 1);
  assert_string_equal(reason, "record_mismatch");
  snprintf(k.backend_request, sizeof k.backend_request, "decode_paged_fast");
  dispatch_admit(&dispatch_teaching_registry, &k, &a);
  assert_int_equal(verify(&a, "{\"selected\": \"paged_reference\"}", reason), 1);
  assert_string_equal(reason, "forced_backend_fallback");
}

/* A dispatch fixture whose key is not even a key is a document error with its JSON Pointer (exit 3);
 * a key that is a malformed call is not (it becomes a malformed_call_error report). */
static void malformed_dispatch_fixtures_name_the_pointer(void **s) {
  (void)s;
  static const char KEY[] =
      "{\"phase\": \"decode\", \"device_type\": \"cuda\", \"compute_capability\": 90, \"dtype\": \"fp16\", "
      "\"kv_dtype\": \"fp16\", \"q_len\": 1, \"kv_len\": 4096, \"num_q_heads\": 32, \"num_kv_heads\": 8, "
      "\"head_dim_qk\": 128, \"head_dim_vo\": 128, \"cache_layout\": \"paged_nhd\", \"page_size\": 16, "
      "\"mask_kind\": \"causal\", \"dropout_p\": 0.0, \"training\": false, \"requires_deterministic\": true, "
      "\"cuda_graph\": true, \"last_dim_contiguous\": true, \"backend_request\": \"auto\"}";
  static const struct { const char *name, *input, *want; } cases[] = {
      {"change.json", "{\"plan\": %s, \"runs\": [{\"name\": \"x\", \"change\": {\"head_dim\": 3}}]}",
       "dkb: error: %s: /input/runs/0/change/head_dim: unknown key\n"},
      {"enum.json", "{\"plan\": %s, \"runs\": [{\"name\": \"x\", \"change\": {\"cache_layout\": \"paged\"}}]}",
       "dkb: error: %s: /input/runs/0/change/cache_layout: must be one of: contiguous_nhd, contiguous_hnd, ragged, "
       "paged_nhd, paged_hnd (got 'paged')\n"},
      {"device.json", "{\"plan\": %s, \"runs\": [{\"name\": \"x\", \"change\": {\"workspace_device\": \"gpu1\"}}]}",
       "dkb: error: %s: /input/runs/0/change/workspace_device: must be 'cpu' or 'cuda:N' (got 'gpu1')\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char input[4096], doc[4600], want[512];
    snprintf(input, sizeof input, cases[i].input, KEY);
    snprintf(doc, sizeof doc, "{\"schema\": \"dkb.contract/v1\", \"contract\": \"dispatch_plan\", \"name\": \"n\", "
             "\"input\": %s, \"expect\": []}", input);
    const char *path = tmp_file(cases[i].name, doc);
    struct run_result r;
    run_sh(&r, "build/dkb oracle %s", path);
    assert_int_equal(r.rc, 3);
    snprintf(want, sizeof want, cases[i].want, path);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
}

/* The key's one field table drives its JSON, its reader and its required keys: the full form reads back
 * to itself; each teaching field is required and each extra optional; and a change to any one member
 * read back changes the key's digest (a field the reader dropped or the writer left out would not). */
static void key_json_reads_back_field_by_field(void **s) {
  (void)s;
  struct dispatch_key k = base_call(), back;
  k.batch = 3;
  k.device_index = 1;
  k.window = 64;
  k.workspace_bytes = 4096;
  k.workspace_device_type = DK_CPU;
  k.workspace_device_index = 0;
  struct dkb_err err;
  struct jr r = {"key.json", &err, DKB_INPUT};
  json_t *full = dispatch_key_to_json(&k, DK_FULL), *teach = dispatch_key_to_json(&k, DK_TEACHING);
  assert_int_equal(json_object_size(teach), 20);
  assert_int_equal(json_object_size(full), 25);
  assert_int_equal(dispatch_key_read(&r, full, "", &back), 0);
  json_t *again = dispatch_key_to_json(&back, DK_FULL);
  assert_true(json_equal(full, again));
  json_decref(again);
  char base_hex[65], hex[65];
  assert_int_equal(cjson_digest(full, base_hex, &err), 0);
  const char *name;
  json_t *v;
  json_object_foreach(full, name, v) {
    const int teaching = json_object_get(teach, name) != NULL;
    json_t *doc = json_deep_copy(full);
    json_object_del(doc, name);
    int rc = dispatch_key_read(&r, doc, "", &back);
    if (teaching) {
      char want[128];
      snprintf(want, sizeof want, "missing required key '%s'", name);
      if (rc != -1 || strcmp(err.msg, want)) fail_msg("without %s: rc %d, %s", name, rc, err.msg);
    } else if (rc) fail_msg("without %s: %s", name, err.msg);
    json_decref(doc);
    /* another value of the member's type */
    doc = json_deep_copy(full);
    json_t *w = json_is_integer(v) ? json_integer(json_integer_value(v) + 1)
                : json_is_real(v) ? json_real(json_real_value(v) + 0.5)
                : json_is_boolean(v) ? json_boolean(!json_is_true(v))
                : json_is_null(v) ? json_integer(7)
                : !strcmp(name, "workspace_device") ? json_string("cuda:3")
                : !strcmp(name, "backend_request") ? json_string("fa2")
                : !strcmp(name, "phase") ? json_string("append")
                : !strcmp(name, "device_type") ? json_string("cpu")
                : !strcmp(name, "cache_layout") ? json_string("ragged")
                : !strcmp(name, "mask_kind") ? json_string("none")
                : json_string("bf16");  /* dtype, kv_dtype */
    json_object_set_new(doc, name, w);
    if (dispatch_key_read(&r, doc, "", &back)) fail_msg("%s changed: %s", name, err.msg);
    json_t *changed = dispatch_key_to_json(&back, DK_FULL);
    assert_int_equal(cjson_digest(changed, hex, &err), 0);
    if (!strcmp(hex, base_hex)) fail_msg("changing %s left the key's digest as it was", name);
    json_decref(changed);
    json_decref(doc);
  }
  json_decref(full);
  json_decref(teach);
}

DKB_TEST_GROUP(registry, cmocka_unit_test(base_call_digests_match_article),
               cmocka_unit_test(key_json_reads_back_field_by_field),
               cmocka_unit_test(teaching_key_digest_reproduces_in_python),
               cmocka_unit_test(seven_case_matrix_reproduces_0x07D),
               cmocka_unit_test(malformed_calls_are_errors_not_unsupported),
               cmocka_unit_test(forced_backend_never_falls_back), cmocka_unit_test(plan_lifecycle_reuses_or_replans),
               cmocka_unit_test(separate_registry_uses_same_stages), cmocka_unit_test(why_none_names_every_refused_candidate),
               cmocka_unit_test(admission_record_is_schema_valid), cmocka_unit_test(recorded_admission_is_verified),
               cmocka_unit_test(malformed_dispatch_fixtures_name_the_pointer))
