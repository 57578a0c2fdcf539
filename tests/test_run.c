/* test_run.c - the decode call end to end: fixture loading and its exact errors, the plan's coverage
 * of visible keys, `dkb run` without a GPU (an honest level-2 bundle, exit codes), NumPy dumps that an
 * independent float64 reference reproduces to 1e-12, `dkb bench` outputs; and on a GPU every decode
 * fixture at level 6 with split = k agreeing with split = 1. */
#include "tests/util.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/backends.h"
#include "harness/bench.h"
#include "harness/builtin.h"
#include "harness/decode_call.h"
#include "lib/fsutil.h"
#include "harness/inputs.h"
#include "harness/plan.h"
#include "lib/jread.h"
#include "kernels/decode.h"
#include "oracles/compare.h"
#include "oracles/dtype.h"

static void decode_fixtures_are_schema_valid_and_load(void **s) {
  (void)s;
  struct run_result r;
  /* fixtures/bench holds the bench matrices beside the fixtures they list: told apart by their schema */
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/decode.schema.json fixtures/decode/*.json "
             "$(grep -L '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json) && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench-matrix.schema.json "
             "$(grep -l '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json)");
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  run_sh(&r, "ls fixtures/decode/*.json; grep -L '\"dkb.bench-matrix/v1\"' fixtures/bench/*.json");
  char *save = NULL;
  for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct decode_call c;
    struct dkb_err e;
    if (decode_call_load(line, &c, &e)) fail_msg("%s: %s", line, e.msg);
    decode_call_release(&c);
  }
  run_result_release(&r);
}

/* The fixture schema names backends by the form the loader checks (decode_call.c: "auto" or a table's name
 * of [a-z0-9_], at most 47 characters, harness/plugin.c), since plugins bring names of their own: every
 * registered name fits it, and a name outside it is refused by the schema too. */
static void schema_backend_names_have_the_registrys_form(void **s) {
  (void)s;
  json_error_t je;
  json_t *doc = json_load_file("schemas/decode.schema.json", 0, &je);
  if (!doc) fail_msg("schemas/decode.schema.json: %s", je.text);
  const char *pat = json_string_value(json_object_get(json_object_get(json_object_get(doc, "properties"), "backend"), "pattern"));
  assert_non_null(pat);
  assert_string_equal(pat, "^(auto|[a-z0-9_]{1,47})$");
  regex_t re;
  assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
  struct backend_set *set = calloc(1, sizeof *set);
  struct dkb_err e;
  dkb_err_clear(&e);
  assert_int_equal(backend_set_open(set, NULL, 0, &e), 0);
  assert_int_equal(set->n, 2);
  for (size_t i = 0; i < set->n; i++) assert_int_equal(regexec(&re, set->v[i].t->name, 0, NULL, 0), 0);
  assert_int_not_equal(regexec(&re, "Flash-V9", 0, NULL, 0), 0);
  assert_int_not_equal(regexec(&re, "a_backend_name_of_forty_eight_characters_is_long", 0, NULL, 0), 0);
  regfree(&re);
  backend_set_close(set);
  free(set);
  json_decref(doc);
}

/* The one comparison's max_ratio is the share of its allowance the worst element used: a reference
 * near zero makes max_rel huge but not it, and it exceeds 1 only where an element is a violation (an element
 * with no allowance at all, atol = rtol = 0, leaves it out). */
static void tolerance_ratio_is_the_share_of_the_allowance(void **s) {
  (void)s;
  const double ref[4] = {1.0, 1e-6, -2.0, 0.0}, got[4] = {1.001, 2e-6, -2.0, 0.0005};
  struct dkb_cmp c;
  dkb_compare_f64(got, ref, 4, 0.001, 0.01, &c);  /* allowances 0.011, ~0.001, 0.021, 0.001 */
  assert_true(c.pass);
  assert_true(c.max_rel > 0.99 && c.max_rel < 1.01);  /* 1e-6 / 1e-6: the element near zero */
  assert_true(fabs(c.max_ratio - 0.5) < 1e-12);       /* 0.0005 / 0.001 at ref 0 */
  const double worse[4] = {1.02, 1e-6, -2.0, 0.0};
  dkb_compare_f64(worse, ref, 4, 0.001, 0.01, &c);
  assert_int_equal(c.violations, 1);
  assert_true(fabs(c.max_ratio - 0.02 / 0.011) < 1e-9);
  dkb_compare_f64(worse, ref, 4, 0, 0, &c);  /* no allowance anywhere: ratio undefined, left 0 */
  assert_int_equal(c.violations, 1);
  assert_true(c.max_ratio == 0);
}

static void malformed_decode_fixtures_name_pointer_and_reason(void **s) {
  (void)s;
  const char *base = "{\"schema\": \"dkb.decode/v1\", \"name\": \"x\", \"phase\": \"decode\", \"q_len\": 1, "
                     "\"heads\": {\"H_q\": %s, \"H_kv\": 2, \"d_qk\": 64, \"d_v\": 64}, \"dtype\": \"bf16\", "
                     "\"requests\": %s, \"cache\": %s, \"mask\": {\"kind\": \"none\"}, \"split\": {\"policy\": \"auto\"}, "
                     "\"seed\": 1, \"tolerance\": {\"atol\": 0.001, \"rtol\": 0.01}}";
  struct { const char *hq, *req, *cache, *err; } cases[] = {
      {"5", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}", "/heads/H_q: must be a multiple of H_kv 2 (got 5)"},
      {"4", "[{\"kv_len\": 0}]", "{\"layout\": \"contiguous_nhd\"}", "/requests/0/kv_len: must be >= 1 (got 0)"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"paged_nhd\"}", "/cache: missing required key 'page_size'"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\", \"page_size\": 16}",
       "/cache/page_size: only applies to paged layouts (layout is 'contiguous_nhd')"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\", \"capacity\": 4}",
       "/cache/capacity: must be >= the longest request's kv_len 8 (got 4)"},
      {"4", "[{\"kv_len\": 8, \"cache_row\": 1}, {\"kv_len\": 8, \"cache_row\": 1}]", "{\"layout\": \"contiguous_nhd\"}",
       "/requests/1/cache_row: duplicates the cache row 1 of request 0"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"tiled\"}",
       "/cache/layout: must be one of: contiguous_nhd, contiguous_hnd, ragged_nhd, paged_nhd, paged_hnd (got 'tiled')"},
      /* a backend nothing could ever admit is the fixture's error, not an admission outcome */
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}, \"backend\": \"flash_v9\"",
       "/backend: 'flash_v9' is not a backend (known: auto, dkb_split_kv, dkb_naive_reference)"},
      {"4", "[{\"kv_len\": 8}]", "{\"layout\": \"contiguous_nhd\"}, \"backend\": \"Flash-V9\"",
       "/backend: must be \"auto\" or a backend name of [a-z0-9_], at most 47 characters (got 'Flash-V9')"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char doc[2048], want[1024];
    snprintf(doc, sizeof doc, base, cases[i].hq, cases[i].req, cases[i].cache);
    const char *path = tmp_file("bad-decode.json", doc);
    struct run_result r;
    run_sh(&r, "build/dkb run %s -o %s/bad-out --quiet", path, tmp_dir());
    snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, cases[i].err);
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
}

/* Releases a planned fixture: its plan, inputs and call. */
static void release_planned(struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl) {
  plan_release(pl);
  inputs_release(in);
  decode_call_release(c);
}

/* Items of every request are disjoint, cover exactly its visible (non-SKIP) keys, and no item holds
 * only SKIP tiles unless the request has fewer visible tiles than splits (issue 9). */
static void plan_items_cover_visible_keys_exactly(void **s) {
  (void)s;
  const char *fx[] = {"fixtures/decode/window-sink-paged.json", "fixtures/decode/flashmask-documents.json",
                      "fixtures/decode/paged-dense-p16-capacity.json", "fixtures/decode/ragged-packed-fp16-d96-g8.json",
                      "fixtures/decode/paged-csr-p1-more-splits-than-pages.json"};
  for (size_t f = 0; f < sizeof fx / sizeof fx[0]; f++) {
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    struct dkb_err e;
    assert_int_equal(decode_call_load(fx[f], &c, &e), 0);
    struct plan_opts po = builtin_plan_opts(&c, 132, 0);
    assert_true(po.tile_tokens > 0);
    po.ctas_per_sm = 2;
    const int tile = po.tile_tokens;
    assert_int_equal(inputs_build(&c, tile, &in, &e), 0);
    assert_int_equal(plan_build(&c, &in, &po, &pl, &e), 0);
    int64_t classes[3] = {0, 0, 0};  /* the plan's tile counts, recounted tile by tile */
    for (int b = 0; b < c.B; b++) {
      int64_t N = c.kv_len[b];
      unsigned char *own = calloc((size_t)N, 1);
      int items = 0, empty = 0;
      for (int i = 0; i < pl.n_items; i++) {
        if (pl.item_b[i] != b) continue;
        items++;
        empty += pl.item_lo[i] == pl.item_hi[i];
        for (int64_t k = pl.item_lo[i]; k < pl.item_hi[i]; k++) {
          if (own[k]) fail_msg("%s: key %lld of request %d in two items", fx[f], (long long)k, b);
          own[k] = 1;
        }
      }
      int64_t vis_tiles = 0;
      for (int64_t k0 = 0; k0 < N; k0 += tile) {
        int64_t k1 = k0 + tile < N ? k0 + tile : N;
        const enum tile_class cl = mask_tile_class(&in.mask, b, N - c.C, N, k0, k1);
        const int skip = cl == TILE_SKIP;
        classes[cl]++;
        vis_tiles += !skip;
        for (int64_t k = k0; k < k1; k++)
          if (own[k] == skip) fail_msg("%s: request %d key %lld: owned %d but tile SKIP %d", fx[f], b, (long long)k, own[k], skip);
      }
      /* an empty (identity) item only where there are more splits than visible tiles or keys */
      if (empty && c.split_policy != SPLIT_FIXED) fail_msg("%s: request %d has an empty item under policy %d", fx[f], b, c.split_policy);
      if (empty && c.split_policy == SPLIT_FIXED && items - empty > 0 && vis_tiles * tile >= c.splits &&
          c.capacity == c.splits && N >= c.splits)
        fail_msg("%s: request %d has %d empty items with %lld visible keys", fx[f], b, empty, (long long)N);
      free(own);
    }
    for (int k = 0; k < 3; k++)
      if (pl.tiles[k] != classes[k])
        fail_msg("%s: the plan counts %lld %s tiles, its tiles hold %lld", fx[f], (long long)pl.tiles[k],
                 tile_class_name((enum tile_class)k), (long long)classes[k]);
    release_planned(&c, &in, &pl);
  }
}

