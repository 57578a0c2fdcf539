/* test_mask.c - mask programs of article 0x05-0x06 through their C API: predicates and polarity, the
 * worked column, the representability gate, triangle checks, the 10 x 8 tile counts with exact parity,
 * the conservative classifier and interval arithmetic on random masks, tiled == dense, the payload
 * ledger, the document-mask generator, and the 0x06J invalid fixtures failing closed. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/mask.h"
#include "oracles/rng.h"

/* The 10 x 8 FlashMask of fixtures/contracts/mask_program.flashmask_10x8.json. */
static int32_t UTS[8] = {0, 0, 0, 0, 0, 2, 0, 0}, UTE[8] = {0, 0, 0, 0, 5, 4, 4, 7};
static int32_t LTS[8] = {10, 1, 10, 10, 10, 7, 10, 10}, LTE[8] = {10, 9, 10, 10, 10, 10, 10, 10};
static int64_t CI8[2] = {0, 8};

static struct mask_program mask_10x8(void) {
  return (struct mask_program){.kind = MASK_FLASHMASK, .col_indptr = CI8, .uts = UTS, .ute = UTE, .lts = LTS, .lte = LTE};
}

static void predicates_follow_each_kind(void **s) {
  (void)s;
  struct mask_program none = {.kind = MASK_NONE}, causal = {.kind = MASK_CAUSAL};
  struct mask_program win = {.kind = MASK_SLIDING_WINDOW, .window = 3, .sink = 2};
  assert_true(mask_visible(&none, 0, 0, 7));
  assert_true(mask_visible(&causal, 0, 5, 5) && !mask_visible(&causal, 0, 5, 6));
  /* window 3 at q = 9: keys 7, 8, 9 and the sinks 0, 1 */
  int want[10] = {1, 1, 0, 0, 0, 0, 0, 1, 1, 1};
  for (int k = 0; k < 10; k++) assert_int_equal(mask_visible(&win, 0, 9, k), want[k]);
  assert_false(mask_visible(&win, 0, 0, 1));      /* a sink is still causal */
  struct mask_program m = mask_10x8();
  assert_false(mask_visible(&m, 0, 0, 8));        /* no column 8 in this request */
  assert_int_equal(mask_kind_parse("sliding_window"), MASK_SLIDING_WINDOW);
  assert_int_equal(mask_kind_parse("window"), -1);
  assert_string_equal(mask_kind_name(MASK_FLASHMASK), "flashmask");
  assert_string_equal(tile_class_name(TILE_PARTIAL), "PARTIAL");
}

static void worked_column_j5_masks_2_3_7_8_9(void **s) {
  (void)s;
  struct mask_program m = mask_10x8();
  unsigned char masked[10];
  for (int q = 0; q < 10; q++) masked[q] = !mask_visible(&m, 0, q, 5);
  const unsigned char want[10] = {0, 0, 1, 1, 0, 0, 0, 1, 1, 1};
  assert_memory_equal(masked, want, 10);
  int32_t iv[4];
  assert_int_equal(flashmask_from_column(masked, 10, 5, iv), 0);
  assert_true(iv[0] == 2 && iv[1] == 4 && iv[2] == 7 && iv[3] == 10);
  assert_int_equal(mask_column_runs(masked, 10), 2);
}

static void gate_refuses_five_runs_and_one_sided_pairs(void **s) {
  (void)s;
  const unsigned char five[10] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  int32_t iv[4];
  assert_int_equal(mask_column_runs(five, 10), 5);
  assert_int_equal(flashmask_from_column(five, 10, 5, iv), -1);
  assert_int_equal(flashmask_from_column(five, 10, -1, iv), -1);
  const unsigned char above[10] = {1, 0, 1, 1, 0, 0, 0, 0, 0, 0};   /* two runs, both above row 5 */
  assert_int_equal(flashmask_from_column(above, 10, 5, iv), -1);
  assert_int_equal(flashmask_from_column(above, 10, -1, iv), 0);   /* no triangle contract: fine */
  assert_true(iv[0] == 0 && iv[1] == 1 && iv[2] == 2 && iv[3] == 4);
  const unsigned char across[10] = {0, 0, 0, 1, 1, 1, 1, 0, 0, 0};  /* one run across the diagonal 4 */
  assert_int_equal(flashmask_from_column(across, 10, 4, iv), 0);
  assert_true(iv[0] == 3 && iv[1] == 5 && iv[2] == 5 && iv[3] == 7);
  const unsigned char none[10] = {0};
  assert_int_equal(flashmask_from_column(none, 10, 4, iv), 0);
  assert_true(iv[0] == 0 && iv[1] == 0 && iv[2] == 10 && iv[3] == 10);
}

