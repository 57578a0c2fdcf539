/* test_phase.c - phase integration of article 0x08 through the C API (oracles/phase.h): the cell
 * ledgers of prefill/append/decode/training, bottom-right visibility and the append row trace, the
 * mixed-batch manifest, the append transaction that validates before it mutates, and every reason. */
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

#include "oracles/phase.h"

/* Token ids: a_k = 100 + k, b_k = 200 + k, d_k = 300 + k, p_k = 400 + k. */
#define A(k) (100 + (k))
#define BT(k) (200 + (k))
#define D(k) (300 + (k))
#define P(k) (400 + (k))

/* A token-id cache of up to 4 rows x 16 positions. */
struct tcache {
  struct phase_cache c;
  int64_t data[4][16], len[4], owner[4];
  int32_t table[4][4];
};

static void tcache_init(struct tcache *t, int64_t rows, int64_t capacity) {
  memset(t, 0, sizeof *t);
  t->c = (struct phase_cache){.rows = rows,
                              .capacity = capacity,
                              .row_bytes = sizeof(int64_t),
                              .len = t->len,
                              .owner = t->owner,
                              .data = (unsigned char *)t->data};
  for (int64_t r = 0; r < 4; r++) t->owner[r] = PHASE_NO_OWNER;
}

/* Row r of the logical cache is data + r * capacity positions. */
static int64_t tok(const struct tcache *t, int64_t r, int64_t p) { return (&t->data[0][0])[r * t->c.capacity + p]; }

static void commit_ok(struct tcache *t, const struct phase_request *r, int64_t n, const int64_t *rows) {
  char reason[64] = "", detail[256] = "";
  if (phase_cache_append(&t->c, r, n, rows, reason, detail)) fail_msg("rejected: %s: %s", reason, detail);
}

static void cell_ledgers_of_the_three_serving_phases(void **s) {
  (void)s;
  const struct {
    int64_t T, C, rect, vis, masked, post;
    enum phase_kind k;
  } row[] = {
      {0, 5, 25, 15, 10, 5, PHASE_PREFILL}, {5, 3, 24, 21, 3, 8, PHASE_APPEND}, {8, 1, 9, 9, 0, 9, PHASE_DECODE}};
  for (size_t i = 0; i < 3; i++) {
    struct phase_cells c;
    phase_cells(row[i].T, row[i].C, &c);
    assert_int_equal(c.rect, row[i].rect);
    assert_int_equal(c.visible, row[i].vis);
    assert_int_equal(c.masked, row[i].masked);
    assert_int_equal(c.post_length, row[i].post);
    assert_int_equal(phase_classify(row[i].T, row[i].C), row[i].k);
  }
  assert_int_equal(phase_classify(0, 0), PHASE_INVALID);
  assert_int_equal(phase_classify(4, 0), PHASE_INVALID);
  assert_string_equal(phase_kind_name(PHASE_APPEND), "append");
  assert_int_equal(phase_kind_parse("decode"), PHASE_DECODE);
}

/* phase_training_check's reason, "" when it accepts. */
static const char *training_reason(const struct phase_training *t) {
  static char reason[64];
  char detail[256];
  if (phase_training_check(t, reason, detail) == 0) reason[0] = '\0';
  return reason;
}

static void training_owns_backward_state_not_cache(void **s) {
  (void)s;
  struct phase_cells c;
  phase_cells(0, 4, &c);
  assert_int_equal(c.rect, 16);
  assert_int_equal(c.visible, 10);
  assert_int_equal(c.masked, 6);
  struct phase_training t = {.S = 4, .dropout_p = 0.1, .backward = 1, .saves_lse = 1, .saves_rng_state = 1};
  assert_string_equal(training_reason(&t), "");
  struct phase_training u = t;
  u.writes_serving_cache = 1;
  assert_string_equal(training_reason(&u), "training_mutates_cache");
  u = t;
  u.saves_rng_state = 0;
  assert_string_equal(training_reason(&u), "training_missing_rng_state");
  u.dropout_p = 0; /* without dropout there is no RNG state to keep */
  assert_string_equal(training_reason(&u), "");
  u = t;
  u.saves_lse = 0;
  assert_string_equal(training_reason(&u), "training_missing_lse");
  u = t;
  u.backward = 0;
  assert_string_equal(training_reason(&u), "training_without_backward");
}

