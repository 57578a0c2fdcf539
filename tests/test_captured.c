/* test_captured.c - what was captured on the H200 and kept in fixtures/captured/: the real bundles
 * (bundles/<fixture name>/) validate at level 6 on every CI run, and a copy of each with one field changed
 * no longer does; the kept bench runs (bench/<name>/, each with its entry in bench/index.json) agree with
 * their entries and recompute from their medians, and a copy with one figure changed does not; the kept
 * `dkb trace` runs (traces/<run>/, tools/trace-examples.sh) validate with the findings they state. The tests
 * iterate what tests/captured_check.py lists: a new bundle or run needs its folder (and entry), no C. */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench.h"
#include "harness/bench_diff.h"

#define BUNDLES "fixtures/captured/bundles"
#define TRACES "fixtures/captured/traces"
#define BENCH "fixtures/captured/bench"
#define CHECK "/usr/bin/python3 tests/captured_check.py"
#define EDIT "/usr/bin/python3 tests/jsontool.py edit"

/* The names `tests/captured_check.py SUB` prints, one a line (it fails the test when the check does). */
struct names {
  char *text;             /* the check's stdout, split in place */
  const char *name[64];
  int n;
};

static void captured_names(struct names *ns, const char *sub) {
  struct run_result r;
  run_sh(&r, CHECK " %s", sub);
  if (r.rc) fail_msg("captured_check.py %s: exit %d\n%s%s", sub, r.rc, r.out, r.err);
  memset(ns, 0, sizeof *ns);
  ns->text = r.out;
  r.out = NULL;
  run_result_release(&r);
  char *save = NULL;
  for (char *l = strtok_r(ns->text, "\n", &save); l && ns->n < 64; l = strtok_r(NULL, "\n", &save)) ns->name[ns->n++] = l;
  if (!ns->n) fail_msg("captured_check.py %s: nothing listed", sub);
}

static void names_release(struct names *ns) {
  free(ns->text);
  memset(ns, 0, sizeof *ns);
}

/* Every trace bundle of the kept H200 runs of tools/trace-examples.sh passes `dkb validate` (its record file
 * re-hashed beside it), and what the runs showed holds: cuDNN's lean-attention reduction is the combine of a
 * split, the flash backend's split and combine are seen by name, the math backend's kernels with internal
 * linkage are bound to their modules, and an edited claim fails. */