/* Plans the fixture at path as the runner does on 132 SMs with `resident` producer CTAs per SM. */
static void plan_fixture_resident(const char *path, int resident, struct decode_call *c, struct decode_inputs *in,
                                  struct decode_plan *pl) {
  struct dkb_err e;
  if (decode_call_load(path, c, &e)) fail_msg("%s: %s", path, e.msg);
  struct plan_opts po = builtin_plan_opts(c, 132, 0);
  assert_true(po.tile_tokens > 0);
  po.ctas_per_sm = resident;
  if (inputs_build(c, po.tile_tokens, in, &e)) fail_msg("%s: %s", path, e.msg);
  if (plan_build(c, in, &po, pl, &e)) fail_msg("%s: %s", path, e.msg);
}

/* Plans the fixture at path as the runner does (132 SMs, 2 CTAs per SM resident). */
static void plan_fixture(const char *path, struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl) {
  plan_fixture_resident(path, 2, c, in, pl);
}

/* The tile classes of window-sink-paged, counted by hand: 64-key tiles; request b sees keys k < 4 (the
 * sink) and N - 100 <= k < N (the window). 4096 keys: tile 0 (sink) and tile 62 ([3968, 4032) from 3996)
 * PARTIAL, 63 FULL, 61 SKIP; 3587: tiles 0 and 54 ([3456, 3520) from 3487) PARTIAL, 55 and the 3-key 56
 * FULL, 53 SKIP; 257: tiles 0 and 2 ([128, 192) from 157) PARTIAL, 3 and the 1-key 4 FULL, 1 SKIP; 81
 * and 3 keys: inside the window, 2 and 1 FULL. */
static void plan_counts_tile_classes_as_counted_by_hand(void **s) {
  (void)s;
  struct decode_call c;
  struct decode_inputs in;
  struct decode_plan pl;
  plan_fixture("fixtures/decode/window-sink-paged.json", &c, &in, &pl);
  assert_int_equal(dkb_decode_tile_tokens(c.dtype, c.dk, c.dv, (c.H_q / c.H_kv) * c.C), 64);
  assert_int_equal(pl.tiles[TILE_SKIP], 61 + 53 + 1);
  assert_int_equal(pl.tiles[TILE_FULL], 1 + 2 + 2 + 2 + 1);
  assert_int_equal(pl.tiles[TILE_PARTIAL], 2 + 2 + 2);
  release_planned(&c, &in, &pl);
}

/* The auto split's wave counts the CTAs per SM the tensor-core producers are built for: 4 at d = 64 and
 * 2 at d = 128 (producer_mma.cuh MmaCfg::MIN_CTAS), 1 at d = 256 (built for 2, but 148 KiB of shared
 * memory leave room for one: a plan made without a device is the device's), fewer when fewer are resident,
 * never more. */