static void polarity_is_converted_explicitly(void **s) {
  (void)s;
  const unsigned char cells[4] = {1, 0, 0, 1};
  unsigned char vis[4], inv[4];
  mask_to_visible(cells, 4, MASK_TRUE_MEANS_VISIBLE, vis);
  mask_to_visible(cells, 4, MASK_TRUE_MEANS_MASKED, inv);
  for (int i = 0; i < 4; i++) assert_int_equal(vis[i], !inv[i]);
  assert_int_equal(inv[0], 0);
  assert_int_equal(mask_polarity_parse("true_means_masked"), MASK_TRUE_MEANS_MASKED);
  assert_int_equal(mask_polarity_parse("masked"), -1);
  assert_string_equal(mask_polarity_name(MASK_TRUE_MEANS_VISIBLE), "true_means_visible");
}

static void malformed_triangles_are_rejected(void **s) {
  (void)s;
  char reason[64], detail[256];
  assert_int_equal(flashmask_check(UTS, UTE, LTS, LTE, 8, 0, 10, reason, detail), 0);
  const int32_t bad[][4] = {{3, 2, 10, 10}, {0, 6, 10, 10}, {0, 0, 3, 6}, {0, 5, 4, 8}, {0, 0, 10, 11}};
  const char *why[] = {"reversed or outside", "reaches below the diagonal", "starts above the diagonal", "overlap",
                       "reversed or outside"};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(flashmask_check(&bad[i][0], &bad[i][1], &bad[i][2], &bad[i][3], 1, 4, 10, reason, detail), -1);
    assert_string_equal(reason, "malformed_triangle_intervals");
    if (!strstr(detail, why[i])) fail_msg("case %d: %s", i, detail);
  }
  flashmask_check(&bad[3][0], &bad[3][1], &bad[3][2], &bad[3][3], 1, 4, 10, reason, detail);
  assert_string_equal(detail, "column 0 (diagonal row 4): UT [0, 5), LT [4, 8) over 10 rows: the two intervals overlap");
  struct mask_program m = mask_10x8();
  assert_int_equal(mask_program_check(&m, 1, reason, detail), 0);
  struct mask_program w = {.kind = MASK_SLIDING_WINDOW, .window = 0};
  assert_int_equal(mask_program_check(&w, 1, reason, detail), -1);
  assert_string_equal(reason, "bad_window");
}

static void summaries_have_the_article_order(void **s) {
  (void)s;
  int32_t sum[4 * 8];
  flashmask_summarize(UTS, UTE, LTS, LTE, 8, 2, sum);
  const int32_t block2[8] = {0, 2, 4, 5, 7, 10, 10, 10};   /* columns 4, 5 */
  assert_memory_equal(sum + 16, block2, sizeof block2);
  /* rows [2, 4) against columns 4-5: both columns hide them in UT -> SKIP */
  assert_int_equal(flashmask_classify(sum + 16, 2, 4), TILE_SKIP);
  assert_int_equal(flashmask_classify(sum + 16, 4, 6), TILE_PARTIAL);
  assert_int_equal(flashmask_classify(sum + 8, 0, 10), TILE_FULL);   /* columns 2, 3 hide nothing */
  assert_int_equal(flashmask_classify(sum, 3, 3), TILE_SKIP);        /* empty tile */
}