static void visibility_is_bottom_right(void **s) {
  (void)s;
  char reason[64], detail[256];
  for (int64_t i = 0; i < 3; i++) assert_int_equal(phase_row_end(PHASE_VIS_BOTTOM_RIGHT, 5, 3, i), 6 + i);
  assert_int_equal(phase_visibility_check(PHASE_VIS_BOTTOM_RIGHT, 5, 3, reason, detail), 0);
  assert_int_equal(phase_visibility_check(PHASE_VIS_UPPER_LEFT, 5, 3, reason, detail), -1);
  assert_string_equal(reason, "upper_left_causal_alignment");
  assert_string_equal(detail,
                      "row 0 at absolute position 5 sees [0, 1) under upper_left_causal: keys [1, 6) of its "
                      "visible prefix are hidden; derive positions from T + i");
  assert_int_equal(phase_visibility_check(PHASE_VIS_ALL_STAGED, 5, 3, reason, detail), -1);
  assert_string_equal(reason, "future_row_leakage");
  /* The wrong rules coincide with the contract where they cannot differ: no old rows, or one new row. */
  assert_int_equal(phase_visibility_check(PHASE_VIS_UPPER_LEFT, 0, 5, reason, detail), 0);
  assert_int_equal(phase_visibility_check(PHASE_VIS_ALL_STAGED, 8, 1, reason, detail), 0);
}

static void append_trace_over_old_cache(void **s) {
  (void)s;
  struct tcache t;
  tcache_init(&t, 1, 16);
  t.owner[0] = 7;
  int64_t a[9];
  for (int k = 0; k < 9; k++) a[k] = A(k);
  struct phase_request pre = {.request_id = 7, .cache_row_id = 0, .T = 0, .C = 5};
  commit_ok(&t, &pre, 1, a);
  struct phase_request app = {.request_id = 7, .cache_row_id = 0, .T = 5, .C = 3};
  /* Query a(5 + i) at absolute position 5 + i sees exactly a0..a(5 + i): old rows from the cache, staged
   * rows from the call, before anything is committed. */
  for (int64_t i = 0; i < 3; i++) {
    int64_t end = phase_row_end(PHASE_VIS_BOTTOM_RIGHT, app.T, app.C, i);
    assert_int_equal(end, 6 + i);
    for (int64_t k = 0; k < end; k++) assert_int_equal(*(const int64_t *)phase_key_row(&t.c, &app, a + 5, k), A(k));
  }
  assert_int_equal(t.len[0], 5);
  commit_ok(&t, &app, 1, a + 5);
  struct phase_request dec = {.request_id = 7, .cache_row_id = 0, .T = 8, .C = 1};
  commit_ok(&t, &dec, 1, a + 8);
  assert_int_equal(t.len[0], 9);
  for (int64_t k = 0; k < 9; k++) assert_int_equal(tok(&t, 0, k), A(k));
}

/* The mixed batch of 0x08F with cache rows out of active order. */
static void mixed_setup(struct tcache *t, struct phase_request r[3], int64_t rows[7], int64_t capacity) {
  tcache_init(t, 3, capacity);
  t->owner[0] = 3;
  t->owner[1] = 1;
  t->owner[2] = 2; /* mix_decode, mix_prefill, mix_append */
  int64_t *flat = &t->data[0][0]; /* row r starts at r * capacity */
  for (int k = 0; k < 9; k++) flat[k] = D(k);
  for (int k = 0; k < 6; k++) flat[2 * capacity + k] = BT(k);
  t->len[0] = 9;
  t->len[1] = 0;
  t->len[2] = 6;
  r[0] = (struct phase_request){.request_id = 1, .cache_row_id = 1, .T = 0, .C = 4, .name = "mix_prefill"};
  r[1] = (struct phase_request){.request_id = 2, .cache_row_id = 2, .T = 6, .C = 2, .name = "mix_append"};
  r[2] = (struct phase_request){.request_id = 3, .cache_row_id = 0, .T = 9, .C = 1, .name = "mix_decode"};
  const int64_t packed[7] = {P(0), P(1), P(2), P(3), BT(6), BT(7), D(9)};
  memcpy(rows, packed, sizeof packed);
}

static void mixed_batch_manifest_and_commit(void **s) {
  (void)s;
  struct tcache t;
  struct phase_request r[3];
  int64_t rows[7], qo[4];
  mixed_setup(&t, r, rows, 16);
  phase_qo_indptr(r, 3, qo);
  assert_int_equal(qo[0], 0);
  assert_int_equal(qo[1], 4);
  assert_int_equal(qo[2], 6);
  assert_int_equal(qo[3], 7);
  struct phase_batch b;
  phase_batch_ledger(r, 3, &b);
  assert_int_equal(b.visible, 35);
  assert_int_equal(b.rect, 42);
  assert_int_equal(b.padded_envelope, 120);
  assert_int_equal(b.outside_envelope, 78);
  assert_int_equal(b.appended, 7);
  commit_ok(&t, r, 3, rows);
  assert_int_equal(t.len[1], 4); /* 0 -> 4 */
  assert_int_equal(t.len[2], 8); /* 6 -> 8 */
  assert_int_equal(t.len[0], 10); /* 9 -> 10 */
  for (int k = 0; k < 4; k++) assert_int_equal(tok(&t, 1, k), P(k));
  for (int k = 0; k < 8; k++) assert_int_equal(tok(&t, 2, k), BT(k));
  for (int k = 0; k < 10; k++) assert_int_equal(tok(&t, 0, k), D(k));
}

