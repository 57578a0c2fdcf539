/* test_call_key.c - the readable call key (evidence/call_key.h, harness/decode_call.c): every field of the
 * table follows its input in the fixture, so two fixtures differing in any one of them never share a
 * digest; the key holds exactly the table's fields; and dkb run of each captured fixture on this host
 * reproduces the call-key digest its H200 bundle recorded. */
#include "tests/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "evidence/call_key.h"
#include "harness/decode_call.h"
#include "lib/cjson.h"
#include "lib/jread.h"

/* For each row of CALL_KEY_FIELDS: a fixture where the field applies and one change to that fixture that
 * must change the field (fixture NULL: the field is a constant of the key). A field written only where the
 * fixture departs from a default (the pool's placement) is absent from the fixture's key and present after
 * the change (off_default). */
static const struct flip {
  const char *id, *fixture, *pointer, *value;
  int off_default;
} FLIPS[] = {
    {"schema", NULL, NULL, NULL},
    {"phase", "default", "/phase", "\"append\""},
    {"B", "default", "/requests", "[{\"kv_len\": 4096}, {\"kv_len\": 3587}, {\"kv_len\": 1024}, {\"kv_len\": 257}, {\"kv_len\": 9}]"},
    {"S_q", "default", "/q_len", "2"},
    {"S_k_per_request", "default", "/requests/3/kv_len", "258"},
    {"H_q", "default", "/heads/H_q", "16"},
    {"H_kv", "default", "/heads/H_kv", "4"},
    {"d_qk", "default", "/heads/d_qk", "64"},
    {"d_v", "default", "/heads/d_v", "64"},
    {"q_dtype", "default", "/dtype", "\"fp16\""},
    {"kv_dtype", "default", "/dtype", "\"fp16\""},
    {"o_dtype", "default", "/dtype", "\"fp16\""},
    {"cache_layout", "default", "/cache/layout", "\"paged_hnd\""},
    {"page_size", "default", "/cache/page_size", "32"},
    {"page_table", "default", "/cache/table", "\"dense\""},
    {"page_order", "default", "/cache/page_order", "\"sequential\"", 1},
    {"shuffle_group", "default", "/cache/shuffle_group", "64", 1},
    {"pool_extra_pages", "default", "/cache/pool_extra_pages", "0", 1},
    {"cache_capacity", "ragged-contig-hnd-fp16-d64-g1-remap", "/cache/capacity", "4200"},
    {"cache_batch_idx", "ragged-contig-hnd-fp16-d64-g1-remap", "/requests/0/cache_row", "12"},
    {"mask", "default", "/mask", "{\"kind\": \"none\"}"},
    {"mask_kind", "default", "/mask/kind", "\"none\""},
    {"mask_window", "window-sink-paged", "/mask/window", "64"},
    {"mask_sink", "window-sink-paged", "/mask/sink", "0"},
    {"mask_program", "flashmask-explicit-all-masked", "/mask", "{\"kind\": \"flashmask\", \"program\": \"documents\", \"documents\": 2}"},
    {"mask_documents", "flashmask-documents", "/mask/documents", "2"},
    {"mask_columns", "flashmask-explicit-all-masked", "/mask/columns/0/0", "[1, 2, 0, 0]"},
    {"split", "default", "/split", "{\"policy\": \"fixed\", \"splits\": 2}"},
    {"split_policy", "default", "/split", "{\"policy\": \"chunk\", \"chunk\": 256}"},
    {"split_splits", "append-contig-sq1", "/split/splits", "4"},
    {"split_capacity", "paged-dense-p16-capacity", "/split/capacity", "16"},
    {"split_chunk", "ragged-packed-fp16-d96-g8", "/split/chunk", "64"},
    {"split_max_splits", "default", "/split", "{\"policy\": \"auto\", \"max_splits\": 8}"},
    {"workspace", "default", "/workspace", "{\"abi\": \"lse_o\"}"},
    {"workspace_abi", "default", "/workspace", "{\"abi\": \"lse_o\"}"},
    {"workspace_o_dtype", "cluster-lse-o-fp32-sq2", "/workspace/o_dtype", "\"bf16\""},
    {"return_lse", "default", "/return_lse", "false"},
    {"graph_mode", "default", "/graph", "true"},
    {"backend_request", "default", "/backend", "\"dkb_naive_reference\""},
    {"scale", "default", "/scale", "0.125"},
    {"seed", "default", "/seed", "2"},
    {"tolerances", "default", "/tolerance/atol", "0.004"},
    {"tolerances_atol", "default", "/tolerance/atol", "0.004"},
    {"tolerances_rtol", "default", "/tolerance/rtol", "0.032"},
    {"tolerances_lse_atol", "default", "/tolerance/lse_atol", "0.0004"},
    {"tolerances_lse_rtol", "default", "/tolerance/lse_rtol", "4e-05"},
};
#define NFLIPS (sizeof FLIPS / sizeof *FLIPS)