/* Exact-arithmetic scores: visible ones are the row base or 1000 below it (every exp is 1 or 0), hidden
 * ones lie above every visible score; values are multiples of 1/16. */
static void exact_scores(struct dkb_rng *g, const struct mask_program *m, int64_t rows, int64_t cols, int64_t d,
                         double *sc, double *v) {
  for (int64_t i = 0; i < rows; i++) {
    double base = (double)(int64_t)dkb_rng_below(g, 8) - 4;
    for (int64_t k = 0; k < cols; k++)
      sc[i * cols + k] = mask_visible(m, 0, i, k) ? base - (dkb_rng_unit(g) < 0.5 ? 1000 : 0)
                                                  : base + 1 + (double)(int64_t)dkb_rng_below(g, 8);
  }
  for (int64_t k = 0; k < cols * d; k++) v[k] = ((double)(int64_t)dkb_rng_below(g, 65) - 32) / 16;
}

static double max_diff(const double *a, const double *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) m = fmax(m, isnan(a[i] - b[i]) ? INFINITY : fabs(a[i] - b[i]));
  return m;
}

static void article_10x8_counts_and_zero_error(void **s) {
  (void)s;
  struct mask_program m = mask_10x8();
  int32_t sum[4 * 8];
  int64_t si[2];
  assert_int_equal(flashmask_summary_rows(CI8, 1, 2, si), 4);
  flashmask_summarize(UTS, UTE, LTS, LTE, 8, 2, sum);
  m.summary_block = 2;
  m.summary_indptr = si;
  m.summaries = sum;
  unsigned char map[20];
  struct mask_tile_counts c = {.map = map};
  struct mask_exec ex = {2, 2, MASK_CLASSIFY_PROGRAM, MASK_PARTIAL_BEFORE_UPDATE};
  double sc[80], v[32], o[40], lse[10], od[40], lsed[10];
  struct dkb_rng g;
  dkb_rng_seed(&g, 6);
  exact_scores(&g, &m, 10, 8, 4, sc, v);
  assert_int_equal(mask_attention_tiled(&m, 0, 0, 10, 8, sc, v, 4, &ex, o, lse, &c), 0);
  mask_attention_dense(&m, 0, 0, 10, 8, sc, v, 4, od, lsed);
  assert_int_equal(c.tiles[TILE_FULL], 6);
  assert_int_equal(c.tiles[TILE_SKIP], 3);
  assert_int_equal(c.tiles[TILE_PARTIAL], 11);
  assert_memory_equal(c.exact, c.tiles, sizeof c.tiles);   /* the summaries are exact on this mask */
  assert_int_equal(c.skipped_cells, 12);
  assert_int_equal(c.unsafe_full + c.unsafe_skip + c.conservative, 0);
  const char *want = "PFPSPFSSPFPPPFPPPFPF";
  for (int i = 0; i < 20; i++) assert_int_equal("SFP"[map[i]], want[i]);
  assert_true(max_diff(o, od, 40) == 0 && max_diff(lse, lsed, 10) == 0);
  /* The two invalid implementations of 0x06J, executed. */
  ex.partial = MASK_PARTIAL_AFTER_UPDATE;
  mask_attention_tiled(&m, 0, 0, 10, 8, sc, v, 4, &ex, o, lse, &c);
  assert_true(max_diff(lse, lsed, 10) > 1);
  ex.partial = MASK_PARTIAL_BEFORE_UPDATE;
  ex.classifier = MASK_CLASSIFY_SUMMARY_AS_MEMBERSHIP;
  mask_attention_tiled(&m, 0, 0, 10, 8, sc, v, 4, &ex, o, lse, &c);
  assert_int_equal(c.unsafe_skip, 11);
  assert_int_equal(c.tiles[TILE_PARTIAL], 0);
  assert_true(max_diff(o, od, 40) > 0.1);
}