static void auto_split_wave_counts_the_ctas_the_producers_are_built_for(void **s) {
  (void)s;
  static const struct { const char *fx; int resident, want; } cases[] = {
      {"fixtures/decode/ragged-contig-hnd-fp16-d64-g1-remap.json", 0, 132 * 4},
      {"fixtures/decode/ragged-contig-hnd-fp16-d64-g1-remap.json", 3, 132 * 3},
      {"fixtures/decode/ragged-contig-hnd-fp16-d64-g1-remap.json", 6, 132 * 4},
      {"fixtures/decode/paged-nhd-p64-auto.json", 0, 132 * 2},
      {"fixtures/decode/paged-nhd-p64-auto.json", 3, 132 * 2},
      {"fixtures/decode/paged-nhd-p64-auto.json", 1, 132 * 1},
      {"fixtures/bench/b64-t2048-g4-d256-paged16.json", 0, 132 * 1},
      {"fixtures/bench/b64-t2048-g4-d256-paged16.json", 2, 132 * 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture_resident(cases[i].fx, cases[i].resident, &c, &in, &pl);
    if (pl.heuristic_sms != cases[i].want)
      fail_msg("%s, %d resident: the wave counts %d CTAs, want %d", cases[i].fx, cases[i].resident, pl.heuristic_sms, cases[i].want);
    release_planned(&c, &in, &pl);
  }
}

/* Items come in runs of pl->cluster, one request each, in slot order; every request has that many slots. */
static void assert_cluster_groups(const struct decode_plan *pl) {
  assert_int_equal(pl->n_items % pl->cluster, 0);
  for (int i = 0; i < pl->n_items; i += pl->cluster) {
    const int b = pl->item_b[i];
    assert_int_equal(pl->slot_indptr[b + 1] - pl->slot_indptr[b], pl->cluster);
    for (int r = 0; r < pl->cluster; r++) {
      assert_int_equal(pl->item_b[i + r], b);
      assert_int_equal(pl->item_slot[i + r], pl->slot_indptr[b] + r);
    }
  }
}

/* A direct plan takes two K/V heads a producer CTA (half the CTAs whose ends each slot pays) wherever the
 * halved grid still fills 95 % of one wave of 132 SMs x the CTAs resident per SM (4 at d = 64, 2 at
 * d = 128, 1 at d = 256; 0: as many as the producer is built for and fit) and both heads' whole tiles take
 * TMA boxes or the cp.async fast path (NHD caches, 1-key pages too); one head where it would not (B32
 * T4096: 128 CTAs of 264 slots), on HND caches and in split plans. The plan says which (kv_heads_per_cta). */
static void direct_plans_take_two_kv_heads_a_cta_where_the_grid_still_fills_the_device(void **s) {
  (void)s;
  struct { const char *path; int resident, heads; } cases[] = {
      {"fixtures/bench/b64-t2048-g4-contig.json", 2, 2},       {"fixtures/bench/b64-t2048-g4-paged16.json", 2, 2},
      {"fixtures/bench/b128-t1024-g8-paged16.json", 2, 2},     {"fixtures/bench/b512-t256-g8-contig.json", 2, 2},
      {"fixtures/bench/b64-t2048-g4-fp16-paged16.json", 2, 2}, {"fixtures/bench/b64-t2048-g4-paged1.json", 2, 2},
      {"fixtures/bench/b64-t2048-g4-d64-contig.json", 4, 2},   {"fixtures/bench/b64-t2048-g4-d64-paged16.json", 4, 2},
      {"fixtures/bench/b64-t2048-g4-d256-contig.json", 1, 2},  {"fixtures/bench/b64-t2048-g4-d256-paged16.json", 1, 2},
      {"fixtures/bench/b64-t2048-g4-d256-contig.json", 0, 2},  {"fixtures/bench/b32-t4096-g4-contig.json", 2, 1},
      {"fixtures/bench/b64-t2048-g4-d64-contig.json", 0, 2},   {"fixtures/bench/b32-t4096-g4-contig.json", 0, 1},
      {"fixtures/bench/b64-t2048-g4-hnd.json", 2, 1},          {"fixtures/bench/b16-t8192-g4-contig.json", 2, 1},
      {"fixtures/decode/split1-direct.json", 2, 1},             {"fixtures/decode/two-heads-paged-p1.json", 2, 2},
      {"fixtures/decode/two-heads-paged-p16-d256-fp16.json", 1, 2}, {"fixtures/decode/two-heads-ragged-d64.json", 4, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture_resident(cases[k].path, cases[k].resident, &c, &in, &pl);
    if (pl.kv_heads_per_cta != cases[k].heads)
      fail_msg("%s at %d CTAs an SM: %d K/V heads a CTA, want %d (direct %d)", cases[k].path, cases[k].resident,
               pl.kv_heads_per_cta, cases[k].heads, pl.direct);
    if (pl.kv_heads_per_cta == 2) assert_true(pl.direct && !pl.fused);
    json_t *j = plan_json(&c, &pl);
    assert_int_equal(json_integer_value(json_object_get(j, "kv_heads_per_cta")), pl.kv_heads_per_cta);
    json_decref(j);
    release_planned(&c, &in, &pl);
  }
}

/* A cluster plan launches each request's items as one thread-block cluster of consecutive grid rows, so
 * the plan must keep them together in slot order (rank r = slot r), give every request the cluster's
 * slot count, and hold no global arrival counters; plans the kernel does not cluster (more slots, a bf16
 * workspace, unequal slot counts) keep the global fused merge or, past 16 slots or at d_v = 256, the
 * combine kernel. */
static void cluster_plans_keep_each_requests_items_together_in_slot_order(void **s) {
  (void)s;
  struct { const char *path; int cluster; } cases[] = {
      {"fixtures/bench/b16-t8192-g4-contig.json", 2}, {"fixtures/bench/b16-t8192-window1024.json", 2},
      {"fixtures/decode/cluster-lse-o-fp32-sq2.json", 2}, {"fixtures/bench/b1-t32768-g4-contig.json", 0},
      {"fixtures/decode/ragged-contig-nhd-bf16-g4.json", 0}, {"fixtures/bench/b8-t16384-g1-contig.json", 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture(cases[k].path, &c, &in, &pl);
    if (pl.cluster != cases[k].cluster) fail_msg("%s: cluster %d, want %d", cases[k].path, pl.cluster, cases[k].cluster);
    json_t *j = plan_json(&c, &pl);
    assert_int_equal(json_integer_value(json_object_get(j, "cluster_ctas")), pl.cluster);
    const char *mem = json_string_value(json_object_get(j, "workspace_memory"));
    assert_string_equal(mem, pl.direct ? "none" : pl.cluster ? "distributed shared memory" : "global");
    json_decref(j);
    if (pl.cluster) {
      assert_cluster_groups(&pl);
      /* the ABI's states, no arrival counters */
      const int64_t per = c.abi == DKB_ABI_MLU ? (int64_t)c.dv * 4 + 9 : (int64_t)c.dv * 4 + 5;
      assert_int_equal(pl.workspace_bytes, (int64_t)pl.total_slots * c.H_q * c.C * per);
    }
    release_planned(&c, &in, &pl);
  }
  /* Two requests of 901 keys: items of 451 and 450 keys, which longest-first alone would interleave
   * across the requests. The same plan with a bf16 O workspace, or with one request of one slot: not
   * clustered. */
  const char *base = "{\"schema\": \"dkb.decode/v1\", \"name\": \"x\", \"phase\": \"decode\", \"q_len\": 1, "
                     "\"heads\": {\"H_q\": 8, \"H_kv\": 2, \"d_qk\": 128, \"d_v\": 128}, \"dtype\": \"bf16\", "
                     "\"requests\": [{\"kv_len\": %d}, {\"kv_len\": 901}], \"cache\": {\"layout\": \"contiguous_nhd\"}, "
                     "\"mask\": {\"kind\": \"causal\"}, \"split\": %s, %s\"seed\": 1, \"tolerance\": {\"atol\": 0.001, \"rtol\": 0.01}}";
  struct { int len; const char *split, *ws; int fused, cluster; } v[] = {
      {901, "{\"policy\": \"fixed\", \"splits\": 2}", "", 1, 2},
      {901, "{\"policy\": \"fixed\", \"splits\": 2}", "\"workspace\": {\"abi\": \"lse_o\", \"o_dtype\": \"fp32\"}, ", 1, 2},
      {901, "{\"policy\": \"fixed\", \"splits\": 2}", "\"workspace\": {\"abi\": \"lse_o\", \"o_dtype\": \"bf16\"}, ", 1, 0},
      {300, "{\"policy\": \"chunk\", \"chunk\": 512}", "", 1, 0},
      /* past 16 slots per request the last CTA's merge takes two round trips: the combine kernel merges */
      {901, "{\"policy\": \"fixed\", \"splits\": 16}", "", 1, 0},
      {901, "{\"policy\": \"fixed\", \"splits\": 17}", "", 0, 0}};
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    char doc[2048];
    snprintf(doc, sizeof doc, base, v[k].len, v[k].split, v[k].ws);
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture(tmp_file("cluster-plan.json", doc), &c, &in, &pl);
    if (pl.fused != v[k].fused || pl.cluster != v[k].cluster)
      fail_msg("case %zu: fused %d cluster %d, want %d %d", k, pl.fused, pl.cluster, v[k].fused, v[k].cluster);
    if (pl.cluster) assert_cluster_groups(&pl);
    release_planned(&c, &in, &pl);
  }
  /* d_v = 256: fused_combine gives a lane four of a row's 128 dims, so neither the fused nor the cluster
   * merge (which shares its test) is planned, and the combine kernel merges; on the H200 a fused d = 256
   * plan left half of O unwritten (paged-hnd-p256-d256, level 5) */
  char doc[2048];
  snprintf(doc, sizeof doc, base, 901, "{\"policy\": \"fixed\", \"splits\": 2}", "");
  char *dims = strstr(doc, "\"d_qk\": 128, \"d_v\": 128");
  assert_non_null(dims);
  memcpy(dims, "\"d_qk\": 256, \"d_v\": 256", strlen("\"d_qk\": 256, \"d_v\": 256"));
  for (int k = 0; k < 2; k++) {
    struct decode_call c;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture(k ? tmp_file("d256-plan.json", doc) : "fixtures/decode/paged-hnd-p256-d256.json", &c, &in, &pl);
    if (pl.direct || pl.fused || pl.cluster)
      fail_msg("d = 256 case %d: direct %d fused %d cluster %d, want a combine kernel plan", k, pl.direct, pl.fused, pl.cluster);
    release_planned(&c, &in, &pl);
  }
}

/* n requests of t tiles each, 264 CTA slots (132 SMs x 2) */
static int auto_uniform(int n, int64_t t, int heads, int max_splits) {
  int64_t tiles[64];
  for (int b = 0; b < n; b++) tiles[b] = t;
  return plan_auto_splits(tiles, n, heads, 264, max_splits);
}

/* The auto split count minimizes the longest-first makespan of CTAs of (tiles + 9), ties to the smaller s. */
static void auto_split_minimizes_the_lpt_makespan(void **s) {
  (void)s;
  /* a uniform batch: the wave model, waves(s) * (ceil(tiles / s) + 9) */
  assert_int_equal(auto_uniform(4, 64, 8, 1024), 8);      /* B4 T4096 H_kv 8: one full wave of 8-tile CTAs */
  assert_int_equal(auto_uniform(16, 128, 8, 1024), 2);    /* B16 T8192: a second wave costs more than it saves */
  assert_int_equal(auto_uniform(8, 256, 32, 1024), 1);    /* B8 MHA: the blocks fill the wave unsplit */
  assert_int_equal(auto_uniform(1, 512, 8, 1024), 32);    /* B1 T32768: 16 tiles at 32 or 33 pieces: 32 */
  assert_int_equal(auto_uniform(1, 2048, 1, 1024), 256);  /* B1 T131072 H_kv 1: 8 tiles per CTA */
  assert_int_equal(auto_uniform(1, 2048, 1, 100), 98);    /* capped: 21 tiles from s = 98 on */
  assert_int_equal(auto_uniform(3, 1, 1, 1024), 1);       /* one tile cannot be split */
  /* the ragged bench batch (32 requests, U[512, 16384] keys, seed of fixtures/bench/ragged32-paged16.json):
   * the wave model in units of the longest request chose 3; forced splits on the H200 ran 367.5 us at 3,
   * 352.1 at 4, 343.4 at 6; the makespan of the long pieces picks 6 */
  static const int64_t lens[32] = {893, 8341, 9470, 12777, 13767, 15879, 9713, 12957, 11176, 2301, 2631,
                                   9308, 14071, 16022, 10133, 6971, 14395, 13988, 11903, 12883, 2708, 4135,
                                   11876, 5608, 15388, 13633, 3222, 15583, 5539, 3909, 7785, 12759};
  int64_t tiles[32];
  for (int b = 0; b < 32; b++) tiles[b] = (lens[b] + 63) / 64;
  assert_int_equal(plan_auto_splits(tiles, 32, 8, 264, 1024), 6);
  /* and the planner gives the rule these tiles: a request's visible keys in 64-key tiles, a partly
   * filled last tile counted (counting only the full ones, the rule picks 4) */
  struct decode_call c;
  struct decode_inputs in;
  struct decode_plan pl;
  plan_fixture("fixtures/bench/ragged32-paged16.json", &c, &in, &pl);
  assert_int_equal(c.B, 32);
  for (int b = 0; b < 32; b++) assert_int_equal(c.kv_len[b], lens[b]);
  assert_int_equal(dkb_decode_tile_tokens(c.dtype, c.dk, c.dv, (c.H_q / c.H_kv) * c.C), 64);
  assert_int_equal(pl.splits, 6);
  release_planned(&c, &in, &pl);
  /* bad arguments */
  assert_int_equal(plan_auto_splits(tiles, 0, 8, 264, 8), -1);
  assert_int_equal(plan_auto_splits(tiles, 4, 8, 0, 8), -1);
  assert_int_equal(plan_auto_splits(tiles, 4, 0, 264, 8), -1);
}

static void run_without_gpu_stops_at_level_2_with_reason(void **s) {
  (void)s;
  char why[256];
  if (have_gpu(why, sizeof why)) { print_message("[  SKIP    ] a GPU is present: this test is for hosts without one\n"); skip(); }
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/run-cpu/", tmp_dir());  /* a trailing slash: one separator */
  assert_int_equal(r.rc, 0);
  char line[512];
  snprintf(line, sizeof line, "  bundle      %s/run-cpu/bundle.json\n", tmp_dir());
  assert_non_null(strstr(r.out, line));
  assert_non_null(strstr(r.out, "  level       2 (cuda_runtime_unavailable)\n"));
  assert_non_null(strstr(r.out, "  reason      cuda_runtime_unavailable: cudaGetDeviceCount: "));  /* the bundle's why */
  /* the admission's why names every refused candidate and its reasons */
  assert_non_null(strstr(r.out, "  reason      no_eligible_backend: every candidate was refused: dkb_split_kv "
                                "(compute_capability unknown: no CUDA device); dkb_naive_reference (compute_capability "
                                "unknown: no CUDA device)\n"));
  assert_non_null(strstr(r.out, "  correctness not checked: the call stopped at cuda_runtime_unavailable (the float64 oracle ran on the host)\n"));
  /* the summary says first which levels need a GPU, in words that are not CUDA's when no driver is loaded
   * (cudaErrorInsufficientDriver reads as "update the driver"), and ends with the commands to run next */
  assert_non_null(strstr(r.out, "dkb run: default\n  host        levels 3-6 need a GPU, and "));
  if (access("/proc/driver/nvidia/version", F_OK)) {
    assert_non_null(strstr(r.out, "  host        levels 3-6 need a GPU, and this host has none: no NVIDIA driver is loaded\n"));
    assert_non_null(strstr(r.out, "  reason      cuda_runtime_unavailable: cudaGetDeviceCount: no NVIDIA driver is loaded "
                                  "(cudaErrorInsufficientDriver)\n"));
    assert_null(strstr(r.out, "driver version is insufficient"));
    assert_null(strstr(r.err, "driver version is insufficient"));
  }
  snprintf(line, sizeof line, "  next        build/dkb validate %s/run-cpu/bundle.json  # re-grades the bundle", tmp_dir());
  assert_non_null(strstr(r.out, line));
  assert_non_null(strstr(r.out, "\n              build/dkb preflight "));
  run_result_release(&r);
  run_sh(&r, "build/dkb validate %s/run-cpu/bundle.json --source-root . && "
             "/usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json %s/run-cpu/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "computed level 2, claimed 2"));
  run_result_release(&r);
  /* the environment cannot give level 6: exit 4 */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu2 --quiet --require-level 6", tmp_dir());
  assert_int_equal(r.rc, 4);
  assert_string_equal(r.err, "dkb: error: level 2 is below the required 6 (cuda_runtime_unavailable)\n");
  run_result_release(&r);
  /* a registered backend that refuses the call is recorded with its reasons, never a crash */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu3 --backend dkb_split_kv && "
             "build/dkb validate %s/run-cpu3/bundle.json", tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "  reason      backend_rejected: the forced backend dkb_split_kv was refused: "
                                "compute_capability unknown: no CUDA device\n"));
  run_result_release(&r);
  /* a name no backend has is a usage error before any work: exit 2, no bundle */
  run_sh(&r, "build/dkb run fixtures/decode/dk128-dv64.json -o %s/run-cpu4 --backend no_such_backend; echo rc=$?; "
             "test -e %s/run-cpu4 && echo wrote", tmp_dir(), tmp_dir());
  assert_non_null(strstr(r.out, "rc=2\n"));
  assert_null(strstr(r.out, "wrote"));
  assert_non_null(strstr(r.err, "dkb: error: --backend 'no_such_backend' is not a backend "
                                "(known: auto, dkb_split_kv, dkb_naive_reference)\n"));
  run_result_release(&r);
}

/* Issue 10: the dumped tensors recompute, independently of the C oracle, to 1e-12. */
static void dumps_recompute_in_numpy_to_1e12(void **s) {
  (void)s;
  const char *fx[] = {"dk128-dv64", "paged-csr-p1-more-splits-than-pages", "flashmask-documents", "append-paged-sq3"};
  for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
    struct run_result r;
    run_sh(&r, "rm -rf %s/dump-%s && build/dkb run fixtures/decode/%s.json -o %s/dump-run-%s --quiet --dump %s/dump-%s && "
               "/usr/bin/python3 tests/dump_check.py %s/dump-%s --tol 1e-12 && "
               "/usr/bin/python3 tests/schema_check.py schemas/dump.schema.json %s/dump-%s/index.json",
           tmp_dir(), fx[i], fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i], tmp_dir(), fx[i]);
    if (r.rc) fail_msg("%s: exit %d\n%s%s", fx[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, ": pass"));
    run_result_release(&r);
  }
}