static void captured_trace_runs_validate_with_their_findings(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "n=0; for d in " TRACES "/*/; do build/dkb validate \"$d\"calls/*.json > /dev/null || exit 1; n=$((n+1)); done; echo $n");
  if (r.rc) fail_msg("a captured trace run fails validation:\n%s%s", r.out, r.err);
  assert_true(atoi(r.out) >= 7);
  run_result_release(&r);
  static const struct { const char *run, *ptr, *want; } CASES[] = {
      {"sdpa-cudnn", "/split_combine/combine_kernels", "[\"void cudnn::fusion::lean_reduction_kernel"},
      {"sdpa-cudnn", "/split_combine/split", "true"},
      {"sdpa-flash", "/split_combine/split", "true"},
      {"sdpa-math", "/findings/loaded/holds", "true\ntrue\n"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    run_sh(&r, "for f in " TRACES "/%s/calls/*.json; do /usr/bin/python3 tests/jsontool.py get --json \"$f\" %s; done",
           CASES[i].run, CASES[i].ptr);
    if (r.rc || !strstr(r.out, CASES[i].want)) fail_msg("%s %s: no %s in\n%s%s", CASES[i].run, CASES[i].ptr, CASES[i].want, r.out, r.err);
    run_result_release(&r);
  }
  /* the cuDNN call whose combine was seen, edited to say no split ran */
  run_sh(&r, "rm -rf %s/tr && cp -r " TRACES "/sdpa-cudnn %s/tr && f=$(grep -l lean_reduction_kernel %s/tr/calls/*.json | head -1) && "
             EDIT " \"$f\" \"$f\" expect /split_combine/split true set /split_combine/split false && build/dkb validate \"$f\"",
         tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 1 || !strstr(r.out, "bundle_split_combine_mismatch")) fail_msg("an edited trace bundle: exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

static void captured_bundles_validate_at_level_6(void **s) {
  (void)s;
  struct names b;
  captured_names(&b, "bundles");
  for (int i = 0; i < b.n; i++) {
    struct run_result r;
    run_sh(&r, "build/dkb validate " BUNDLES "/%s/bundle.json --require-level 6", b.name[i]);
    if (r.rc != 0) fail_msg("%s: exit %d\n%s%s", b.name[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, "computed level 6, claimed 6"));
    run_result_release(&r);
    run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json " BUNDLES "/%s/bundle.json", b.name[i]);
    if (r.rc != 0) fail_msg("%s: %s%s", b.name[i], r.out, r.err);
    run_result_release(&r);
  }
  names_release(&b);
  /* what is not a bundle folder (a capture's log beside the bundles, say) is refused */
  struct run_result r;
  run_sh(&r, "rm -rf %s/bundles && cp -r " BUNDLES " %s/bundles && touch %s/bundles/default.log && " CHECK " bundles %s/bundles",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 1 || !strstr(r.err, "/bundles/default.log: not a bundle folder")) fail_msg("a log: exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

/* A captured folder holds its bundle and the artifacts the bundle names, nothing else: a stale artifact of
 * an earlier capture (a copy over an old folder) would sit beside the evidence unchecked. A copy with one
 * more file fails. */
static void captured_bundle_folders_hold_only_what_their_bundles_name(void **s) {
  (void)s;
  struct run_result r;
  struct names b;
  captured_names(&b, "bundles");
  for (int i = 0; i < b.n; i++) {
    run_sh(&r, CHECK " extra-files " BUNDLES "/%s", b.name[i]);
    if (r.rc != 0) fail_msg("%s: files the bundle does not name: %s%s", b.name[i], r.out, r.err);
    run_result_release(&r);
  }
  names_release(&b);
  run_sh(&r, "rm -rf %s/stale && cp -r " BUNDLES "/default %s/stale && echo '{}' > %s/stale/trace.0123456789abcdef.jsonl && "
             CHECK " extra-files %s/stale", tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc != 1 || strcmp(r.out, "trace.0123456789abcdef.jsonl\n")) fail_msg("a stale file: exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

/* One field changed in a copy (tests/jsontool.py's edits): the ladder must find it. */
static void mutated_captured_bundles_fail(void **s) {
  (void)s;
  static const struct { const char *bundle, *edit, *reason; } cases[] = {
      {"default", "scale /measurement/timing/samples_us/0 2", "timing_summary_mismatch"},
      {"ragged-contig-nhd-bf16-g4", "set /dispatch/call_key/H_q 16", "call_key_sha256_mismatch"},
      {"flashmask-documents", "set /execution/kernels/0/launches 0", "kernel_launches_not_positive"},
      {"append-paged-sq3", "set /measurement/correctness/cache/violations 3", "correctness_passed_with_violations"},
      {"window-sink-paged", "set /dispatch/selected '\"dkb_naive_reference\"'", "auto_selection_not_first_eligible"},
      {"cluster-lse-o-fp32-sq2", "set /measurement/correctness/output/max_ratio 1.25", "correctness_ratio_beyond_tolerance"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct run_result r;
    run_sh(&r, "rm -rf %s/m && cp -r " BUNDLES "/%s %s/m && " EDIT " %s/m/bundle.json %s/m/bundle.json %s && "
               "build/dkb validate %s/m/bundle.json --require-level 6",
           tmp_dir(), cases[i].bundle, tmp_dir(), tmp_dir(), tmp_dir(), cases[i].edit, tmp_dir());
    if (r.rc != 1) fail_msg("%s (%s): exit %d, want 1\n%s%s", cases[i].bundle, cases[i].edit, r.rc, r.out, r.err);
    if (!strstr(r.out, cases[i].reason)) fail_msg("%s: no %s in\n%s", cases[i].bundle, cases[i].reason, r.out);
    run_result_release(&r);
  }
  /* an artifact changed beside the bundle */
  struct run_result r;
  run_sh(&r, "rm -rf %s/m && cp -r " BUNDLES "/window-sink-paged %s/m && f=$(ls %s/m/trace.*.jsonl) && "
             "printf 'x' >> $f && build/dkb validate %s/m/bundle.json --require-level 6",
         tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 1);
  assert_non_null(strstr(r.out, "artifact_"));
  run_result_release(&r);
}

/* dkb run's timing pass can fail after the call was checked (a CUDA error inside the timed launches:
 * on the H200, an I/O call failing inside libcuda, tests/failalloc.py). Such a bundle says launch_failed
 * and keeps the checked call's level 5; the same status over a bundle that also has its timing, or over
 * one whose check did not pass, contradicts the evidence. */
static void a_launch_failed_after_a_passed_check_stands_at_level_5(void **s) {
  (void)s;
  static const struct { const char *edit, *verdict; int rc; } cases[] = {
      {"del /measurement/timing set /claimed_level 5", "PASS  %s/m/bundle.json: computed level 5, claimed 5", 0},
      {"set /claimed_level 6", "status_contradicts_evidence  /status/terminal: terminal state launch_failed stops at level 5, the evidence proves level 6", 1},
      {"del /measurement/timing set /measurement/correctness/passed false set /claimed_level 5",
       "status_contradicts_evidence  /status/terminal: terminal state launch_failed stops at level 4", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct run_result r;
    run_sh(&r,
           "rm -rf %s/m && cp -r " BUNDLES "/default %s/m && " EDIT " %s/m/bundle.json %s/m/bundle.json set /status "
           "'{\"terminal\": \"launch_failed\", \"reasons\": [{\"id\": \"timing_failed\", "
           "\"detail\": \"cudaEventSynchronize: unspecified launch failure\"}]}' %s && build/dkb validate %s/m/bundle.json",
           tmp_dir(), tmp_dir(), tmp_dir(), tmp_dir(), cases[i].edit, tmp_dir());
    char want[512];
    snprintf(want, sizeof want, cases[i].verdict, tmp_dir());
    if (r.rc != cases[i].rc || !strstr(r.out, want)) fail_msg("%s: exit %d, want %d and '%s' in\n%s%s", cases[i].edit, r.rc, cases[i].rc, want, r.out, r.err);
    run_result_release(&r);
  }
}

/* captured_check.py SUB over every captured bundle folder passes, and the folder named prints want. */
static void every_bundle_passes(const char *sub, const char *name, const char *want) {
  struct names b;
  captured_names(&b, "bundles");
  int seen = 0;
  for (int i = 0; i < b.n; i++) {
    struct run_result r;
    run_sh(&r, CHECK " %s " BUNDLES "/%s", sub, b.name[i]);
    if (r.rc != 0) fail_msg("%s: %s%s", b.name[i], r.out, r.err);
    if (!strcmp(b.name[i], name)) {
      assert_string_equal(r.out, want);
      seen = 1;
    }
    run_result_release(&r);
  }
  assert_true(seen);
  names_release(&b);
}

/* The plan's merge claim against what CUPTI saw: a cluster plan's producer launched with cluster dims
 * [1, cluster_ctas, 1], every other captured producer without a cluster (CUPTI 13 on the H200 reports
 * [0, 0, 0] for those). */
static void captured_cluster_plans_were_launched_as_clusters(void **s) {
  (void)s;
  every_bundle_passes("clusters", "cluster-lse-o-fp32-sq2", "2 [[1, 2, 1]]\n");
}

/* The plan's K/V heads a CTA and CTAs an SM against what CUPTI saw: a two- or four-head plan launched that
 * producer over H_kv / heads CTAs in x, a plan of three CTAs an SM the producer built for three, every other
 * dkb_split_kv plan a one-head producer over H_kv. two-heads-paged-p1 is the captured two-head plan (4 K/V
 * heads, 132 requests unsplit), three-per-sm-paged-p16 the captured three-CTA one (8 K/V heads, 400
 * requests, an H100's capture). */
static void captured_head_plans_launched_the_producer_they_name(void **s) {
  (void)s;
  every_bundle_passes("heads", "two-heads-paged-p1", "2 - [[2, 132, 1]]\n");
  every_bundle_passes("heads", "three-per-sm-paged-p16", "1 three [[8, 400, 1]]\n");
}

/* Every kept bench run (README's performance figures; what each shows is its index entry's line): its
 * folder holds what dkb bench wrote and agrees with its entry (commit, date, roofline, matrix, --counters
 * and --cold, the cases L2 served: tests/captured_check.py), it is schema-valid, and every figure and
 * verdict recomputes from its medians and byte counts (tests/bench_check.py). The index is schema-valid,
 * names every folder once and no other, and one run is the baseline; a copy with one median, verdict,
 * excess (or a missing one), floor or read fraction changed does not recompute, nor one whose two cases of
 * the same bytes hold two reads, nor one that calls a missed target met. */
static void captured_bench_runs_agree_with_the_index_and_recompute(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bench-index.schema.json " BENCH "/index.json");
  if (r.rc != 0) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  struct names runs;
  captured_names(&runs, "runs");
  for (int i = 0; i < runs.n; i++) {
    run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json " BENCH "/%s/bench.json && "
               "/usr/bin/python3 tests/bench_check.py " BENCH "/%s/bench.json && " CHECK " run %s",
           runs.name[i], runs.name[i], runs.name[i]);
    if (r.rc != 0) fail_msg("%s: exit %d\n%s%s", runs.name[i], r.rc, r.out, r.err);
    run_result_release(&r);
  }
  names_release(&runs);
  static const struct { const char *run, *edit, *why; } edits[] = {
      {"early-slot-index-b", "scale /cases/0/median_us 0.9", "b16-t8192-g4-contig: tbps"},
      {"early-slot-index-b", "expect /targets/1/verdict '\"met\"' set /targets/1/verdict '\"missed\"'", "verdict missed, recomputed met"},
      {"early-slot-index-b", "scale /roofline/median_us 1.1", "roofline: tbps is not bytes / median"},
      {"early-slot-index-b", "add /cases/23/excess_us 0.05", "b1-t131072-g8-contig: excess_us"},
      {"early-slot-index-b", "set /cases/5/excess_us null", "b16-t8192-g4-paged16: no excess_us in a run that records it"},
      {"early-slot-index-b", "scale /launch_floor/median_us 1.1", "b16-t8192-g4-contig: excess_us"},
      {"early-slot-index-b", "scale /cases/23/read_fraction 1.01", "b1-t131072-g8-contig: read_fraction"},
      {"early-slot-index-b", "scale /cases/24/read_us 1.01 scale /cases/24/read_fraction 1.01",
       "b1-t131072-g8-contig/split128: read_us 18.26079983264208, another case of the same bytes and mode"},
      {"early-slot-index-b", "scale /cases/5/median_us 1.003", "b16-t8192-g4-paged16: tbps"},
      /* the two missed targets of kept runs at the matrix's edges, called met */
      {"first-tile-at-entry", "expect /targets/8/verdict '\"missed\"' set /targets/8/verdict '\"met\"'",
       "b1-t131072-g8-contig roofline_fraction >= 0.60: verdict met, recomputed missed"},
      {"early-slot-index-a", "expect /targets/1/verdict '\"missed\"' set /targets/1/verdict '\"met\"'",
       "b16-t8192-g4-paged16 roofline_fraction >= 0.92: verdict met, recomputed missed"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    run_sh(&r, EDIT " " BENCH "/%s/bench.json %s/bench.json %s && /usr/bin/python3 tests/bench_check.py %s/bench.json",
           edits[i].run, tmp_dir(), edits[i].edit, tmp_dir());
    if (r.rc != 1 || !strstr(r.out, edits[i].why))
      fail_msg("%s: %s: exit %d, want 1 and '%s'\n%s%s", edits[i].run, edits[i].edit, r.rc, edits[i].why, r.out, r.err);
    run_result_release(&r);
  }
}

/* A smoke compares its fresh run of today's matrix with its card's baseline case by case, by call key: a
 * case whose call has changed since the baseline ran (a fixture edited, a split added) reads "other call"
 * there and is judged by nothing. So each baseline must hold every case of the matrix as today's fixtures
 * make it, key for key (bench_case_key, from the fixtures alone, no GPU). */
static void captured_baselines_time_the_calls_of_todays_matrix(void **s) {
  (void)s;
  struct names ns;
  captured_names(&ns, "baselines");
  struct bench_matrix m;
  struct dkb_err e;
  dkb_err_clear(&e);
  if (bench_matrix_load("fixtures/bench/matrix.json", &m, &e)) fail_msg("%s", e.msg);
  char bad[4096] = "";
  size_t len = 0;
  for (int b = 0; b < ns.n; b++) {
    struct bench_run run;
    if (bench_run_load(ns.name[b], &run, &e)) fail_msg("%s", e.msg);
    for (int i = 0; i < m.n; i++) {
      char sha[65];
      if (bench_case_key(&m.cases[i], 0, sha, &e)) fail_msg("%s: %s", m.cases[i].name, e.msg);
      const int k = bench_run_find(&run, m.cases[i].name);
      const char *kept = k < 0 ? NULL : run.cases[k].call_key;
      if ((!kept || strcmp(kept, sha)) && len < sizeof bad - 1)
        len += (size_t)snprintf(bad + len, sizeof bad - len, "%s: %s: %s\n", ns.name[b], m.cases[i].name,
                                k < 0 ? "not a case" : "another call");
    }
    bench_run_release(&run);
  }
  bench_matrix_release(&m);
  names_release(&ns);
  if (len) fail_msg("baselines whose calls are not today's matrix's:\n%s", bad);
}

/* The index and the folders beside it, in a copy: a folder without its entry, an entry without its folder, a
 * file that is neither, two baselines of one card, a baseline the smoke could not compare with (another
 * matrix, other flags), no baseline; an entry whose commit, --cold flag or L2-served cases disagree with
 * its run. Each is refused with what disagrees. */
static void captured_bench_index_refuses_what_disagrees_with_its_runs(void **s) {
  (void)s;
  static const struct { const char *change, *check, *why; } bad[] = {
      {EDIT " %1$s/index.json %1$s/index.json del /runs/0", "runs", "/before-launch-bounds-128-2: a folder without an entry"},
      {"rm -r %1$s/counters-cold", "runs", "run 'counters-cold' has no folder"},
      {"touch %1$s/notes.txt", "runs", "/notes.txt: neither the index nor a run's folder"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/27/baseline true", "runs",
       "2 runs are the baseline of NVIDIA H100 80GB HBM3 (matrix-h100-6a8c22d, matrix-h100-baseline), want one"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/0/baseline true", "runs",
       "baseline 'before-launch-bounds-128-2' ran fixtures/bench/matrix.json with flags [], where the smoke runs"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/26/baseline true", "runs",
       "baseline 'serving-h100-tensor-core-peer' ran fixtures/bench/serving.json"},
      {EDIT " %1$s/index.json %1$s/index.json del /runs/28/baseline", "runs",
       "no run is a baseline, want one a card"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/5/commit '\"5e17b64\"'", "run early-slot-index-b",
       "commit 7af5fe1"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/2/flags '[\"counters\"]'", "run counters-cold", "cold is True"},
      {EDIT " %1$s/index.json %1$s/index.json set /runs/1/l2_served '[]'", "run counters-warm",
       "cases below 0.95 of their K/V from DRAM: ['b1-t32768-window4096'], the index says []"},
      {"touch %1$s/early-slot-index-a/bench.log", "run early-slot-index-a", "files ['bench.csv', 'bench.json', 'bench.log'"},
  };
  char dir[600], change[1400];
  snprintf(dir, sizeof dir, "%s/bench-index", tmp_dir());
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(change, sizeof change, bad[i].change, dir);
    struct run_result r;
    run_sh(&r, "rm -rf %s && cp -r " BENCH " %s && %s && " CHECK " %s %s/index.json", dir, dir, change, bad[i].check, dir);
    if (r.rc != 1 || (!strstr(r.out, bad[i].why) && !strstr(r.err, bad[i].why)))
      fail_msg("%s: exit %d, want 1 and '%s'\n%s%s", change, r.rc, bad[i].why, r.out, r.err);
    run_result_release(&r);
  }
}

/* tools/gpu-smoke.sh --bench compares a fresh run with the baseline of its own card, named as nvidia-smi
 * names it; a card without one gets exit 1 and the cards that have one, so the smoke says why it skipped. */
static void captured_bench_index_gives_each_card_its_baseline(void **s) {
  (void)s;
  static const struct { const char *card, *want; int rc; } cards[] = {
      {"NVIDIA H100 80GB HBM3", BENCH "/matrix-h100-baseline/bench.json\n", 0},
      {"NVIDIA H200", "0 baseline runs of NVIDIA H200, want one (baselines: NVIDIA H100 80GB HBM3: matrix-h100-baseline)", 1},
      {"NVIDIA A100-SXM4-80GB",
       "0 baseline runs of NVIDIA A100-SXM4-80GB, want one (baselines: NVIDIA H100 80GB HBM3: matrix-h100-baseline)", 1},
  };
  for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
    struct run_result r;
    run_sh(&r, CHECK " baseline '%s'", cards[i].card);
    const char *got = cards[i].rc ? r.err : r.out;
    if (r.rc != cards[i].rc || !strstr(got, cards[i].want))
      fail_msg("%s: exit %d, want %d and '%s'\n%s%s", cards[i].card, r.rc, cards[i].rc, cards[i].want, r.out, r.err);
    run_result_release(&r);
  }
}

/* --counters: each case's DRAM bytes of a call and their ratio to its visible K/V recompute
 * (tests/bench_check.py; which cases read less than 0.95 of it from DRAM is each run's l2_served, checked
 * above: the 4096-key window's 16.8 MB stay in L2 between calls, except under --cold). A copy with one
 * ratio changed does not recompute, nor one that calls a fraction target on the window's figure met in a
 * run that did not flush L2. */
static void captured_counters_run_recomputes_its_dram_ratios(void **s) {
  (void)s;
  struct run_result r;
  static const char *const run = BENCH "/early-slot-index-b/bench.json";
  run_sh(&r, EDIT " %s %s/bench.json scale /cases/5/dram_kv_ratio 0.9 && /usr/bin/python3 tests/bench_check.py %s/bench.json", run,
         tmp_dir(), tmp_dir());
  if (r.rc != 1 || !strstr(r.out, "b16-t8192-g4-paged16: dram_kv_ratio"))
    fail_msg("a changed ratio: exit %d, want 1\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
  /* a fraction target on the window's L2-served figure: not measured unless the run was --cold */
#define WINDOW_TARGET(verdict) \
  "set /targets '[{\"case\": \"b1-t32768-window4096\", \"target\": \"visible_roofline_fraction >= 0.20\", \"want\": 0.2, " \
  "\"got\": null, \"verdict\": \"" verdict "\"}]'"
#define WINDOW_GOT "copy /cases/41/visible_roofline_fraction /targets/0/got"
  static const struct { const char *edit; int rc; } t[] = {
      {WINDOW_TARGET("met") " " WINDOW_GOT, 1},
      {WINDOW_TARGET("not_measured"), 0},
      {"set /cold true " WINDOW_TARGET("met") " " WINDOW_GOT, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    run_sh(&r, EDIT " %s %s/bench.json expect /cases/41/name '\"b1-t32768-window4096\"' %s && "
               "/usr/bin/python3 tests/bench_check.py %s/bench.json",
           run, tmp_dir(), t[i].edit, tmp_dir());
    if (r.rc != t[i].rc) fail_msg("%s: exit %d, want %d\n%s%s", t[i].edit, r.rc, t[i].rc, r.out, r.err);
    run_result_release(&r);
  }
}

DKB_TEST_GROUP(captured, cmocka_unit_test(captured_bench_runs_agree_with_the_index_and_recompute),
               cmocka_unit_test(captured_bench_index_refuses_what_disagrees_with_its_runs),
               cmocka_unit_test(captured_bench_index_gives_each_card_its_baseline),
               cmocka_unit_test(captured_baselines_time_the_calls_of_todays_matrix),
               cmocka_unit_test(captured_counters_run_recomputes_its_dram_ratios), cmocka_unit_test(captured_bundles_validate_at_level_6),
               cmocka_unit_test(captured_bundle_folders_hold_only_what_their_bundles_name), cmocka_unit_test(mutated_captured_bundles_fail),
               cmocka_unit_test(captured_cluster_plans_were_launched_as_clusters),
               cmocka_unit_test(captured_head_plans_launched_the_producer_they_name),
               cmocka_unit_test(a_launch_failed_after_a_passed_check_stands_at_level_5),
               cmocka_unit_test(captured_trace_runs_validate_with_their_findings))