/* A random program of any kind over rows x cols (FlashMask: random well-formed vectors). */
static void random_program(struct dkb_rng *g, int kind, int64_t rows, int64_t cols, int32_t *vec, int64_t stride,
                           int64_t *ci, struct mask_program *m) {
  *m = (struct mask_program){.kind = (enum mask_kind)kind, .window = 1 + (int64_t)dkb_rng_below(g, 6),
                             .sink = (int64_t)dkb_rng_below(g, 3), .col_indptr = ci};
  ci[0] = 0;
  ci[1] = cols;
  if (kind != MASK_FLASHMASK) return;
  flashmask_random(g, cols, 0, rows > cols ? rows : cols, 0.3, vec, vec + stride, vec + 2 * stride, vec + 3 * stride);
  m->uts = vec; m->ute = vec + stride; m->lts = vec + 2 * stride; m->lte = vec + 3 * stride;
}

/* Every sub-rectangle tile of random masks: FlashMask summaries never give an unsafe FULL or SKIP;
 * causal and sliding-window interval arithmetic equals the exact class (with query positions that
 * start below zero, as bottom-right alignment gives when C > N). */
static void classifier_is_conservative_and_interval_arithmetic_exact(void **s) {
  (void)s;
  struct dkb_rng g;
  dkb_rng_seed(&g, 20260506);
  int32_t vec[4 * 12], sum[8 * 12];
  int64_t ci[2], si[2];
  long long unsafe = 0, conservative = 0, mismatch = 0, tiles = 0;
  char reason[64], detail[256];
  for (int trial = 0; trial < 1500; trial++) {
    int64_t rows = 1 + (int64_t)dkb_rng_below(&g, 12), cols = 1 + (int64_t)dkb_rng_below(&g, 12);
    int64_t shift = trial % 2 ? 0 : -(int64_t)dkb_rng_below(&g, 4);
    struct mask_program m;
    random_program(&g, trial % MASK_KIND_COUNT, rows, cols, vec, 12, ci, &m);
    if (m.kind == MASK_FLASHMASK) {
      shift = 0;
      assert_int_equal(mask_program_check(&m, 1, reason, detail), 0);
      if (trial % 8 == 3) {
        int64_t blk = 1 + (int64_t)dkb_rng_below(&g, 5);
        flashmask_summary_rows(ci, 1, blk, si);
        flashmask_summarize(m.uts, m.ute, m.lts, m.lte, cols, blk, sum);
        m.summary_block = blk; m.summary_indptr = si; m.summaries = sum;
        assert_int_equal(mask_program_check(&m, 1, reason, detail), 0);
      }
    }
    for (int64_t q0 = shift; q0 < rows; q0++)
      for (int64_t q1 = q0 + 1; q1 <= rows; q1++)
        for (int64_t k0 = 0; k0 < cols; k0++)
          for (int64_t k1 = k0 + 1; k1 <= cols; k1++) {
            enum tile_class c = mask_tile_class(&m, 0, q0, q1, k0, k1), x = mask_tile_class_exact(&m, 0, q0, q1, k0, k1);
            tiles++;
            unsafe += c != TILE_PARTIAL && c != x;
            conservative += c == TILE_PARTIAL && x != TILE_PARTIAL;
            mismatch += m.kind != MASK_FLASHMASK && c != x;
          }
  }
  assert_true(tiles > 1000000);
  assert_int_equal(unsafe, 0);
  assert_int_equal(mismatch, 0);
  assert_true(conservative > 0);   /* the summaries do lose information; they never lie */
}