static void bench_writes_table_csv_json_and_svg(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json fixtures/decode/split1-direct.json -o %s/bench 2>/dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench/bench.json && "
             "head -1 %s/bench/bench.csv && grep -c '<svg' %s/bench/roofline-fraction.svg",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_non_null(strstr(r.out, "bandwidth = (unique K/V bytes + Q bytes + O bytes) / median time"));
  assert_non_null(strstr(r.out, "name,layout,B,S_q,H_q,H_kv,d,dtype,mean_kv_len,splits,median_us"));
  assert_non_null(strstr(r.out, ",tiles_partial,level,rel_stdev,samples,graph,excess_us,sm_mhz_after,slowed,read_us,read_fraction,backend,selected\n"));
  assert_non_null(strstr(r.out, " median_us  noise    TB/s "));
  assert_non_null(strstr(r.out, "vfrac  excess  read_us  rfrac level\n"));
  run_result_release(&r);
  /* the launch floors (plain launches and graph replay) are recorded beside the roofline; without a GPU,
   * each with its reason */
  run_sh(&r, "/usr/bin/python3 tests/bench_facts.py floors %s/bench/bench.json", tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  char why[256];
  assert_string_equal(r.out, have_gpu(why, sizeof why) ? "dkb_empty_v1 True True True True\n" : "dkb_empty_v1 False True False True\n");
  run_result_release(&r);
  /* each case's call key and spread (from its bundle) and the device, for `dkb compare`: a timed case has
   * its samples' count and relative stdev, an untimed one 0 and null */
  run_sh(&r, "/usr/bin/python3 tests/bench_facts.py cases %s/bench/bench.json", tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out, have_gpu(why, sizeof why) ? "available 2 True 0 True True True True\n"
                                                       : "unavailable 0 True 2 True True True True\n");
  run_result_release(&r);
  run_sh(&r, "build/dkb bench --matrix fixtures/bench/matrix.json fixtures/decode/dk128-dv64.json");
  assert_int_equal(r.rc, 2);
  run_result_release(&r);
}

/* A case that ran but was not timed (no GPU here; on a GPU the naive reference, forced by the fixture,
 * refuses --graph) is no measurement: its row says "not measured (level N, terminal)" and prints no figure,
 * bench.json records null for its median, bandwidths and fractions (the schema allows it, bench_check.py
 * wants it: a recorded 0.0 is refused), and the CSV leaves them empty. */
static void bench_records_no_figure_for_a_case_it_did_not_time(void **s) {
  (void)s;
  struct run_result r;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/bench-untimed", tmp_dir());
  run_sh(&r, "build/dkb bench fixtures/decode/naive-reference-backend.json --graph --no-roofline -o %s 2>/dev/null | "
             "grep '^naive-reference-backend '; /usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && "
             "/usr/bin/python3 tests/bench_check.py %s/bench.json && /usr/bin/python3 tests/jsontool.py get %s/bench.json "
             "/cases/0/ran /cases/0/median_us /cases/0/tbps /cases/0/roofline_fraction /cases/0/visible_tbps "
             "/cases/0/visible_roofline_fraction /cases/0/level /cases/0/terminal && sed -n 2p %s/bench.csv | cut -d, -f11,13-16",
         dir, dir, dir, dir, dir);
  if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  int level = -1;
  char terminal[64] = "", row[128];
  const char *rec = strstr(r.out, "\nTrue None None None None None ");
  if (!rec || sscanf(rec, "\nTrue None None None None None %d %63s", &level, terminal) != 2) fail_msg("no null figures in\n%s", r.out);
  snprintf(row, sizeof row, "not measured (level %d, %s)\n", level, terminal);
  const char *nl = strchr(r.out, '\n');
  if (!strstr(r.out, row) || strstr(r.out, row) > nl) fail_msg("want the row to end with '%s' in\n%s", row, r.out);
  assert_null(strstr(r.out, "0.00"));
  assert_non_null(strstr(r.out, "\n,,,,\n"));  /* CSV: median_us, tbps ... visible_roofline_fraction: none a figure */
  char why[256];
  if (!have_gpu(why, sizeof why)) assert_non_null(strstr(r.out, "not measured (level 2, cuda_runtime_unavailable)\n"));
  run_result_release(&r);
  /* a recorded zero is a figure: refused */
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/zero.json set /cases/0/median_us 0.0 && "
             "/usr/bin/python3 tests/bench_check.py %s/zero.json", dir, dir, dir);
  if (r.rc != 1 || !strstr(r.out, "naive-reference-backend: median_us 0.0 for a case that was not timed: null")) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

/* bench --counters: with a GPU every case carries the DRAM bytes of a call and their ratio to its visible
 * K/V (bench_check.py recomputes it); without one no case has them, and the table says so. */
static void bench_counters_give_each_case_its_dram_bytes_or_say_why_not(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/dk128-dv64.json --counters --no-roofline -o %s/benchc > %s/benchc.txt 2>/dev/null && "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/benchc/bench.json > /dev/null && "
             "/usr/bin/python3 tests/bench_check.py %s/benchc/bench.json > /dev/null && "
             "/usr/bin/python3 tests/bench_facts.py dram %s/benchc/bench.json && "
             "grep '^dram: ' %s/benchc.txt",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  char why[256];
  if (have_gpu(why, sizeof why)) {  /* the call's 0.3 MB stay in L2 between calls: whether it says so is L2's */
    if (strncmp(r.out, "True True\ndram: ", strlen("True True\ndram: ")) ||
        !strstr(r.out, " of the 1 cases with counters read less than 0.95 of their visible K/V from DRAM"))
      fail_msg("%s", r.out);
  } else {
    assert_string_equal(r.out, "False True\ndram: no counters for 1 of 1 cases (a case below level 5 never reached them; else its "
                               "bundle's /measurement/counters_pass says why)\n");
  }
  run_result_release(&r);
}

/* A bench case as bench_judge sees it after a run. */
static void measured(struct bench_case *c, const char *name, const char *fixture, int forced, double median_us, double frac,
                     double vfrac, int level) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->fixture, sizeof c->fixture, "%s", fixture);
  c->forced_splits = forced;
  c->ran = 1;
  c->level = level;
  c->median_us = median_us;
  c->frac = frac;
  c->visible_frac = vfrac;
  c->within_ref = -1;
}

/* Targets are judged only on level-6 results: floors on the fractions, "within" on medians, and auto
 * against the fastest forced split of its fixture. */
static void bench_targets_judge_level_6_results_only(void **s) {
  (void)s;
  struct bench_case c[6];
  measured(&c[0], "contig", "a.json", 0, 100.0, 0.93, 0.93, 6);
  measured(&c[1], "contig/split2", "a.json", 2, 96.0, 0.97, 0.97, 6);
  measured(&c[2], "paged", "b.json", 0, 106.0, 0.88, 0.88, 6);
  measured(&c[3], "window", "w.json", 0, 30.0, 3.9, 0.48, 6);
  measured(&c[4], "broken", "x.json", 0, 10.0, 0.99, 0.99, 5);  /* correctness failed: level 5 */
  measured(&c[5], "broken/split2", "x.json", 2, 9.0, 0.99, 0.99, 6);
  c[0].want_frac = 0.92;
  c[2].want_frac = 0.92;
  c[2].within_ref = 0;
  c[2].within_pct = 5;
  c[3].want_visible_frac = 0.60;
  c[4].want_frac = 0.50;
  struct bench_matrix m = {.name = "t", .auto_within_pct = 5, .cases = c, .n = 6};
  struct bench_roofline r = {.measured = 1, .tbps = 4.5};
  struct bench_verdict v[16];
  int n = bench_judge(&m, &r, v, 16);
  assert_int_equal(n, 7);
  assert_int_equal(v[0].state, BENCH_MET);       /* contig 0.93 >= 0.92 */
  assert_int_equal(v[1].state, BENCH_MISSED);    /* paged 0.88 < 0.92 */
  assert_true(fabs(v[1].need_us - 106.0 * 0.88 / 0.92) < 1e-9);  /* the median that would meet it */
  assert_true(isnan(v[0].need_us) && isnan(v[2].need_us));      /* met; a median comparison */
  assert_int_equal(v[2].state, BENCH_MISSED);    /* paged 6 % slower than contig: > 5 % */
  assert_true(fabs(v[2].got - 6.0) < 1e-9);
  assert_int_equal(v[3].state, BENCH_MISSED);    /* window visible 0.48 < 0.60 */
  assert_true(fabs(v[3].need_us - 24.0) < 1e-9);  /* 30 us x 0.48 / 0.60 */
  assert_int_equal(v[4].state, BENCH_NOT_MEASURED);  /* level 5: its number is not a measurement */
  assert_true(isnan(v[4].got));
  assert_int_equal(v[5].case_index, 0);          /* auto 100 us vs split 2 96 us: +4.2 % */
  assert_int_equal(v[5].state, BENCH_MET);
  assert_string_equal(v[5].what, "auto within 5% of the best forced split, contig/split2");
  assert_int_equal(v[6].state, BENCH_NOT_MEASURED);  /* its auto case is level 5 */
  /* no roofline: no fraction can be judged */
  r.measured = 0;
  n = bench_judge(&m, &r, v, 16);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_int_equal(v[2].state, BENCH_MISSED);    /* medians need no roofline */
}

/* With counters, a fraction floor is a DRAM claim: a case whose call read less than 0.95 of its visible
 * K/V from DRAM (L2 kept the rest from the calls before) has its fraction targets not measured, unless
 * the timing flushed L2 before every sample (--cold); a case without counters is judged as before. */
static void bench_fraction_targets_need_k_v_from_dram_when_counters_say_so(void **s) {
  (void)s;
  struct bench_case c[1];
  measured(&c[0], "t131072", "t.json", 0, 22.56, 0.656, 0.656, 6);
  c[0].want_frac = 0.60;
  c[0].dram_measured = 1;
  c[0].dram_read_bytes = 49.8e6;
  c[0].dram_kv_ratio = 49.8 / 67.1;
  struct bench_matrix m = {.name = "t", .cases = c, .n = 1};
  struct bench_roofline r = {.measured = 1, .tbps = 4.5};
  struct bench_verdict v[4];
  assert_int_equal(bench_judge(&m, &r, v, 4), 1);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_true(v[0].l2_served);
  assert_true(isnan(v[0].got));
  m.cold = 1;  /* the timed calls found L2 flushed: the ratio says nothing of them */
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  assert_false(v[0].l2_served);
  m.cold = 0;
  c[0].dram_kv_ratio = 0.999;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  c[0].dram_measured = 0;  /* no counters: nothing to doubt */
  c[0].dram_kv_ratio = 0.5;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_MET);
  c[0].level = 5;  /* not a measurement at all: not for L2's sake */
  c[0].dram_measured = 1;
  bench_judge(&m, &r, v, 4);
  assert_int_equal(v[0].state, BENCH_NOT_MEASURED);
  assert_false(v[0].l2_served);
}

