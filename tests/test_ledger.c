/* test_ledger.c - the launch and storage ledgers of article 0x03 through the C API (oracles/ledger.h):
 * ragged bounds, owner grids, both workspace ABIs, reduction path, Q and K/V ledgers, the capacity
 * and head-width tails, and every failure reason of ledger_check (the 0x03J table and its neighbours). */
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

#include "oracles/ledger.h"

static const int64_t T_MAIN[2] = {4096, 3587};
static const struct ledger_ws_abi MLU = {LEDGER_ABI_MLU, DKB_F32, DKB_F32, DKB_F32, DKB_U8};
static const struct ledger_ws_abi LSE_O = {LEDGER_ABI_LSE_O, DKB_BF16, DKB_F32, LEDGER_NO_FIELD, DKB_U8};

/* The ragged GQA call of 0x03A. */
static struct ledger_call main_call(void) {
  return (struct ledger_call){.B = 2,
                              .H_q = 8,
                              .H_kv = 2,
                              .d_qk = 128,
                              .d_v = 128,
                              .T = T_MAIN,
                              .policy = LEDGER_SPLIT_BALANCED,
                              .S = 8,
                              .S_capacity = 8,
                              .q = DKB_BF16,
                              .k = DKB_BF16,
                              .v = DKB_BF16,
                              .o = DKB_BF16,
                              .lse = DKB_F32,
                              .write_lse = 1};
}

static const int64_t T_CAP[2] = {3, 0};
/* The fixed-capacity fixture of 0x03G (H_kv and head widths are this test's choice). */
static struct ledger_call capacity_call(void) {
  struct ledger_call c = main_call();
  c.B = 2;
  c.H_q = 4;
  c.T = T_CAP;
  c.S = 5;
  c.S_capacity = 8;
  return c;
}

static const int64_t T_HW[1] = {1000};
/* The head-width fixture of 0x03G: N_cfg = B * H_q * S = 32. */
static struct ledger_call head_width_call(void) {
  struct ledger_call c = main_call();
  c.B = 1;
  c.T = T_HW;
  c.d_qk = 80;
  c.d_v = 80;
  c.S = 4;
  c.S_capacity = 0;
  c.vec_align = 32;
  return c;
}

static void check_ok(const struct ledger_call *c, const struct ledger_claims *k) {
  char reason[64] = "", detail[256] = "";
  if (ledger_check(c, k, reason, detail)) fail_msg("rejected: %s: %s", reason, detail);
}

static void check_reject(const struct ledger_call *c, const struct ledger_claims *k, const char *want) {
  char reason[64] = "", detail[256] = "";
  assert_int_equal(ledger_check(c, k, reason, detail), -1);
  assert_string_equal(reason, want);
  assert_true(strlen(detail) > 0);
}

static void ragged_bounds_are_per_request(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  const int64_t want1[8] = {449, 449, 449, 448, 448, 448, 448, 448};
  int64_t prev = 0;
  for (int64_t sp = 0; sp < 8; sp++) {
    int64_t a, e;
    assert_int_equal(ledger_split_bounds(&c, 0, sp, &a, &e), 1);
    assert_int_equal(e - a, 512);
    assert_int_equal(ledger_split_bounds(&c, 1, sp, &a, &e), 1);
    assert_int_equal(e - a, want1[sp]);
    assert_int_equal(a, prev); /* disjoint exact coverage of [0, T_1) */
    prev = e;
  }
  assert_int_equal(prev, 3587);
}

static void producer_and_reducer_grids(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_owners o;
  ledger_owners(&c, &o);
  assert_int_equal(o.producer, 128);
  assert_int_equal(o.active, 128);
  assert_int_equal(o.reducer, 16);
  assert_int_equal(o.nonempty_merges, 112);
  assert_int_equal(o.identity, 0);
  assert_int_equal(o.unwritten_consumed, 0);
}

static void workspace_bytes_of_both_abis(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_workspace m, l;
  ledger_workspace(&c, &MLU, &m);
  ledger_workspace(&c, &LSE_O, &l);
  assert_int_equal(m.state_bytes, 521);
  assert_int_equal(m.logical, 66688);
  assert_int_equal(m.capacity, 66688);
  assert_int_equal(l.state_bytes, 261);
  assert_int_equal(l.logical, 33408);
  assert_int_equal(m.output_write, 4096);
  assert_int_equal(m.lse_write, 64);
  assert_int_equal(m.reduction_path, 137536);
  assert_int_equal(l.reduction_path, 70976);
  c.write_lse = 0; /* the LSE term is optional */
  ledger_workspace(&c, &MLU, &m);
  assert_int_equal(m.reduction_path, 137536 - 64);
  struct ledger_ws_abi no_valid = LSE_O;
  no_valid.valid = LEDGER_NO_FIELD; /* emptiness as an LSE sentinel: 0 validity bytes */
  ledger_workspace(&c, &no_valid, &l);
  assert_int_equal(l.logical, 128 * 260);
}