static json_t *load_json(const char *path) {
  struct dkb_err err;
  json_t *doc = jr_load_file(path, &err);
  if (!doc) fail_msg("%s: %s", path, err.msg);
  return doc;
}

/* The call key of a fixture document (a copy: the key shares mask columns with the document); its digest
 * in hex. */
static json_t *key_of(json_t *doc, const char *name, char hex[65]) {
  struct decode_call c;
  struct dkb_err err;
  if (decode_call_from_json(name, doc, &c, &err)) fail_msg("%s: %s: %s", name, err.pointer, err.msg);
  json_t *shared = decode_call_key(&c), *k = json_deep_copy(shared);
  json_decref(shared);
  decode_call_release(&c);
  if (cjson_digest(k, hex, &err)) fail_msg("%s: %s", name, err.msg);
  return k;
}

/* doc[pointer] = the JSON text value. */
static void set_at(json_t *doc, const char *pointer, const char *value) {
  char parent[DKB_PTR_MAX];
  const char *slash = strrchr(pointer, '/');
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - pointer), pointer);
  json_error_t je;
  json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
  json_t *p = jr_resolve(doc, parent);
  if (!v || !p) fail_msg("cannot set %s to %s", pointer, value);
  if (json_is_array(p)) json_array_set_new(p, (size_t)atoi(slash + 1), v);
  else json_object_set_new(p, slash + 1, v);
}

static const struct flip *flip_of(const char *id) {
  for (size_t i = 0; i < NFLIPS; i++)
    if (!strcmp(FLIPS[i].id, id)) return &FLIPS[i];
  return NULL;
}

/* Each field of the table, changed in its fixture, changes that field of the key and the key's digest; the
 * pool's placement appears in the key exactly where the fixture leaves the default pool. */
static void every_field_follows_its_fixture_input(void **s) {
  (void)s;
  for (size_t i = 0; i < NFLIPS; i++) {
    int in_table = 0;
    for (size_t k = 0; k < call_key_nfields; k++) in_table |= !strcmp(call_key_fields[k].id, FLIPS[i].id);
    if (!in_table) fail_msg("the test changes '%s', which evidence/call_key.h does not list", FLIPS[i].id);
  }
  for (size_t k = 0; k < call_key_nfields; k++) {
    const struct call_key_field *f = &call_key_fields[k];
    const struct flip *fl = flip_of(f->id);
    if (!fl) fail_msg("no change of a fixture for the call-key field '%s' (%s)", f->id, f->pointer);
    char path[256], before[65], after[65];
    if (!fl->fixture) {  /* a constant: present in every key */
      json_t *doc = load_json("fixtures/decode/default.json");
      json_t *key = key_of(doc, "default", before);
      if (!jr_resolve(key, f->pointer)) fail_msg("the key has no %s", f->pointer);
      json_decref(key);
      json_decref(doc);
      continue;
    }
    snprintf(path, sizeof path, "fixtures/decode/%s.json", fl->fixture);
    json_t *doc = load_json(path);
    json_t *key = key_of(doc, path, before);
    const json_t *was = jr_resolve(key, f->pointer);
    if (!was && !fl->off_default) fail_msg("%s: the key has no %s", fl->fixture, f->pointer);
    if (was && fl->off_default) fail_msg("%s: the key writes %s for the default", fl->fixture, f->pointer);
    set_at(doc, fl->pointer, fl->value);
    json_t *key2 = key_of(doc, path, after);
    const json_t *now = jr_resolve(key2, f->pointer);
    if (!now && fl->off_default) fail_msg("%s with %s = %s: the key has no %s", fl->fixture, fl->pointer, fl->value, f->pointer);
    if (now && json_equal(was, now)) fail_msg("%s with %s = %s: the key's %s did not change", fl->fixture, fl->pointer, fl->value, f->pointer);
    if (!strcmp(before, after)) fail_msg("%s with %s = %s: the call-key digest did not change", fl->fixture, fl->pointer, fl->value);
    json_decref(key);
    json_decref(key2);
    json_decref(doc);
  }
}