/* A level-6 case of B1 T131072's size (67 MB of K/V, 2048 tiles) as bench_judge sees it after a run. */
static void t131072_case(struct bench_case *c, const char *name, double median_us) {
  measured(c, name, "a.json", 0, median_us, 0, 0, 6);
  c->io_bytes = 67112960;
  c->kv_bytes = c->visible_kv_bytes = 67108864;
  c->tiles[1] = 2048;
  c->mean_len = 131072;
  snprintf(c->layout, sizeof c->layout, "contiguous_nhd");
}

/* The roofline and launch floors of the bench run of bdd75e5 (4.527 TB/s, 2.976 us, graph 2.656 us). */
static struct bench_roofline h200_roofline(void) {
  struct bench_roofline r = {.measured = 1, .bytes = 8589934592.0, .median_us = 1897.408, .tbps = 8589934592.0 / 1897.408e-6 / 1e12};
  r.floor[0] = (struct bench_floor){.measured = 1, .us = 2.976, .samples = 100};
  r.floor[1] = (struct bench_floor){.measured = 1, .us = 2.656, .samples = 100};
  return r;
}

/* bench_write of the cases into DIR (made), then bench.json checked against its schema and recomputed by
 * tests/bench_check.py. */
static void write_checked_bench(const char *dir, struct bench_case *c, int n, const struct bench_roofline *r) {
  struct dkb_err e;
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  struct bench_matrix m = {.name = "t", .cases = c, .n = n};
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, &m, r, NULL, 0, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench.json && /usr/bin/python3 tests/bench_check.py %s/bench.json",
         dir, dir);
  if (rr.rc != 0) fail_msg("exit %d\n%s%s", rr.rc, rr.out, rr.err);
  run_result_release(&rr);
}

/* excess_us = median - the launch floor of the case's timing mode - its visible bytes' read time at the
 * roofline: B1 T131072 of the bench run of bdd75e5 (26.08 us, 67 MB, 4.527 TB/s, floor 2.976 us) has 8.27
 * us beyond both; a graph case subtracts the graph floor; a masked call counts only its visible bytes;
 * no floor, no excess. bench.json carries it, and tests/bench_check.py recomputes it independently. */
static void bench_excess_is_the_median_beyond_the_floor_and_the_read_at_the_roofline(void **s) {
  (void)s;
  struct bench_case c[3];
  for (int i = 0; i < 3; i++) {
    t131072_case(&c[i], i == 0 ? "t131072" : i == 1 ? "t131072-graph" : "window", i == 2 ? 12.96 : 26.08);
    c[i].visible_kv_bytes = i == 2 ? 8388608 : 67108864;
    c[i].graph = i == 1;
  }
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  const double read_us = 67112960 / (r.tbps * 1e12) * 1e6;  /* 14.82 us */
  assert_true(fabs(c[0].excess_us - (26.08 - 2.976 - read_us)) < 1e-9);
  assert_true(fabs(c[0].excess_us - 8.27) < 0.01);
  assert_true(fabs(c[1].excess_us - (26.08 - 2.656 - read_us)) < 1e-9);
  assert_true(fabs(c[2].excess_us - (12.96 - 2.976 - (8388608 + 4096) / (r.tbps * 1e12) * 1e6)) < 1e-9);
  assert_true(fabs(c[0].frac - c[0].tbps / r.tbps) < 1e-12);
  /* the chain to bench.json and its independent recomputation */
  char dir[600];
  snprintf(dir, sizeof dir, "%s/excess", tmp_dir());
  write_checked_bench(dir, c, 3, &r);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json add /cases/1/excess_us 0.01 && "
              "/usr/bin/python3 tests/bench_check.py %s/bad.json", dir, dir, dir);
  assert_int_equal(rr.rc, 1);
  assert_non_null(strstr(rr.out, "t131072-graph: excess_us"));
  run_result_release(&rr);
  /* without the floor of its mode a case has no excess: null in bench.json, empty in the CSV */
  r.floor[1].measured = 0;
  bench_case_rates(&c[1], &r);
  assert_true(isnan(c[1].excess_us));
  write_checked_bench(dir, c, 3, &r);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /cases/1/excess_us && "
              "sed -n 3p %s/bench.csv | awk -F, '{print \"csv\", $(NF-4) \"|\"}'", dir, dir);
  assert_string_equal(rr.out, "None\ncsv |\n");
  run_result_release(&rr);
}

/* read_fraction = the same-bytes read's median / the case's: B1 T131072 at 24.7 us against a read of its
 * 67 MB that took 19.23 us (exp/probe/rd, H200, cold) is 0.779 of a plain read's speed. bench.json and the
 * CSV carry both; tests/bench_check.py recomputes the fraction, wants a reason where a timed case has no
 * read, and one read per size and timing mode. */
static void bench_read_fraction_is_the_same_bytes_read_over_the_median(void **s) {
  (void)s;
  struct bench_case c[3];
  for (int i = 0; i < 3; i++) {
    t131072_case(&c[i], i == 0 ? "t131072" : i == 1 ? "t131072-split128" : "t131072-graph", 24.7);
    c[i].samples = 100;
    c[i].read_us = 19.23;
    c[i].read_samples = 5000;
    c[i].graph = i == 2;
  }
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  assert_true(fabs(c[0].read_fraction - 19.23 / 24.7) < 1e-12);
  assert_true(fabs(c[0].read_fraction - 0.779) < 0.001);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/readfrac", tmp_dir());
  write_checked_bench(dir, c, 3, &r);
  struct run_result rr;
  run_sh(&rr, "sed -n 2p %s/bench.csv | awk -F, '{print $(NF-3), $(NF-2)}'", dir);  /* before backend, selected */
  assert_string_equal(rr.out, "19.230 0.7785\n");
  run_result_release(&rr);
  /* what the independent check refuses: a fraction that is not read / median, two reads of one size and
   * mode, a timed case with neither a read nor its reason */
  static const char *const bad[][2] = {
      {"add /cases/0/read_fraction 0.01", "t131072: read_fraction"},
      {"set /cases/1/read_us 19.5 set /cases/1/read_fraction 0.7894736842105263", "another case of the same bytes and mode"},  /* 19.5 / 24.7 */
      {"set /cases/1/read_us null set /cases/1/read_fraction null set /cases/1/read_samples 0",
       "t131072-split128: a timed case with no read_us and no read_reason"},
      {"set /cases/1/read_samples 0", "t131072-split128: read_us 19.23 with 0 read samples"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json %s && /usr/bin/python3 tests/bench_check.py %s/bad.json",
           dir, dir, bad[k][0], dir);
    if (rr.rc != 1 || !strstr(rr.out, bad[k][1])) fail_msg("%s: exit %d\n%s%s", bad[k][0], rr.rc, rr.out, rr.err);
    run_result_release(&rr);
  }
  /* the graph case is another mode: its own read may differ; a case without a read says why, and
   * has no fraction */
  c[2].read_us = 18.9;
  c[1].read_us = 0;
  c[1].read_samples = 0;
  snprintf(c[1].read_reason, sizeof c[1].read_reason, "--no-roofline");
  for (int i = 0; i < 3; i++) bench_case_rates(&c[i], &r);
  assert_true(isnan(c[1].read_fraction));
  write_checked_bench(dir, c, 3, &r);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get %s/bench.json /cases/1/read_us /cases/1/read_fraction /cases/1/read_samples "
              "/cases/1/read_reason && sed -n 3p %s/bench.csv | "
              "awk -F, '{print \"csv\", $(NF-1) \"|\" $NF \"|\"}'", dir, dir);
  assert_string_equal(rr.out, "None None 0 --no-roofline\ncsv ||\n");
  run_result_release(&rr);
}

/* On the GPU: every timed case of a bench has its same-bytes read, one measurement per size and mode (a
 * forced split of the same fixture reads the same bytes), above the launch floor; tests/bench_check.py
 * recomputes each read_fraction. */
static void gpu_bench_times_one_same_bytes_read_per_size(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "printf '{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"rd\", \"roofline_bytes\": 4294967296, \"cases\": "
             "[{\"fixture\": \"%%s/fixtures/decode/default.json\", \"splits\": [\"auto\", 2]}]}' \"$PWD\" > %s/rd.json && "
             "build/dkb bench --matrix %s/rd.json -o %s/gpu-rd --max-time 0.3 > %s/gpu-rd.txt && "
             "/usr/bin/python3 tests/bench_check.py %s/gpu-rd/bench.json && /usr/bin/python3 tests/bench_facts.py reads %s/gpu-rd/bench.json",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 0) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.out, "2 True True\n");
  run_result_release(&r);
}

/* A case that ran slowed carries its clocks into bench.json and the CSV (the SM clock after, slowed 1); one
 * NVML reported nothing for has clocks null and empty columns. tests/bench_check.py re-derives "slowed"
 * from the reasons and catches a flag that disagrees. */