static void q_and_kv_ledgers(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_traffic t;
  struct ledger_workspace m, l;
  ledger_traffic(&c, &t);
  ledger_workspace(&c, &MLU, &m);
  ledger_workspace(&c, &LSE_O, &l);
  assert_int_equal(t.q_unique, 4096);
  assert_int_equal(t.q_demand, 32768);
  assert_int_equal(t.kv_unique, 7867392);
  assert_int_equal(t.kv_qhead_demand, 31469568);
  assert_int_equal(ledger_full_demand(&t, &m), 31639872);
  assert_int_equal(ledger_full_demand(&t, &l), 31573312);
}

static void capacity_envelope_writes_identity(void **s) {
  (void)s;
  struct ledger_call c = capacity_call();
  struct ledger_owners o;
  ledger_owners(&c, &o);
  assert_int_equal(o.producer, 64);
  assert_int_equal(o.active, 12);
  assert_int_equal(o.identity, 52);
  assert_int_equal(o.reducer, 8);
  assert_int_equal(o.nonempty_merges, 8);
  const int64_t want0[5] = {1, 1, 1, 0, 0};
  for (int64_t sp = 0; sp < 8; sp++) {
    int64_t a, e;
    int live = ledger_split_bounds(&c, 0, sp, &a, &e);
    assert_int_equal(live, sp < 5);
    assert_int_equal(e - a, sp < 5 ? want0[sp] : 0);
    live = ledger_split_bounds(&c, 1, sp, &a, &e); /* the second request: eight empty slots */
    assert_int_equal(e - a, 0);
  }
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.alloc_splits = 8;
  k.alloc_width = 128;
  check_ok(&c, &k);
  /* A runtime that reduces only [0, S) need not write the inactive slots (0x03I). */
  c.reduce = LEDGER_REDUCE_CONFIGURED;
  c.writes = LEDGER_WRITE_CONFIGURED;
  k.alloc_splits = 0;
  check_ok(&c, &k);
}

static void head_width_tail_pads_lanes_only(void **s) {
  (void)s;
  struct ledger_call c = head_width_call();
  struct ledger_workspace w;
  ledger_workspace(&c, &MLU, &w);
  assert_int_equal(ledger_d_v_padded(&c), 96);
  assert_int_equal(w.logical, 10528);
  assert_int_equal(w.capacity, 12576);
  assert_int_equal(w.capacity - w.logical, 2048);
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.alloc_splits = 4;
  k.alloc_width = 96;
  k.abi = &MLU;
  k.ws_bytes = 12576;
  k.ws_capacity = 1;
  k.output_width = 80;
  check_ok(&c, &k);
}

static void fixed_chunk_last_chunk_is_shorter(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  c.policy = LEDGER_SPLIT_FIXED_CHUNK;
  c.chunk = 512;
  c.S_capacity = 0;
  assert_int_equal(ledger_splits(&c), 8);
  int64_t a, e;
  ledger_split_bounds(&c, 1, 7, &a, &e);
  assert_int_equal(a, 3584);
  assert_int_equal(e, 3587);
  c.chunk = 1000; /* ceil(4096 / 1000) = 5 splits; request 1 has 4 and one empty */
  assert_int_equal(ledger_splits(&c), 5);
  ledger_split_bounds(&c, 1, 4, &a, &e);
  assert_int_equal(e - a, 0);
}

static void call_check_names_the_field(void **s) {
  (void)s;
  char field[32], msg[256];
  struct ledger_call c = main_call();
  assert_int_equal(ledger_call_check(&c, field, msg), 0);
  c.H_kv = 3;
  assert_int_equal(ledger_call_check(&c, field, msg), -1);
  assert_string_equal(field, "H_kv");
  assert_string_equal(msg, "must divide H_q (a query head maps to one K/V head)");
  c = main_call();
  c.S_capacity = 4;
  assert_int_equal(ledger_call_check(&c, field, msg), -1);
  assert_string_equal(field, "S_capacity");
  assert_string_equal(msg, "must be >= the configured split count 8 (got 4)");
  const int64_t neg[2] = {4096, -1};
  c = main_call();
  c.T = neg;
  assert_int_equal(ledger_call_check(&c, field, msg), -1);
  assert_string_equal(field, "T/1");
}