/* Every member of a key, objects' members included, is a row of the table: nothing is written that the
 * table (and so the ladder and this test) does not know. */
static void check_members(const json_t *o, const char *base, const char *fixture) {
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)o, name, v) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, base, name);
    const struct call_key_field *row = NULL;
    for (size_t k = 0; k < call_key_nfields && !row; k++)
      if (!strcmp(call_key_fields[k].pointer, p)) row = &call_key_fields[k];
    if (!row) fail_msg("%s: the key writes %s, which evidence/call_key.h does not list", fixture, p);
    if (row->type == CK_OBJ || (row->type == CK_STR_OR_OBJ && json_is_object(v))) check_members(v, p, fixture);
  }
}

static void every_key_member_is_a_row_of_the_table(void **s) {
  (void)s;
  DIR *d = opendir("fixtures/decode");
  assert_non_null(d);
  struct dirent *e;
  size_t n = 0;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
    char path[512], hex[65];
    snprintf(path, sizeof path, "fixtures/decode/%s", e->d_name);
    json_t *doc = load_json(path);
    json_t *key = key_of(doc, path, hex);
    check_members(key, "", path);
    for (size_t k = 0; k < call_key_nfields; k++)
      if (call_key_fields[k].need == CK_REQUIRED && !jr_resolve(key, call_key_fields[k].pointer))
        fail_msg("%s: the key lacks the required %s", path, call_key_fields[k].pointer);
    json_decref(key);
    json_decref(doc);
    n++;
  }
  closedir(d);
  assert_true(n >= 30);
}

/* dkb run on this host (no GPU needed: the key is written before any launch) of the fixture each captured
 * bundle names, with the backend it requested, gives the call-key digest that bundle recorded on the H200.
 * A plugin backend's bundle needs its plugin built here (make plugins, as CI does); one that is not is
 * named, and dkb's own bundles are always reproduced. */
static void captured_fixtures_reproduce_their_call_key_digest(void **s) {
  (void)s;
  DIR *d = opendir("fixtures/captured/bundles");
  assert_non_null(d);
  struct dirent *e;
  size_t n = 0;
  while ((e = readdir(d))) {
    char bpath[512];
    snprintf(bpath, sizeof bpath, "fixtures/captured/bundles/%s/bundle.json", e->d_name);
    if (e->d_name[0] == '.' || access(bpath, F_OK)) continue;
    json_t *b = load_json(bpath);
    const char *fixture = json_string_value(jr_resolve(b, "/fixture/path"));
    const char *want = json_string_value(jr_resolve(b, "/dispatch/call_key_sha256"));
    const char *backend = json_string_value(jr_resolve(b, "/dispatch/call_key/backend_request"));
    const char *plugin = json_string_value(jr_resolve(b, "/loaded/plugin/path"));
    assert_non_null(fixture);
    assert_non_null(want);
    assert_non_null(backend);
    char lib[600] = "";
    if (plugin) {
      snprintf(lib, sizeof lib, "--plugin build/plugins/%s", strrchr(plugin, '/') ? strrchr(plugin, '/') + 1 : plugin);
      if (access(lib + 9, R_OK)) {
        print_message("[  NOTE    ] %s: %s not built (make plugins): its call key is not reproduced here\n", e->d_name, lib + 9);
        json_decref(b);
        continue;
      }
    }
    struct run_result r;
    run_sh(&r, "rm -rf %s/ck && build/dkb run %s -o %s/ck --no-timing --quiet --backend %s %s", tmp_dir(), fixture, tmp_dir(),
           backend, lib);
    if (r.rc != 0) fail_msg("dkb run %s: exit %d\n%s%s", fixture, r.rc, r.out, r.err);
    run_result_release(&r);
    char out[512];
    snprintf(out, sizeof out, "%s/ck/bundle.json", tmp_dir());
    json_t *got = load_json(out);
    const char *have = json_string_value(jr_resolve(got, "/dispatch/call_key_sha256"));
    if (!have || strcmp(have, want)) fail_msg("%s: dkb run gives call key %s, the captured bundle %s", e->d_name, have ? have : "none", want);
    json_decref(got);
    json_decref(b);
    n++;
  }
  closedir(d);
  assert_true(n >= 6);
}

DKB_TEST_GROUP(call_key, cmocka_unit_test(every_field_follows_its_fixture_input),
               cmocka_unit_test(every_key_member_is_a_row_of_the_table),
               cmocka_unit_test(captured_fixtures_reproduce_their_call_key_digest))