static void bench_json_and_csv_carry_a_slowed_cases_clocks(void **s) {
  (void)s;
  struct bench_case c[2];
  for (int i = 0; i < 2; i++) t131072_case(&c[i], i ? "quiet" : "hot", 26.08);
  c[0].clocks_reported = 1;
  c[0].sm_mhz[0] = 1980;
  c[0].sm_mhz[1] = 1755;
  c[0].clock_reasons = 0x24;  /* sw_power_cap, sw_thermal_slowdown */
  struct bench_roofline r = h200_roofline();
  for (int i = 0; i < 2; i++) bench_case_rates(&c[i], &r);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/clocks-json", tmp_dir());
  write_checked_bench(dir, c, 2, &r);
  struct run_result rr;
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py get --json %s/bench.json /cases/*/clocks && "
              "sed -n '2,3p' %s/bench.csv | awk -F, '{print $(NF-5) \"|\" $(NF-4)}'",
         dir, dir);
  if (rr.rc != 0) fail_msg("exit %d\n%s%s", rr.rc, rr.out, rr.err);
  assert_string_equal(rr.out, "[{\"event_reasons\": [\"sw_power_cap\", \"sw_thermal_slowdown\"], \"slowed\": true, \"sm_mhz_after\": 1755, "
                              "\"sm_mhz_before\": 1980}, null]\n1755|1\n|\n");
  run_result_release(&rr);
  run_sh(&rr, "/usr/bin/python3 tests/jsontool.py edit %s/bench.json %s/bad.json set /cases/0/clocks/slowed false && "
              "/usr/bin/python3 tests/bench_check.py %s/bad.json", dir, dir, dir);
  assert_int_equal(rr.rc, 1);
  assert_non_null(strstr(rr.out, "hot: clocks.slowed is False"));
  run_result_release(&rr);
}

/* The roofline-fraction chart plots a masked call at its visible-bytes fraction (hollow marker), never at
 * its whole-cache figure, which counts bytes it rightly skipped (3.86 here) and would leave the chart;
 * beside each call that has one, its same-bytes read's fraction of the roofline (a grey dash). */
static void bench_chart_plots_masked_calls_at_their_visible_fraction_and_reads_beside_them(void **s) {
  (void)s;
  struct bench_case c[2];
  measured(&c[0], "dense", "a.json", 0, 131.0, 0.883, 0.883, 6);
  measured(&c[1], "window", "w.json", 0, 30.0, 3.855, 0.483, 6);
  c[0].mean_len = c[1].mean_len = 8192;
  c[1].tiles[0] = 1792;
  snprintf(c[0].layout, sizeof c[0].layout, "contiguous_nhd");
  snprintf(c[1].layout, sizeof c[1].layout, "paged_nhd");
  struct bench_matrix m = {.name = "t", .cases = c, .n = 2};
  struct bench_roofline r = {.measured = 1, .tbps = 4.6};
  char dir[600];
  snprintf(dir, sizeof dir, "%s/chart", tmp_dir());
  struct dkb_err e;
  assert_int_equal(dkb_mkdirs(dir, &e), 0);
  char *argv[] = {"dkb", "bench", NULL};
  assert_int_equal(bench_write(dir, &m, &r, NULL, 0, NULL, 2, argv, &e), 0);
  struct run_result rr;
  run_sh(&rr, "cat %s/roofline-fraction.svg", dir);
  assert_non_null(strstr(rr.out, "<title>window: visible 0.483</title>"));
  assert_non_null(strstr(rr.out, "<title>dense: 0.883</title>"));
  assert_null(strstr(rr.out, "3.855"));
  /* y = 30 + 340 * (1 - 0.483): inside the plot */
  assert_non_null(strstr(rr.out, "cy=\"205.8\" r=\"4\" fill=\"white\""));
  assert_null(strstr(rr.out, "same-bytes read"));  /* no case has a read: no dash, no legend entry */
  run_result_release(&rr);
  /* with their same-bytes reads: a grey dash at the read's fraction of the roofline, vfrac / rfrac (the
   * dense call at 0.883 is 0.95 of its read's speed: the read reaches 0.929; y = 30 + 340 * (1 - 0.929)) */
  c[0].read_us = 124.45;
  c[0].read_fraction = 0.95;
  c[1].read_us = 20.0;
  c[1].read_fraction = 0.6;
  assert_int_equal(bench_write(dir, &m, &r, NULL, 0, NULL, 2, argv, &e), 0);
  run_sh(&rr, "cat %s/roofline-fraction.svg", dir);
  assert_non_null(strstr(rr.out, "<title>dense: same-bytes read 0.929</title>"));
  assert_non_null(strstr(rr.out, "y1=\"54.0\" y2=\"54.0\" stroke=\"#888\""));
  assert_non_null(strstr(rr.out, "<title>window: same-bytes read 0.805</title>"));
  assert_non_null(strstr(rr.out, ">same-bytes read</text>"));
  run_result_release(&rr);
}

/* Malformed targets, and a fixture that is not there, name the matrix, the JSON Pointer and the reason;
 * --require-targets on a host that cannot measure exits 4. */
static void bench_targets_errors_and_require_targets(void **s) {
  (void)s;
  static const struct { const char *target, *err; } bad[] = {
      {"\"splits\": [2], \"target\": {\"roofline_fraction\": 0.5}",
       "/cases/0/target: needs the entry's \"auto\" case: a target judges the fixture's own split policy"},
      {"\"target\": {\"within_pct_of\": {\"fixture\": \"nope.json\", \"pct\": 5}}",
       "/cases/0/target/within_pct_of/fixture: 'nope.json' has no \"auto\" case earlier in the matrix"},
      {"\"target\": {\"fraction\": 0.5}", "/cases/0/target/fraction: unknown key"},
  };
  char fx[600], doc[1400], want[1200], name[64];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));  /* absolute: not relative to the matrix */
  struct run_result r;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"%s\", %s}]}", fx,
             bad[i].target);
    snprintf(name, sizeof name, "bench-target-%zu.json", i);
    const char *path = tmp_file(name, doc);
    run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out", path, tmp_dir());
    snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, bad[i].err);
    assert_int_equal(r.rc, 3);
    assert_string_equal(r.err, want);
    run_result_release(&r);
  }
  /* a fixture the matrix names but that is not there: the matrix's entry is the error */
  const char *mpath = tmp_file("bench-missing-fixture.json",
                               "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"nope-fixture.json\"}]}");
  run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out", mpath, tmp_dir());
  snprintf(want, sizeof want, "dkb: error: %s: /cases/0/fixture: cannot open '%s/nope-fixture.json': No such file or directory\n",
           mpath, tmp_dir());
  assert_int_equal(r.rc, 3);
  assert_string_equal(r.err, want);
  run_result_release(&r);
  /* a case that cannot run is named with its error's file: the others go on, the bench ends with its code */
  char fx2[600];
  assert_non_null(realpath("fixtures/decode/default.json", fx2));
  run_sh(&r, "mkdir -p %s/bench-case-err/cases && touch %s/bench-case-err/cases/000 && "
             "build/dkb bench %s %s -o %s/bench-case-err --no-roofline --max-time 0.01",
         tmp_dir(), tmp_dir(), fx, fx2, tmp_dir());
  snprintf(want, sizeof want, "dkb: error: dk128-dv64: %s/bench-case-err/cases/000: cannot create folder: Not a directory\n", tmp_dir());
  assert_int_equal(r.rc, 4);  /* the user's paths, not dkb's fault */
  assert_non_null(strstr(r.err, want));
  assert_non_null(strstr(r.out, "\ndefault "));  /* the second case ran */
  run_result_release(&r);
  char why[256];
  if (have_gpu(why, sizeof why)) return;  /* the exit-4 path is for hosts without a GPU */
  snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": "
           "\"%s\", \"target\": {\"roofline_fraction\": 0.5}}]}", fx);
  const char *path = tmp_file("bench-target-ok.json", doc);
  run_sh(&r, "build/dkb bench --matrix %s -o %s/bench-target-out --require-targets 2>&1; rc=$?; "
             "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s/bench-target-out/bench.json > /dev/null || exit 9; exit $rc",
         path, tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.out, "  not_measured dk128-dv64                         roofline_fraction >= 0.50 (no level-6 measurement)\n"));
  assert_non_null(strstr(r.out, "dkb: error: 1 of 1 bench targets could not be measured on this host\n"));
  run_result_release(&r);
}

/* A matrix without cases is malformed (its schema says minItems 1), as a missing fixture is: exit 3 with
 * the file, /cases and the reason, before anything runs. --require-targets over a run that judged no
 * target (fixtures, or a matrix that sets none) has not passed: exit 4, saying so, after the run. */
static void bench_refuses_an_empty_matrix_and_a_target_gate_with_nothing_to_judge(void **s) {
  (void)s;
  static const char *const empty = "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": []}";
  const char *path = tmp_file("bench-empty.json", empty);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py --expect-invalid schemas/bench-matrix.schema.json %s && "
             "rm -rf %s/bench-empty-out && build/dkb bench --matrix %s -o %s/bench-empty-out --require-targets; rc=$?; "
             "[ -e %s/bench-empty-out/bench.json ] && echo wrote; exit $rc",
         path, tmp_dir(), path, tmp_dir(), tmp_dir());
  char want[1200];
  snprintf(want, sizeof want, "dkb: error: %s: /cases: must hold at least one case (got an empty array)\n", path);
  if (r.rc != 3) fail_msg("exit %d, want 3\n%s%s", r.rc, r.out, r.err);
  assert_string_equal(r.err, want);
  assert_string_equal(r.out, "");
  run_result_release(&r);
  char fx[600];
  assert_non_null(realpath("fixtures/decode/dk128-dv64.json", fx));
  char doc[1400];
  snprintf(doc, sizeof doc, "{\"schema\": \"dkb.bench-matrix/v1\", \"name\": \"t\", \"cases\": [{\"fixture\": \"%s\"}]}", fx);
  const char *none = tmp_file("bench-no-targets.json", doc);
  const char *const how[] = {"fixtures/decode/dk128-dv64.json", "--matrix"};
  for (int i = 0; i < 2; i++) {
    run_sh(&r, "build/dkb bench %s %s -o %s/bench-no-targets --no-roofline --max-time 0.05 --require-targets", how[i],
           i ? none : "", tmp_dir());
    if (r.rc != 4) fail_msg("%s: exit %d, want 4\n%s%s", how[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.err, "dkb: error: --require-targets: no bench target was judged: the matrix sets none\n"));
    assert_non_null(strstr(r.out, "wrote "));  /* the run's results stand beside the verdict */
    run_result_release(&r);
  }
}

/* On the GPU: every decode fixture passes correctness and reaches level 6; split = k agrees with
 * split = 1 within the fixture's tolerance. */
static void gpu_every_decode_fixture_reaches_level_6(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "for f in fixtures/decode/*.json; do n=$(basename $f .json); "
             "build/dkb run $f -o %s/gpu-$n --quiet --max-time 0.2 --require-level 6 > /dev/null || echo \"FAIL $n\"; done",
         tmp_dir());
  if (strstr(r.out, "FAIL")) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* `dkb run --counters` on a split call: the bundle still reaches level 6 and its counters pass measured
 * DRAM bytes and GPU time. Not the K/V size: the range profiler flushes no L2, and most of the 36 MB of
 * K/V is still in the 60 MiB L2 from the earlier passes (5.3 MB came from DRAM on the H200). */
static void gpu_run_with_counters_measures_dram_bytes(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/gpu-counters --quiet --max-time 0.2 --counters "
             "--require-level 6 > /dev/null && /usr/bin/python3 tests/bench_facts.py counters %s/gpu-counters/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc != 0 || strncmp(r.out, "measured ", 9)) fail_msg("%s%s", r.out, r.err);
  double bytes = 0, ns = 0;
  assert_int_equal(sscanf(r.out + 9, "%lf %lf", &bytes, &ns), 2);
  print_message("[  INFO    ] counters: dram read %.0f B, gpu time %.0f ns\n", bytes, ns);
  assert_true(ns > 0);
  assert_true(bytes > 0);
  run_result_release(&r);
}