/* Per-request balanced bounds as a plan declares them: [B][S][2]. */
static void plan_bounds(const struct ledger_call *c, int64_t *out) {
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t sp = 0; sp < c->S; sp++)
      ledger_split_bounds(c, b, sp, &out[(b * c->S + sp) * 2], &out[(b * c->S + sp) * 2 + 1]);
}

static void declared_bounds_are_checked(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  int64_t bd[2 * 8 * 2];
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.bounds = bd;
  plan_bounds(&c, bd);
  check_ok(&c, &k);
  /* Batch maximum T for every request: request 1 inherits request 0's bounds. */
  memcpy(bd + 16, bd, 16 * sizeof *bd);
  check_reject(&c, &k, "split_bounds_not_per_request");
  plan_bounds(&c, bd);
  bd[16 + 2 * 2 + 1] -= 1; /* request 1 split 2 ends one key early: a gap */
  check_reject(&c, &k, "split_bounds_not_partition");
  plan_bounds(&c, bd);
  bd[16 + 2 * 2 + 1] += 1; /* ... one key late: an overlap */
  check_reject(&c, &k, "split_bounds_not_partition");
  plan_bounds(&c, bd);
  int64_t t0 = bd[16], t1 = bd[17]; /* swap splits 0 and 1 of request 1: still a cover, not the policy's */
  bd[16] = bd[18];
  bd[17] = bd[19];
  bd[18] = t0;
  bd[19] = t1;
  check_reject(&c, &k, "split_bounds_policy_mismatch");
}

static void launch_must_match_allocation(void **s) {
  (void)s;
  struct ledger_call c = capacity_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.alloc_splits = 5; /* [B, H_q, S, d_v] allocated, S_capacity launched */
  check_reject(&c, &k, "launch_allocation_mismatch");
  struct ledger_call h = head_width_call();
  ledger_claims_init(&k);
  k.alloc_width = 80; /* logical width allocated, padded lanes launched */
  check_reject(&h, &k, "launch_allocation_mismatch");
}

static void reducer_must_not_read_unwritten_slots(void **s) {
  (void)s;
  struct ledger_call c = capacity_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  struct ledger_owners o;
  c.writes = LEDGER_WRITE_CONFIGURED; /* inactive ids exit, the reducer reads the envelope */
  ledger_owners(&c, &o);
  assert_int_equal(o.unwritten_consumed, 24);
  check_reject(&c, &k, "reducer_reads_unwritten_slot");
  c.writes = LEDGER_WRITE_NONEMPTY; /* empty owners exit too: 52 identity slots unwritten */
  ledger_owners(&c, &o);
  assert_int_equal(o.unwritten_consumed, 52);
  check_reject(&c, &k, "reducer_reads_unwritten_slot");
  /* With no empty or inactive slot, writing only non-empty splits is enough. */
  struct ledger_call m = main_call();
  m.writes = LEDGER_WRITE_NONEMPTY;
  check_ok(&m, &k);
}

static void workspace_claims_must_ledger_every_field(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.abi = &MLU;
  k.ws_bytes = 66688;
  check_ok(&c, &k);
  k.ws_bytes = 65536; /* partial_u only */
  check_reject(&c, &k, "ledger_omits_state_fields");
  k.ws_bytes = 66688 - 128; /* validity tensor forgotten */
  check_reject(&c, &k, "ledger_omits_state_fields");
  k.ws_bytes = 66000;
  check_reject(&c, &k, "workspace_bytes_mismatch");
  k.abi = &LSE_O;
  k.ws_bytes = 32768; /* partial_O only */
  check_reject(&c, &k, "ledger_omits_state_fields");
}

static void kv_demand_is_per_query_head(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.kv_demand = 31469568;
  check_ok(&c, &k);
  k.kv_demand = 7867392;
  check_reject(&c, &k, "unique_kv_as_qhead_demand");
  k.kv_demand = 1;
  check_reject(&c, &k, "kv_demand_mismatch");
}