/* A rejected transaction leaves every byte of the cache as it was. */
static void reject_untouched(struct tcache *t, const struct phase_request *r, int64_t n, const int64_t *rows,
                             const char *want) {
  struct tcache before = *t;
  char reason[64] = "", detail[256] = "";
  assert_int_equal(phase_cache_append(&t->c, r, n, rows, reason, detail), -1);
  assert_string_equal(reason, want);
  assert_memory_equal(t->data, before.data, sizeof t->data);
  assert_memory_equal(t->len, before.len, sizeof t->len);
}

static void append_validates_everything_before_mutating(void **s) {
  (void)s;
  struct tcache t;
  struct phase_request r[3];
  int64_t rows[7];
  mixed_setup(&t, r, rows, 9); /* mix_decode needs 10 positions */
  reject_untouched(&t, r, 3, rows, "cache_capacity_exceeded");
  char reason[64], detail[256];
  phase_append_check(&t.c, r, 3, reason, detail);
  assert_string_equal(detail, "request mix_decode: T + C = 10 rows do not fit cache row 0 of capacity 9");
  /* One edit of the valid manifest per row; each must be refused before any write. */
  static const struct {
    int b;
    char field;
    int64_t v;
    const char *why;
  } edit[] = {
      {1, 'T', 5, "stale_committed_length"}, /* row 2 holds 6 */
      {2, 'r', 2, "duplicate_cache_row_id"}, /* mix_append's row */
      {2, 'r', 5, "cache_row_out_of_range"},    {2, 'i', 1, "duplicate_request_id"},
      {2, 'C', 0, "invalid_active_request"}, /* T > 0, C = 0 */
      {2, 'd', 1, "inference_dropout_nonzero"}, /* dropout_p = 0.1 */
  };
  for (size_t e = 0; e < sizeof edit / sizeof edit[0]; e++) {
    mixed_setup(&t, r, rows, 16);
    struct phase_request *q = &r[edit[e].b];
    switch (edit[e].field) {
    case 'T': q->T = edit[e].v; break;
    case 'r': q->cache_row_id = edit[e].v; break;
    case 'i': q->request_id = edit[e].v; break;
    case 'C': q->C = edit[e].v; break;
    case 'd': q->dropout_p = 0.1; break;
    }
    reject_untouched(&t, r, 3, rows, edit[e].why);
  }
  mixed_setup(&t, r, rows, 16);
  for (int b = 0; b < 3; b++) r[b].cache_row_id = b; /* active index used as cache row */
  reject_untouched(&t, r, 3, rows, "cache_row_identity_mismatch");
  phase_append_check(&t.c, r, 3, reason, detail);
  assert_string_equal(detail,
                      "request mix_prefill names cache row 0, which holds mix_decode: freeze cache_row_id, "
                      "not the active index");
}

static void paged_append_checks_pages(void **s) {
  (void)s;
  struct tcache t;
  tcache_init(&t, 2, 16);
  t.owner[0] = 1;
  t.owner[1] = 2;
  const int32_t table[2][4] = {{3, 5, -1, -1}, {0, 1, 2, 4}};
  memcpy(t.table, table, sizeof table);
  t.c.page_size = 4;
  t.c.num_pages = 8;
  t.c.block_table = &t.table[0][0];
  for (int k = 0; k < 6; k++) t.data[0][k] = A(k);
  t.len[0] = 6;
  int64_t rows[3] = {A(6), A(7), A(8)};
  struct phase_request r = {.request_id = 1, .cache_row_id = 0, .T = 6, .C = 2};
  commit_ok(&t, &r, 1, rows); /* positions 6, 7 in page 5 */
  assert_int_equal(t.len[0], 8);
  r.T = 8;
  r.C = 1; /* position 8: block 2 has no page */
  reject_untouched(&t, &r, 1, rows + 2, "unmapped_cache_page");
  t.table[0][2] = 4; /* a page row 1 maps too */
  reject_untouched(&t, &r, 1, rows + 2, "shared_cache_page");
  t.table[0][2] = 6;
  commit_ok(&t, &r, 1, rows + 2);
  assert_int_equal(tok(&t, 0, 8), A(8));
}

