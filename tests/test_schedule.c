/* test_schedule.c - the paper schedules of article 0x09, 0x0AB and 0x0AD through the C API: the
 * FA2 split heuristic, the pinned FlashInfer decode planner, the three work schedules on the 0x09G
 * workload and the FlashDecoding++ guarded shared shift. Expected numbers come from the article or
 * from an independent Python re-expression of the published rules. */
#include "tests/util.h"

#include <string.h>

#include "oracles/schedule.h"

static void fa2_heuristic_follows_published_rules(void **s) {
  (void)s;
  struct sched_fa2_trace t;
  /* the source's own example: 48 blocks on 108 SMs -> 2 splits (0.89) beats 3 (0.67) */
  assert_int_equal(sched_fa2_num_splits(48, 108, 64, 128, &t), 2);
  assert_near(t.efficiency[1], 0.8888888955116272, 1e-7);
  assert_near(t.efficiency[2], 0.6666666865348816, 1e-7);
  assert_near(t.best, 0.9808429479598999, 1e-7);
  assert_int_equal(t.cap, 64);
  assert_false(t.eligible[8]); /* ceil(64/9) == ceil(64/8) */
  /* the early return: 88 >= 0.8 * 108 */
  assert_int_equal(sched_fa2_num_splits(88, 108, 64, 128, &t), 1);
  assert_true(t.early_exit);
  assert_int_equal(sched_fa2_num_splits(86, 108, 64, 128, &t), 5); /* 86 < 86.4: evaluated */
  assert_false(t.early_exit);
  /* capped by the K/V blocks */
  assert_int_equal(sched_fa2_num_splits(4, 132, 3, 128, &t), 3);
  assert_int_equal(t.cap, 3);
  /* skipping the repeated blocks-per-split candidate changes the answer: 6 would win, 7 does */
  assert_int_equal(sched_fa2_num_splits(1, 132, 7, 128, &t), 7);
  assert_false(t.eligible[5]);
  assert_int_equal(sched_fa2_num_splits(32, 264, 32, 128, NULL), 7);
  assert_int_equal(sched_fa2_num_splits(0, 132, 7, 128, NULL), -1);
  assert_int_equal(sched_fa2_num_splits(1, 0, 7, 128, NULL), -1);
}

static void flashinfer_plan_binary_searches_chunks(void **s) {
  (void)s;
  struct sched_fi_plan p;
  const long long pages[4] = {512, 512, 225, 1};
  assert_int_equal(sched_fi_decode_plan(pages, 4, 8, 132, 2, 16, 0, 0, &p), 0);
  assert_true(p.split_kv);
  assert_int_equal(p.max_grid, 264);
  assert_int_equal(p.chunk_pages, 40);
  assert_int_equal(p.chunk_tokens, 640);
  assert_int_equal(p.new_batch_size, 33);
  assert_int_equal(p.new_batch_size * p.gdy, 264);
  const long long o_indptr[5] = {0, 13, 26, 32, 33};
  assert_memory_equal(p.o_indptr, o_indptr, sizeof o_indptr);
  assert_int_equal(p.request_indices[13], 1);
  assert_int_equal(p.kv_tile_indices[12], 12);
  assert_int_equal(p.request_indices[32], 3);
  sched_fi_plan_release(&p);
  /* 40 requests x 8 heads already fill 132 CTAs: unsplit */
  long long many[40];
  for (int i = 0; i < 40; i++) many[i] = 512;
  sched_fi_decode_plan(many, 40, 8, 132, 1, 16, 0, 0, &p);
  assert_false(p.split_kv);
  assert_int_equal(p.chunk_pages, 512);
  assert_int_equal(p.new_batch_size, 40);
  sched_fi_plan_release(&p);
  /* short requests: direct output without a graph, padded partitioned path with one */
  const long long shorts[2] = {4, 4};
  sched_fi_decode_plan(shorts, 2, 8, 132, 2, 16, 0, 0, &p);
  assert_false(p.split_kv);
  assert_int_equal(p.padded_batch_size, 2);
  sched_fi_plan_release(&p);
  sched_fi_decode_plan(shorts, 2, 8, 132, 2, 16, 1, 0, &p);
  assert_true(p.split_kv);
  assert_int_equal(p.padded_batch_size, 33);
  sched_fi_plan_release(&p);
}