static void dram_bytes_need_a_counter(void **s) {
  (void)s;
  struct ledger_call c = main_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.abi = &MLU;
  k.dram_bytes = 31639872;
  check_reject(&c, &k, "logical_bytes_as_dram_bytes");
  k.dram_bytes = 7867392;
  check_reject(&c, &k, "logical_bytes_as_dram_bytes");
  k.dram_bytes = 9000000;
  check_reject(&c, &k, "dram_bytes_without_counter");
  k.dram_counter = "dram__bytes_read.sum";
  check_ok(&c, &k);
}

static void output_keeps_logical_width(void **s) {
  (void)s;
  struct ledger_call c = head_width_call();
  struct ledger_claims k;
  ledger_claims_init(&k);
  k.output_width = 96;
  check_reject(&c, &k, "padded_width_as_output_width");
  k.output_width = 64;
  check_reject(&c, &k, "output_width_mismatch");
  k.output_width = 80;
  check_ok(&c, &k);
}

/* Malformed calls fail with the fixture's JSON Pointer and the C API's message. */
static void malformed_call_names_its_pointer(void **s) {
  (void)s;
  static const char *const head =
      "{\"schema\": \"dkb.contract/v1\", \"contract\": \"launch_storage\", \"name\": \"n\", \"expect\": [], \"input\": "
      "{\"B\": 2, \"H_q\": 8, \"d_qk\": 128, \"d_v\": 128, \"T\": [4096, 3587], "
      "\"workspace_abis\": [{\"abi\": \"mlu\", \"u\": \"fp32\", \"m\": \"fp32\", \"l\": \"fp32\", \"valid\": "
      "\"none\"}], ";
  struct {
    const char *name, *rest, *err;
  } cases[] = {
      {"hkv.json",
       "\"H_kv\": 3, \"split\": {\"policy\": \"balanced\", \"S\": 8}, \"dtypes\": "
       "{\"q\": \"bf16\", \"k\": \"bf16\", \"v\": \"bf16\", \"o\": \"bf16\", \"lse\": \"fp32\"}}}",
       "/input/H_kv: must divide H_q (a query head maps to one K/V head)"},
      {"cap.json",
       "\"H_kv\": 2, \"split\": {\"policy\": \"balanced\", \"S\": 8, \"S_capacity\": 4}, \"dtypes\": "
       "{\"q\": \"bf16\", \"k\": \"bf16\", \"v\": \"bf16\", \"o\": \"bf16\", \"lse\": \"fp32\"}}}",
       "/input/split/S_capacity: must be >= the configured split count 8 (got 4)"},
      {"dtype.json",
       "\"H_kv\": 2, \"split\": {\"policy\": \"balanced\", \"S\": 8}, \"dtypes\": "
       "{\"q\": \"bf17\", \"k\": \"bf16\", \"v\": \"bf16\", \"o\": \"bf16\", \"lse\": \"fp32\"}}}",
       "/input/dtypes/q: unknown dtype 'bf17'"},
      {"abi.json",
       "\"H_kv\": 2, \"split\": {\"policy\": \"balanced\", \"S\": 8}, \"dtypes\": "
       "{\"q\": \"bf16\", \"k\": \"bf16\", \"v\": \"bf16\", \"o\": \"bf16\", \"lse\": \"fp32\"}, "
       "\"claims\": {\"workspace_bytes\": 1}}}",
       "/input/claims/workspace_bytes: needs 'abi' to say which workspace it counts"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[2048];
    snprintf(text, sizeof text, "%s%s\n", head, cases[i].rest);
    assert_oracle_malformed(cases[i].name, text, cases[i].err);
  }
}

DKB_TEST_GROUP(ledger, cmocka_unit_test(ragged_bounds_are_per_request), cmocka_unit_test(producer_and_reducer_grids),
               cmocka_unit_test(workspace_bytes_of_both_abis), cmocka_unit_test(q_and_kv_ledgers),
               cmocka_unit_test(capacity_envelope_writes_identity), cmocka_unit_test(head_width_tail_pads_lanes_only),
               cmocka_unit_test(fixed_chunk_last_chunk_is_shorter), cmocka_unit_test(call_check_names_the_field),
               cmocka_unit_test(declared_bounds_are_checked), cmocka_unit_test(launch_must_match_allocation),
               cmocka_unit_test(reducer_must_not_read_unwritten_slots),
               cmocka_unit_test(workspace_claims_must_ledger_every_field),
               cmocka_unit_test(kv_demand_is_per_query_head), cmocka_unit_test(dram_bytes_need_a_counter),
               cmocka_unit_test(output_keeps_logical_width), cmocka_unit_test(malformed_call_names_its_pointer))