/* `dkb run --cold --counters`: the counted call starts from a flushed L2, as each timed sample does, so
 * it reads all of its K/V from DRAM (the warm call above read 5.3 of 36.7 MB there), and the flush, a read,
 * leaves nothing dirty for the call to write back (after a memset flush a 64 MiB read wrote back 21 MB:
 * gpu_l2_flush_leaves_no_dirty_lines_where_a_memset_does). */
static void gpu_cold_counters_read_all_k_v_from_dram_and_write_back_no_flush(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  struct run_result r;
  run_sh(&r, "build/dkb run fixtures/decode/default.json -o %s/gpu-cold --quiet --max-time 0.2 --cold --counters "
             "--require-level 6 > /dev/null && /usr/bin/python3 tests/bench_facts.py cold-counters %s/gpu-cold/bundle.json",
         tmp_dir(), tmp_dir());
  if (r.rc != 0 || strncmp(r.out, "flushed ", 8)) fail_msg("%s%s", r.out, r.err);
  double rd = 0, wr = 0, kv = 0, out = 0;
  assert_int_equal(sscanf(r.out + 8, "%lf %lf %lf %lf", &rd, &wr, &kv, &out), 4);
  print_message("[  INFO    ] cold counters: dram read %.0f B of %.0f B K/V, write %.0f B (outputs and workspace %.0f B)\n",
                rd, kv, wr, out);
  assert_true(rd >= 0.95 * kv);
  assert_true(wr <= 2 * out + (1 << 20));  /* what the call writes, not dirty lines a flush left */
  run_result_release(&r);
}

/* Elements of a dumped .npy (v1.0 header) decoded as the dump index says. */
static double *npy_read(const char *path, const char *dtype, size_t *n) {
  char *raw = NULL;
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  len = (size_t)ftell(f);
  rewind(f);
  raw = malloc(len);
  if (fread(raw, 1, len, f) != len) { fclose(f); free(raw); return NULL; }
  fclose(f);
  size_t off = 10 + (size_t)(unsigned char)raw[8] + 256 * (size_t)(unsigned char)raw[9];
  enum dkb_dtype t = (enum dkb_dtype)dkb_dtype_parse(dtype);
  *n = (len - off) / dkb_dtype_bytes(t);
  double *v = malloc(*n * sizeof *v);
  for (size_t i = 0; i < *n; i++) v[i] = dkb_load(t, raw + off, i);
  free(raw);
  return v;
}

/* Runs fixture fx with the members of patch set at its top level (patch NULL: as declared; the reference
 * is taken), dumping into tmp_dir()/<tag>d; the test fails when the run does. Returns the fixture run. */
static const char *run_dumped(const char *fx, json_t *patch, const char *tag) {
  if (patch) {
    struct dkb_err e;
    json_t *doc = jr_load_file(fx, &e);
    assert_non_null(doc);
    json_object_update(doc, patch);
    json_decref(patch);
    char *text = json_dumps(doc, 0), name[64];
    json_decref(doc);
    snprintf(name, sizeof name, "%s.json", tag);
    fx = tmp_file(name, text);
    free(text);
  }
  struct run_result r;
  run_sh(&r, "rm -rf %s/%sd && build/dkb run %s -o %s/%s --no-timing --quiet --dump %s/%sd > /dev/null", tmp_dir(), tag, fx,
         tmp_dir(), tag, tmp_dir(), tag);
  if (r.rc) fail_msg("%s: %s%s", tag, r.out, r.err);
  run_result_release(&r);
  return fx;
}

/* Array `name` of the dump of run `tag`, decoded as dtype (*n elements). */
static double *dump_array(const char *tag, const char *name, const char *dtype, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%sd/%s.npy", tmp_dir(), tag, name);
  double *v = npy_read(path, dtype, n);
  assert_non_null(v);
  return v;
}

/* Runs a fixture with split = 1, as declared (split 8, merged in the last producer CTA) and with 16 and
 * 17 splits (the last fused plan and the first one merged by the combine kernel: kFusedSlots), dumping
 * each; compares array `name` of each split run with split 1's. */
static void split_k_against_split_1(const char *name, const char *dtype, double atol, double rtol) {
  const char *fx = "fixtures/decode/ragged-contig-nhd-bf16-g4.json";
  static const struct { const char *tag; int splits; const char *combine; } v[] = {
      {"s8", 0, "fused (last producer CTA)"}, {"s16", 16, "fused (last producer CTA)"}, {"s17", 17, "kernel"}};
  run_dumped(fx, json_pack("{s:{s:s,s:i}}", "split", "policy", "fixed", "splits", 1), "s1");
  size_t n1 = 0;
  double *a = dump_array("s1", name, dtype, &n1);
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    const char *ran = run_dumped(fx, v[k].splits ? json_pack("{s:{s:s,s:i}}", "split", "policy", "fixed", "splits", v[k].splits) : NULL, v[k].tag);
    struct decode_call dc;
    struct decode_inputs in;
    struct decode_plan pl;
    plan_fixture(ran, &dc, &in, &pl);  /* the plan the run launched: which merge the comparison covers */
    if (strcmp(plan_combine_name(&pl), v[k].combine)) fail_msg("%s: combine \"%s\", want \"%s\"", v[k].tag, plan_combine_name(&pl), v[k].combine);
    plan_release(&pl);
    inputs_release(&in);
    decode_call_release(&dc);
    size_t n = 0;
    double *b = dump_array(v[k].tag, name, dtype, &n);
    assert_int_equal(n1, n);
    struct dkb_cmp c;
    dkb_compare_f64(b, a, n1, atol, rtol, &c);
    print_message("[  INFO    ] %s %s vs split 1 (%s): max |diff| %.3g over %zu elements\n", name, v[k].tag, v[k].combine, c.max_abs, c.n);
    if (!c.pass)
      fail_msg("%s %s: %zu of %zu elements differ beyond atol %g + rtol %g (max %.3g)", name, v[k].tag, c.violations, c.n, atol, rtol, c.max_abs);
    free(b);
  }
  free(a);
}

/* The float64 reference does not depend on the split policy (the harness of the GPU check). */
static void split_policy_does_not_change_the_reference(void **s) {
  (void)s;
  split_k_against_split_1("o_ref", "fp64", 1e-12, 0);
}

/* On the GPU: splits 8, 16 (both merged by the last producer CTA) and 17 (merged by the combine kernel)
 * agree with split = 1 within the fixture's tolerance. */
static void gpu_split_k_agrees_with_split_1(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  split_k_against_split_1("o_gpu", "bf16", 2e-3, 1.6e-2);
}

/* On the GPU: the tensor-core producers run as many CTAs per SM as the planner's wave counts without a
 * device (dkb_decode_wave_ctas, harness/plan.c): 4 at d = 64, 2 at d = 128 (__launch_bounds__ and, at
 * d = 128, kTwoPerSmSmem), 1 at d = 256 (shared memory). Register counts alone once held d = 128: a
 * change that took the unfused one from 175 to 168 registers let 3 share an SM, and forced splits of 512
 * CTAs ran as 1.3 waves, 5-7 % slower (H200; reverted in b34bde8). This catches such a regression in
 * gpu-smoke instead of a bench run, and a CPU plan that is not the device's. */
static void gpu_tensor_core_producers_run_the_ctas_per_sm_the_planner_counts(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  static const int dt[2] = {DKB_KDT_BF16, DKB_KDT_F16}, want[3] = {4, 2, 1};
  for (int k = 0; k < 2; k++)
    for (int i = 0, d = 64; d <= 256; i++, d *= 2) {
      const int n = dkb_decode_occupancy(dt[k], d, d, 8), w = dkb_decode_wave_ctas(dt[k], d, d, 8);
      print_message("[  INFO    ] %s d=%d tensor-core producer: %d CTAs per SM, the planner counts %d\n", k ? "fp16" : "bf16", d, n, w);
      if (n != w || w != want[i]) fail_msg("%s d=%d: %d CTAs per SM, the planner counts %d, want %d", k ? "fp16" : "bf16", d, n, w, want[i]);
    }
}

/* On the GPU: the tensor-core producer's two copy paths fill the same shared-memory layout. One call
 * (ragged lengths: whole tiles and edge tiles, three splits) in four cache layouts with the same logical
 * K/V: NHD caches take TMA boxes for whole tiles, HND caches take cp.async for every tile, so O and LSE
 * must agree bit for bit. */
static void gpu_tma_tiles_match_cp_async_tiles_bit_for_bit(void **s) {
  (void)s;
  SKIP_WITHOUT_GPU();
  static const char *const layout[] = {"paged_nhd", "paged_hnd", "contiguous_nhd", "contiguous_hnd"};
  static const char *const dump[2] = {"o_gpu", "lse_gpu"}, *const dt[2] = {"bf16", "fp32"};
  double *first[2] = {NULL, NULL};
  size_t n_first[2] = {0, 0};
  for (int l = 0; l < 4; l++) {
    char tag[16];
    snprintf(tag, sizeof tag, "cp%d", l);
    run_dumped("fixtures/decode/paged-nhd-p32-auto.json",
               json_pack("{s:{s:s,s:i},s:o}", "split", "policy", "fixed", "splits", 3, "cache",
                         l < 2 ? json_pack("{s:s,s:i}", "layout", layout[l], "page_size", 32) : json_pack("{s:s}", "layout", layout[l])),
               tag);
    for (int k = 0; k < 2; k++) {
      size_t n = 0;
      double *v = dump_array(tag, dump[k], dt[k], &n);
      if (!l) {
        first[k] = v;
        n_first[k] = n;
        continue;
      }
      assert_int_equal(n, n_first[k]);
      struct dkb_cmp c;
      dkb_compare_f64(v, first[k], n, 0, 0, &c);
      print_message("[  INFO    ] %s %s vs paged_nhd: max |diff| %.3g over %zu elements\n", layout[l], dump[k], c.max_abs, c.n);
      if (!c.pass) fail_msg("%s %s: %zu of %zu elements differ from paged_nhd (max %.3g)", layout[l], dump[k], c.violations, c.n, c.max_abs);
      free(v);
    }
  }
  free(first[0]);
  free(first[1]);
}

/* tools/sass-check.py (run by gpu-smoke on `cuobjdump -sass`) flags an async copy whose memory descriptor
 * register the function never writes (the ptxas miscompile that crashed the d = 64 producer), and passes
 * one whose descriptor is written, predicated or not; reading the register is not writing it. */