static void tiled_equals_dense_on_random_masks(void **s) {
  (void)s;
  struct dkb_rng g;
  dkb_rng_seed(&g, 77);
  int32_t vec[4 * 16];
  int64_t ci[2];
  double sc[16 * 16], v[16 * 3], o[16 * 3], od[16 * 3], l[16], ld[16], err = 0;
  long long all_masked = 0;
  for (int trial = 0; trial < 800; trial++) {
    int64_t rows = 1 + (int64_t)dkb_rng_below(&g, 16), cols = 1 + (int64_t)dkb_rng_below(&g, 16);
    struct mask_program m;
    random_program(&g, trial % MASK_KIND_COUNT, rows, cols, vec, 16, ci, &m);
    for (int64_t i = 0; i < rows * cols; i++) sc[i] = dkb_rng_uniform(&g, -6, 6);
    for (int64_t i = 0; i < cols * 3; i++) v[i] = dkb_rng_uniform(&g, -1, 1);
    struct mask_exec ex = {1 + (int64_t)dkb_rng_below(&g, 5), 1 + (int64_t)dkb_rng_below(&g, 5),
                           trial % 3 ? MASK_CLASSIFY_PROGRAM : MASK_CLASSIFY_EXACT, MASK_PARTIAL_BEFORE_UPDATE};
    struct mask_tile_counts c = {0};
    assert_int_equal(mask_attention_tiled(&m, 0, 0, rows, cols, sc, v, 3, &ex, o, l, &c), 0);
    mask_attention_dense(&m, 0, 0, rows, cols, sc, v, 3, od, ld);
    for (int64_t i = 0; i < rows; i++)
      if (isinf(ld[i])) {   /* all-masked row: O = 0, LSE = -inf on both paths */
        all_masked++;
        assert_true(isinf(l[i]) && l[i] < 0 && o[i * 3] == 0 && o[i * 3 + 1] == 0 && o[i * 3 + 2] == 0);
      }
    err = fmax(err, fmax(max_diff(o, od, (size_t)(rows * 3)), max_diff(l, ld, (size_t)rows)));
    assert_int_equal(c.unsafe_full + c.unsafe_skip, 0);
  }
  assert_true(all_masked > 0);
  assert_true(err <= 4e-15);   /* uniform real scores: only the summation order differs */
}

static void payload_ledger_at_131072(void **s) {
  (void)s;
  struct mask_payload p;
  mask_payload_ledger(131072, 131072, 64, &p);
  assert_true(p.dense_bytes == 17179869184LL);   /* 16,384 MiB */
  assert_int_equal(p.interval_bytes, 2097152);   /* 2 MiB */
  assert_int_equal(p.summary_bytes, 65536);      /* 64 KiB */
  assert_int_equal(p.dense_bytes >> 20, 16384);
}

static void document_masks_are_causal_within_each_document(void **s) {
  (void)s;
  const int64_t docs[4] = {3, 5, 2, 6}, N = 16;
  int32_t v[4][16];
  assert_int_equal(flashmask_documents(docs, 4, N, v[0], v[1], v[2], v[3]), 0);
  int64_t ci[2] = {0, N}, doc_of[16];
  for (int64_t i = 0, p = 0; i < 4; i++)
    for (int64_t j = 0; j < docs[i]; j++) doc_of[p++] = i;
  struct mask_program m = {.kind = MASK_FLASHMASK, .col_indptr = ci, .uts = v[0], .ute = v[1], .lts = v[2], .lte = v[3]};
  char reason[64], detail[256];
  assert_int_equal(mask_program_check(&m, 1, reason, detail), 0);
  for (int64_t q = 0; q < N; q++)
    for (int64_t k = 0; k < N; k++) assert_int_equal(mask_visible(&m, 0, q, k), doc_of[q] == doc_of[k] && k <= q);
  int in_last = 0, elsewhere = 0;   /* the decode query (q = N - 1) sees exactly the last document */
  for (int64_t k = 0; k < N; k++)
    if (mask_visible(&m, 0, N - 1, k)) k >= 10 ? in_last++ : elsewhere++;
  assert_int_equal(in_last, 6);
  assert_int_equal(elsewhere, 0);
  /* Its tiles over 4-key blocks: keys [0,4) are hidden from the decode row, [12,16) fully visible. */
  assert_int_equal(mask_tile_class(&m, 0, N - 1, N, 0, 4), TILE_SKIP);
  assert_int_equal(mask_tile_class(&m, 0, N - 1, N, 12, 16), TILE_FULL);
  assert_int_equal(flashmask_documents(docs, 4, 15, v[0], v[1], v[2], v[3]), -1);
}