static void ragged_workload_reproduces_0x09G(void **s) {
  (void)s;
  const long long work[2] = {4096, 1024};
  struct sched_schedule f, g, pl;
  assert_int_equal(sched_fixed_splits(work, 2, 4, 8, &f), 0);
  const long long fixed[8] = {1024, 1024, 1024, 1024, 256, 256, 256, 256};
  assert_memory_equal(f.load, fixed, sizeof fixed);
  assert_near(f.mean, 640, 0);
  assert_near(f.max_over_mean, 1.6, 0);
  assert_near(f.efficiency, 0.625, 0);

  assert_int_equal(sched_global_equal(work, 2, 8, &g), 0);
  for (int w = 0; w < 8; w++) assert_int_equal(g.load[w], 640);
  assert_near(g.max_over_mean, 1.0, 0);
  assert_int_equal(sched_worker_outputs(&g, 6), 2); /* CTA 6: 256 of the long output, 384 of the short */
  int seen = 0;
  for (size_t i = 0; i < g.nfrag; i++) {
    if (g.frag[i].worker != 6) continue;
    long long units = g.frag[i].end - g.frag[i].start;
    assert_int_equal(units, g.frag[i].output == 0 ? 256 : 384);
    seen++;
  }
  assert_int_equal(seen, 2);

  assert_int_equal(sched_planned_chunks(work, NULL, 2, 8, 1, 0.0, 1.0, &pl), 0);
  assert_int_equal(pl.chunk_limit, 640);
  const long long sorted[9] = {640, 640, 640, 640, 640, 640, 640, 384, 256};
  for (size_t i = 0; i < pl.nfrag; i++) assert_int_equal(pl.frag[i].end - pl.frag[i].start, sorted[i]);
  assert_int_equal(pl.nfrag, 9);
  assert_int_equal(pl.frag[7].worker, pl.frag[8].worker); /* 384 and 256 share a CTA */
  for (int w = 0; w < 8; w++) assert_int_equal(pl.load[w], 640);
  for (size_t i = 0; i < pl.nfrag; i++) /* no chunk crosses an output identity */
    assert_true(pl.frag[i].end <= work[pl.frag[i].output]);
  sched_schedule_release(&f);
  sched_schedule_release(&g);
  sched_schedule_release(&pl);
}

static void shared_shift_guard_falls_back_exactly(void **s) {
  (void)s;
  const double sc[6] = {4.5, 6.0, 7.5, 5.2, 8.1, 3.9}, va[12] = {1, 0, 0, 2, 3, -1, -2, 4, 0.5, 0.5, 5, 5};
  const long long parts[3][2] = {{0, 2}, {2, 4}, {4, 6}};
  double o[2];
  struct sched_shift_result res;
  assert_int_equal(sched_shared_shift(sc, va, 6, 2, parts, 3, 6.0, -3, 3, o, &res), 0);
  assert_false(res.fallback);
  /* python float64 softmax of the same row */
  assert_near(o[0], 1.2092487144793453, 1e-14);
  assert_near(o[1], 0.277716298474482, 1e-14);
  assert_near(res.lse, 8.670194257350111, 1e-14);
  double sc2[6];
  memcpy(sc2, sc, sizeof sc);
  sc2[4] = 18.0;
  assert_int_equal(sched_shared_shift(sc2, va, 6, 2, parts, 3, 6.0, -3, 3, o, &res), 0);
  assert_true(res.fallback);
  assert_int_equal(res.guard_part, 2);
  assert_int_equal(res.guard_index, 4);
  assert_near(res.guard_delta, 12.0, 0);
  assert_near(o[0], 0.5000629359305462, 1e-14);
  assert_near(o[1], 0.49998027542198503, 1e-14);
  assert_near(res.lse, 18.000038564048058, 1e-14);
  const long long overlap[2][2] = {{0, 4}, {3, 6}};
  assert_int_equal(sched_shared_shift(sc, va, 6, 2, overlap, 2, 6.0, -3, 3, o, &res), -1);
}

DKB_TEST_GROUP(schedule, cmocka_unit_test(fa2_heuristic_follows_published_rules),
               cmocka_unit_test(flashinfer_plan_binary_searches_chunks),
               cmocka_unit_test(ragged_workload_reproduces_0x09G),
               cmocka_unit_test(shared_shift_guard_falls_back_exactly))