static void sass_check_flags_an_unwritten_copy_descriptor(void **s) {
  (void)s;
  static const char head[] = "\tcode for sm_90\n\t\tFunction : _Zgood\n\t.headerflags\t@\"EF_CUDA_SM90\"\n"
                             "        /*0110*/                   ULDC.64 UR16, c[0x0][0x218] ;\n"
                             "        /*0120*/              @!P3 R2UR UR18, R6 ;\n"
                             "        /*2c00*/                   LDGSTS.E.BYPASS.LTC128B.128 [R37], desc[UR16][R24.64], !P6 ;\n"
                             "        /*2c20*/                   LDGSTS.E.BYPASS.LTC128B.128 [R37+0x800], desc[UR18][R26.64], !P1 ;\n";
  static const char bad[] = "\t\tFunction : _Zbad\n"
                            "        /*02f0*/                   IMAD.U32 R2, RZ, RZ, UR1 ;\n"
                            "        /*98a0*/                   LDGSTS.E.BYPASS.LTC128B.128 [R99+UR0], desc[UR1][R148.64], !P1 ;\n";
  char both[1024];
  snprintf(both, sizeof both, "%s%s", head, bad);
  struct run_result r;
  run_sh(&r, "python3 tools/sass-check.py < %s", tmp_file("good.sass", head));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "sass-check: 1 functions with async copies, 0 unwritten descriptors\n");
  run_result_release(&r);
  run_sh(&r, "python3 tools/sass-check.py < %s", tmp_file("bad.sass", both));
  assert_int_equal(r.rc, 1);
  assert_string_equal(r.out, "unwritten descriptor UR1 in _Zbad\nsass-check: 2 functions with async copies, 1 unwritten descriptors\n");
  run_result_release(&r);
}

/* tools/ncu-summary.py (docs/profiles/ keeps its output) reads each launch's figures and stall reasons from
 * `ncu --print-details all` lines as ncu writes them, and shares the first kernel's stall samples by
 * opcode and instruction, predicates dropped, the second kernel's rows not counted; a report with no
 * launch is exit 1. */
static void ncu_summary_shares_a_profiles_stalls_by_reason_and_instruction(void **s) {
  (void)s;
  static const char txt[] =
      "[673] dkb@127.0.0.1\n"
      "  void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, 256, 0>(dkb_decode_params, <unnamed>::KvMaps) (4, 64, 1)x(128, 1, 1), Context 1, Stream 13, Device 0, CC 9.0\n"
      "    dram__bytes_read.sum                                     Mbyte       537.52\n"
      "    gpu__time_duration.sum                                      us       165.28\n"
      "    DRAM Throughput                   %        67.90\n"
      "    Registers Per Thread             register/thread             254\n"
      "    Registers Per Thread       register/thread                            255\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_barrier)                                     warp        5,000\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_wait)                                        warp        3,000\n"
      "    Warp Stall Sampling (All Samples) (smsp__pcsamp_warps_issue_stalled_long_scoreboard)                             warp        2,000\n";
  static const char csv[] =
      "\"Kernel Name\",\"void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, (int)256, (bool)0>(dkb_decode_params, <unnamed>::KvMaps)\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"# Samples\"\n"
      "\"0x10\",\"      LDS.64 R250, [R250+UR52]\",\"60\",\"60\"\n"
      "\"0x20\",\"@!P0  BRA 0x7f72677bf170\",\"30\",\"30\"\n"
      "\"0x30\",\"      LDS R1, [R2]\",\"10\",\"10\"\n"
      "\"Kernel Name\",\"void other()\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"# Samples\"\n"
      "\"0x10\",\"      HMMA.16816.F32.BF16 R84, R32, R172, R84\",\"900\",\"900\"\n";
  tmp_file("prof.txt", txt);
  tmp_file("prof-source.csv", csv);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tools/ncu-summary.py %s/prof", tmp_dir());
  assert_int_equal(r.rc, 0);
  static const char *want[] = {
      "`void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, 256, 0>(dkb_decode_params, <unnamed>::KvMaps)`, grid (4, 64, 1), block (128, 1, 1)\n",
      "| duration | 165.28 us |\n", "| DRAM read | 537.52 Mbyte |\n", "| DRAM throughput | 67.90 % |\n",
      "| registers per thread | 254 register/thread |\n",
      "| stall samples | barrier 50.0 %, wait 30.0 %, long_scoreboard 20.0 % |\n",
      "Stall samples of `void <unnamed>::decode_split_kv_producer_mma<__nv_bfloat16, (int)256, (bool)0>(dkb_decode_params, <unnamed>::KvMaps)`: 100\n",
      "| LDS | 70.0 % |\n| BRA | 30.0 % |\n", "| `LDS.64 R250, [R250+UR52]` | 60.0 % |\n"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(r.out, want[i])) fail_msg("missing %s in\n%s%s", want[i], r.out, r.err);
  assert_null(strstr(r.out, "HMMA"));
  run_result_release(&r);
  tmp_file("empty.txt", "==PROF== Disconnected\n");
  run_sh(&r, "/usr/bin/python3 tools/ncu-summary.py %s/empty", tmp_dir());
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.err, "empty.txt: no kernel launch"));
  run_result_release(&r);
}

/* The verdict tools/budgets.py printed for one budget: the rest of the line that starts with name. */
static void assert_budget(const char *out, const char *name, const char *verdict) {
  char key[64];
  snprintf(key, sizeof key, "\n%s ", name);
  char *buf = malloc(strlen(out) + 2);
  assert_non_null(buf);
  buf[0] = '\n';
  strcpy(buf + 1, out);
  const char *l = strstr(buf, key);
  if (!l) {
    free(buf);
    fail_msg("no %s line in:\n%s", name, out);
    return;
  }
  const char *e = strchr(l + 1, '\n');
  const size_t n = e ? (size_t)(e - l) : strlen(l);
  char one[512];
  snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), l + 1);
  if (!strstr(one, verdict)) fail_msg("%s: want '%s' in '%s'", name, verdict, one);
  free(buf);
}

/* tools/budgets.py (docs/DESIGN.md's budgets, run on the GPU machine by gpu-smoke --budgets) against a
 * stand-in dkb whose `run` holds MB MiB and writes a bundle of the given level and K/V bytes: a peak resident
 * memory over 1.5x the call's bytes is missed (exit 1), one under is met; the wall budget is judged only
 * for a level-6 run, the memory ratio only from 256 MiB of K/V; a run that leaves no bundle is exit 4,
 * and never read from an earlier run's folder. */
static void budgets_judge_peak_memory_and_wall_time_of_real_runs(void **s) {
  (void)s;
  const char *fake = "tests/fake_dkb.py";
  const char *b = tmp_file("budget-bundle.json", "{}");
  struct run_result r;
  /* 400 MiB resident against 1.5 x 256.25 MiB: missed */
  run_sh(&r, "MB=400 LEVEL=6 KV=268435456 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 1);
  assert_budget(r.out, "run_memory", "missed");
  assert_budget(r.out, "run_wall", "met");
  assert_budget(r.out, "validate_wall", "met");
  run_result_release(&r);
  run_sh(&r, "MB=0 LEVEL=6 KV=268435456 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 0);
  assert_budget(r.out, "run_memory", "met");
  run_result_release(&r);
  /* a run without the GPU work, or with too few bytes for the ratio to mean anything: not judged */
  run_sh(&r, "MB=400 LEVEL=2 KV=1048576 python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 0);
  assert_budget(r.out, "run_wall", "not judged: exit 0, level 2");
  assert_budget(r.out, "run_memory", "not judged");
  run_result_release(&r);
  /* the folder still holds the last run's bundle: a run that writes none must not be judged on it */
  run_sh(&r, "LEVEL=none python3 tools/budgets.py --dkb %s --out %s/budgets %s", fake, tmp_dir(), b);
  assert_int_equal(r.rc, 4);
  assert_non_null(strstr(r.err, "left no readable bundle"));
  run_result_release(&r);
}

DKB_TEST_GROUP(run, cmocka_unit_test(decode_fixtures_are_schema_valid_and_load),
               cmocka_unit_test(malformed_decode_fixtures_name_pointer_and_reason), cmocka_unit_test(schema_backend_names_have_the_registrys_form),
               cmocka_unit_test(tolerance_ratio_is_the_share_of_the_allowance),
               cmocka_unit_test(plan_items_cover_visible_keys_exactly), cmocka_unit_test(plan_counts_tile_classes_as_counted_by_hand),
               cmocka_unit_test(direct_plans_take_two_kv_heads_a_cta_where_the_grid_still_fills_the_device),
               cmocka_unit_test(auto_split_minimizes_the_lpt_makespan),
               cmocka_unit_test(auto_split_wave_counts_the_ctas_the_producers_are_built_for),
               cmocka_unit_test(cluster_plans_keep_each_requests_items_together_in_slot_order),
               cmocka_unit_test(run_without_gpu_stops_at_level_2_with_reason),
               cmocka_unit_test(dumps_recompute_in_numpy_to_1e12), cmocka_unit_test(bench_writes_table_csv_json_and_svg),
               cmocka_unit_test(bench_records_no_figure_for_a_case_it_did_not_time), cmocka_unit_test(bench_counters_give_each_case_its_dram_bytes_or_say_why_not),
               cmocka_unit_test(bench_targets_judge_level_6_results_only),
               cmocka_unit_test(bench_fraction_targets_need_k_v_from_dram_when_counters_say_so), cmocka_unit_test(bench_targets_errors_and_require_targets),
               cmocka_unit_test(bench_refuses_an_empty_matrix_and_a_target_gate_with_nothing_to_judge),
               cmocka_unit_test(bench_chart_plots_masked_calls_at_their_visible_fraction_and_reads_beside_them),
               cmocka_unit_test(bench_excess_is_the_median_beyond_the_floor_and_the_read_at_the_roofline),
               cmocka_unit_test(bench_read_fraction_is_the_same_bytes_read_over_the_median),
               cmocka_unit_test(bench_json_and_csv_carry_a_slowed_cases_clocks),
               cmocka_unit_test(split_policy_does_not_change_the_reference),
               cmocka_unit_test(sass_check_flags_an_unwritten_copy_descriptor),
               cmocka_unit_test(ncu_summary_shares_a_profiles_stalls_by_reason_and_instruction),
               cmocka_unit_test(budgets_judge_peak_memory_and_wall_time_of_real_runs),
               cmocka_unit_test(gpu_every_decode_fixture_reaches_level_6), cmocka_unit_test(gpu_split_k_agrees_with_split_1),
               cmocka_unit_test(gpu_tma_tiles_match_cp_async_tiles_bit_for_bit),
               cmocka_unit_test(gpu_tensor_core_producers_run_the_ctas_per_sm_the_planner_counts),
               cmocka_unit_test(gpu_run_with_counters_measures_dram_bytes),
               cmocka_unit_test(gpu_cold_counters_read_all_k_v_from_dram_and_write_back_no_flush),
               cmocka_unit_test(gpu_bench_times_one_same_bytes_read_per_size))