static void stored_summaries_match_and_stale_ones_are_caught(void **s) {
  (void)s;
  const int64_t docs[3] = {40, 30, 58}, N = 128;
  int32_t v[4][128], sum[8 * 4];
  int64_t ci[2] = {0, N}, si[2];
  flashmask_documents(docs, 3, N, v[0], v[1], v[2], v[3]);
  struct mask_program plain = {.kind = MASK_FLASHMASK, .col_indptr = ci, .uts = v[0], .ute = v[1], .lts = v[2], .lte = v[3]};
  struct mask_program fast = plain;
  flashmask_summary_rows(ci, 1, 32, si);
  flashmask_summarize(v[0], v[1], v[2], v[3], N, 32, sum);
  fast.summary_block = 32; fast.summary_indptr = si; fast.summaries = sum;
  for (int64_t q0 = 0; q0 < N; q0 += 16)
    for (int64_t k0 = 0; k0 < N; k0 += 8)
      for (int64_t k1 = k0 + 8; k1 <= N; k1 += 24)
        assert_int_equal(mask_tile_class(&fast, 0, q0, q0 + 16, k0, k1), mask_tile_class(&plain, 0, q0, q0 + 16, k0, k1));
  char reason[64], detail[256];
  assert_int_equal(mask_program_check(&fast, 1, reason, detail), 0);
  sum[8 + 3] += 1;
  assert_int_equal(mask_program_check(&fast, 1, reason, detail), -1);
  assert_string_equal(reason, "stale_summaries");
}

static void invalid_fixtures_fail_closed_with_their_reasons(void **s) {
  (void)s;
  static const char *const files[][2] = {
      {"mask_program", "inverted_polarity"},          {"mask_column", "inclusive_interval_ends"},
      {"mask_program", "malformed_triangle_intervals"}, {"mask_program", "summary_overlap_as_membership"},
      {"mask_program", "partial_mask_after_softmax"}, {"mask_column", "runs_exceed_two_intervals"},
      {"mask_ledger", "resident_metadata_as_traffic"}, {"mask_ledger", "prefill_evidence_as_decode_proof"}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    struct run_result r;
    run_sh(&r, "build/dkb oracle fixtures/contracts/%s.invalid.%s.json", files[i][0], files[i][1]);
    char want[128];
    snprintf(want, sizeof want, "rejected: %s: ", files[i][1]);
    if (r.rc != 0 || !strstr(r.out, want) || !strncmp(r.out, "FAIL", 4)) fail_msg("%s: rc %d: %s", files[i][1], r.rc, r.out);
    run_result_release(&r);
  }
}

static void short_vector_is_an_input_error_with_its_pointer(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "sed 's/\"ute\": \\[0, 0, 0, 0, 5, 4, 4, 7\\]/\"ute\": [0, 0, 0]/' "
             "fixtures/contracts/mask_program.flashmask_10x8.json > %s/mask_bad.json && build/dkb oracle %s/mask_bad.json",
         tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 3);
  char want[512];
  snprintf(want, sizeof want, "dkb: error: %s/mask_bad.json: /input/program/ute: must have 8 elements (got 3)\n", tmp_dir());
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

DKB_TEST_GROUP(mask, cmocka_unit_test(short_vector_is_an_input_error_with_its_pointer), cmocka_unit_test(predicates_follow_each_kind), cmocka_unit_test(worked_column_j5_masks_2_3_7_8_9),
               cmocka_unit_test(gate_refuses_five_runs_and_one_sided_pairs), cmocka_unit_test(polarity_is_converted_explicitly),
               cmocka_unit_test(malformed_triangles_are_rejected), cmocka_unit_test(summaries_have_the_article_order),
               cmocka_unit_test(article_10x8_counts_and_zero_error),
               cmocka_unit_test(classifier_is_conservative_and_interval_arithmetic_exact),
               cmocka_unit_test(tiled_equals_dense_on_random_masks), cmocka_unit_test(payload_ledger_at_131072),
               cmocka_unit_test(document_masks_are_causal_within_each_document),
               cmocka_unit_test(stored_summaries_match_and_stale_ones_are_caught),
               cmocka_unit_test(invalid_fixtures_fail_closed_with_their_reasons))