static void commit_first_order_mutates_before_failing(void **s) {
  (void)s;
  struct tcache t;
  struct phase_request r[3];
  int64_t rows[7], written = -1, outside = -1;
  char reason[64], detail[256];
  mixed_setup(&t, r, rows, 9);
  assert_int_equal(phase_cache_append_unvalidated(&t.c, r, 3, rows, &written, &outside, reason, detail), -1);
  assert_string_equal(reason, "cache_capacity_exceeded");
  assert_int_equal(written, 6); /* mix_prefill and mix_append already committed */
  assert_int_equal(outside, 1); /* mix_decode's row past the allocation */
  assert_int_equal(t.len[1], 4);
  /* On a valid manifest it does what the transaction does. */
  struct tcache u;
  mixed_setup(&t, r, rows, 16);
  mixed_setup(&u, r, rows, 16);
  assert_int_equal(phase_cache_append_unvalidated(&t.c, r, 3, rows, &written, &outside, reason, detail), 0);
  commit_ok(&u, r, 3, rows);
  assert_memory_equal(t.data, u.data, sizeof t.data);
  assert_memory_equal(t.len, u.len, sizeof t.len);
}

static void batch_label_and_work_claims_are_checked(void **s) {
  (void)s;
  struct tcache t;
  struct phase_request r[3];
  int64_t rows[7];
  char reason[64], detail[256];
  mixed_setup(&t, r, rows, 16);
  assert_int_equal(phase_label_check(r, 3, PHASE_PREFILL, reason, detail), -1);
  assert_string_equal(reason, "global_phase_label");
  assert_string_equal(detail,
                      "the batch is labelled prefill but request mix_append with (T, C) = (6, 2) is append: "
                      "keep a phase per request");
  assert_int_equal(phase_label_check(r + 2, 1, PHASE_DECODE, reason, detail), 0);
  /* Measured work must come from a profiler counter, never from the padded envelope. */
  struct phase_batch b;
  phase_batch_ledger(r, 3, &b);
  assert_int_equal(phase_measured_cells_check(&b, 120, NULL, reason, detail), -1);
  assert_string_equal(reason, "padded_envelope_as_measured_work");
  assert_int_equal(phase_measured_cells_check(&b, 35, NULL, reason, detail), -1);
  assert_string_equal(reason, "measured_work_without_counter");
  assert_int_equal(phase_measured_cells_check(&b, 120, "sm__inst_executed.sum", reason, detail), 0);
}

/* Malformed phase fixtures fail with the JSON Pointer of the offending value. */
static void malformed_phase_fixture_names_its_pointer(void **s) {
  (void)s;
  struct {
    const char *name, *input, *err;
  } cases[] = {
      {"over.json",
       "{\"cache\": {\"capacity\": 2, \"rows\": [{\"owner\": null, \"tokens\": [\"a\", \"b\", \"c\"]}]}, "
       "\"calls\": [{\"requests\": [{\"id\": \"x\", \"cache_row_id\": 0, \"T\": 3, \"new_tokens\": [\"d\"]}]}]}",
       "/input/cache/rows/0/tokens: holds 3 rows, more than the capacity 2"},
      {"vis.json",
       "{\"cache\": {\"capacity\": 4, \"rows\": [{\"owner\": \"x\", \"tokens\": []}]}, \"calls\": [{\"visibility\": "
       "\"diagonal\", \"requests\": [{\"id\": \"x\", \"cache_row_id\": 0, \"T\": 0, \"new_tokens\": [\"d\"]}]}]}",
       "/input/calls/0/visibility: must be one of: bottom_right_causal, upper_left_causal, all_staged (got "
       "'diagonal')"},
      {"page.json",
       "{\"cache\": {\"capacity\": 4, \"page_size\": 2, \"num_pages\": 2, \"block_table\": [[0, 2]], \"rows\": "
       "[{\"owner\": \"x\", \"tokens\": []}]}, \"calls\": [{\"requests\": [{\"id\": \"x\", \"cache_row_id\": 0, "
       "\"T\": 0, \"new_tokens\": [\"d\"]}]}]}",
       "/input/cache/block_table/0/1: must be a page id in [0, 2) or -1 for unmapped"},
      {"none.json", "{}", "/input: must have 'calls' or 'training'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"schema\": \"dkb.contract/v1\", \"contract\": \"phase_integration\", \"name\": \"n\", \"expect\": [], "
             "\"input\": %s}\n",
             cases[i].input);
    assert_oracle_malformed(cases[i].name, text, cases[i].err);
  }
}

DKB_TEST_GROUP(phase, cmocka_unit_test(cell_ledgers_of_the_three_serving_phases),
               cmocka_unit_test(training_owns_backward_state_not_cache), cmocka_unit_test(visibility_is_bottom_right),
               cmocka_unit_test(append_trace_over_old_cache), cmocka_unit_test(mixed_batch_manifest_and_commit),
               cmocka_unit_test(append_validates_everything_before_mutating),
               cmocka_unit_test(paged_append_checks_pages), cmocka_unit_test(commit_first_order_mutates_before_failing),
               cmocka_unit_test(batch_label_and_work_claims_are_checked),
               cmocka_unit_test(malformed_phase_fixture_names_its_pointer))
