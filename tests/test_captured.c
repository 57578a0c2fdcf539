/* test_captured.c - the real bundles captured on the H200 (fixtures/captured/) validate at level 6 on
 * every CI run, and a copy of each with one field changed no longer does. */
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

static const char *const CAPTURED[] = {"default", "ragged-contig-nhd-bf16-g4", "flashmask-documents", "append-paged-sq3",
                                       "window-sink-paged", "cluster-lse-o-fp32-sq2"};

static void captured_bundles_validate_at_level_6(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof CAPTURED / sizeof CAPTURED[0]; i++) {
    struct run_result r;
    run_sh(&r, "build/dkb validate fixtures/captured/%s/bundle.json --require-level 6", CAPTURED[i]);
    if (r.rc != 0) fail_msg("%s: exit %d\n%s%s", CAPTURED[i], r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, "computed level 6, claimed 6"));
    run_result_release(&r);
    run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bundle.schema.json fixtures/captured/%s/bundle.json", CAPTURED[i]);
    if (r.rc != 0) fail_msg("%s: %s%s", CAPTURED[i], r.out, r.err);
    run_result_release(&r);
  }
}

/* A captured folder holds its bundle and the artifacts the bundle names, nothing else: a stale artifact of
 * an earlier capture (a copy over an old folder) would sit beside the evidence unchecked. A copy with one
 * more file fails. */
static void captured_bundle_folders_hold_only_what_their_bundles_name(void **s) {
  (void)s;
  static const char *const CHECK =
      "/usr/bin/python3 -c '\n"
      "import json, os, sys\n"
      "d = sys.argv[1]\n"
      "names = set()\n"
      "def walk(x):\n"
      "    if isinstance(x, dict): [walk(v) for v in x.values()]\n"
      "    elif isinstance(x, list): [walk(v) for v in x]\n"
      "    elif isinstance(x, str): names.add(os.path.basename(x))\n"
      "walk(json.load(open(d + \"/bundle.json\")))\n"
      "extra = sorted(f for f in os.listdir(d) if f != \"bundle.json\" and f not in names)\n"
      "print(*extra)\n"
      "sys.exit(1 if extra else 0)\n"
      "' ";
  struct run_result r;
  for (size_t i = 0; i < sizeof CAPTURED / sizeof CAPTURED[0]; i++) {
    run_sh(&r, "%s fixtures/captured/%s", CHECK, CAPTURED[i]);
    if (r.rc != 0) fail_msg("%s: files the bundle does not name: %s%s", CAPTURED[i], r.out, r.err);
    run_result_release(&r);
  }
  run_sh(&r, "rm -rf %s/stale && cp -r fixtures/captured/default %s/stale && echo '{}' > %s/stale/trace.0123456789abcdef.jsonl && %s %s/stale",
         tmp_dir(), tmp_dir(), tmp_dir(), CHECK, tmp_dir());
  if (r.rc != 1 || strcmp(r.out, "trace.0123456789abcdef.jsonl\n")) fail_msg("a stale file: exit %d\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
}

/* One field changed in a copy: the ladder must find it. */
static void mutated_captured_bundles_fail(void **s) {
  (void)s;
  static const struct { const char *bundle, *edit, *reason; } cases[] = {
      {"default", "b['measurement']['timing']['samples_us'][0] *= 2", "timing_summary_mismatch"},
      {"ragged-contig-nhd-bf16-g4", "b['dispatch']['call_key']['H_q'] = 16", "call_key_sha256_mismatch"},
      {"flashmask-documents", "b['execution']['kernels'][0]['launches'] = 0", "kernel_launches_not_positive"},
      {"append-paged-sq3", "b['measurement']['correctness']['cache']['violations'] = 3", "correctness_passed_with_violations"},
      {"window-sink-paged", "b['dispatch']['selected'] = 'dkb_naive_reference'", "auto_selection_not_first_eligible"},
      {"cluster-lse-o-fp32-sq2", "b['measurement']['correctness']['output']['max_ratio'] = 1.25", "correctness_ratio_beyond_tolerance"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct run_result r;
    run_sh(&r,
           "rm -rf %s/m && cp -r fixtures/captured/%s %s/m && /usr/bin/python3 -c \"import json; p='%s/m/bundle.json'; "
           "b=json.load(open(p)); %s; json.dump(b, open(p, 'w'))\" && build/dkb validate %s/m/bundle.json --require-level 6",
           tmp_dir(), cases[i].bundle, tmp_dir(), tmp_dir(), cases[i].edit, tmp_dir());
    if (r.rc != 1) fail_msg("%s (%s): exit %d, want 1\n%s%s", cases[i].bundle, cases[i].edit, r.rc, r.out, r.err);
    if (!strstr(r.out, cases[i].reason)) fail_msg("%s: no %s in\n%s", cases[i].bundle, cases[i].reason, r.out);
    run_result_release(&r);
  }
  /* an artifact changed beside the bundle */
  struct run_result r;
  run_sh(&r, "rm -rf %s/m && cp -r fixtures/captured/window-sink-paged %s/m && f=$(ls %s/m/trace.*.jsonl) && "
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
      {"del b['measurement']['timing']; b['claimed_level'] = 5", "PASS  %s/m/bundle.json: computed level 5, claimed 5", 0},
      {"b['claimed_level'] = 6", "status_contradicts_evidence  /status/terminal: terminal state launch_failed stops at level 5, the evidence proves level 6", 1},
      {"del b['measurement']['timing']; b['measurement']['correctness']['passed'] = False; b['claimed_level'] = 5",
       "status_contradicts_evidence  /status/terminal: terminal state launch_failed stops at level 4", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct run_result r;
    run_sh(&r,
           "rm -rf %s/m && cp -r fixtures/captured/default %s/m && /usr/bin/python3 -c \"import json; p='%s/m/bundle.json'; "
           "b=json.load(open(p)); b['status'] = {'terminal': 'launch_failed', 'reasons': [{'id': 'timing_failed', "
           "'detail': 'cudaEventSynchronize: unspecified launch failure'}]}; %s; json.dump(b, open(p, 'w'))\" && "
           "build/dkb validate %s/m/bundle.json",
           tmp_dir(), tmp_dir(), tmp_dir(), cases[i].edit, tmp_dir());
    char want[512];
    snprintf(want, sizeof want, cases[i].verdict, tmp_dir());
    if (r.rc != cases[i].rc || !strstr(r.out, want)) fail_msg("%s: exit %d, want %d and '%s' in\n%s%s", cases[i].edit, r.rc, cases[i].rc, want, r.out, r.err);
    run_result_release(&r);
  }
}

/* The plan's merge claim against what CUPTI saw: a cluster plan's producer launched with cluster dims
 * [1, cluster_ctas, 1], every other captured producer without a cluster (CUPTI 13 on the H200 reports
 * [0, 0, 0] for those). */
static void captured_cluster_plans_were_launched_as_clusters(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof CAPTURED / sizeof CAPTURED[0]; i++) {
    struct run_result r;
    run_sh(&r,
           "/usr/bin/python3 -c '\n"
           "import glob, json, sys\n"
           "d = sys.argv[1]\n"
           "S = json.load(open(d + \"/bundle.json\"))[\"dispatch\"][\"plan\"][\"cluster_ctas\"]\n"
           "ks = [json.loads(l) for f in glob.glob(d + \"/trace.*.jsonl\") for l in open(f)]\n"
           "prod = [k[\"cluster\"] for k in ks if k[\"record\"] == \"kernel\" and (\"decode_split_kv_producer\" in k[\"name\"] or \"decode_split_kv_fused\" in k[\"name\"])]\n"
           "want = [[1, S, 1]] if S > 1 else [[0, 0, 0], [1, 1, 1]]\n"
           "print(S, prod)\n"
           "sys.exit(0 if prod and all(c in want for c in prod) else 1)\n"
           "' fixtures/captured/%s",
           CAPTURED[i]);
    if (r.rc != 0) fail_msg("%s: %s%s", CAPTURED[i], r.out, r.err);
    if (!strcmp(CAPTURED[i], "cluster-lse-o-fp32-sq2")) assert_string_equal(r.out, "2 [[1, 2, 1]]\n");
    run_result_release(&r);
  }
}

/* The bench matrix runs on the H200 (fixtures/captured/bench/, README's performance figures, with NVML
 * clocks per case; bench-1, -2 and -3, the kernels before __launch_bounds__(128, 2) on three machine
 * instances; bench-1 and -3 with each case's noise and the device, for `dkb compare`; bench-5, the kernels
 * before the epilogue change of 46e8581, and bench-4, those kernels on another instance; bench-6, the kernels
 * before the store-kind passes, 80 KiB per CTA and Q loaded first; bench-7, the kernels of bench/ on another
 * instance; bench-8 and bench-9, those kernels again with --counters, bench-9 also --cold; bench-10, the
 * same kernels from cdfcdff, with each case's same-bytes read; bench-11, the kernels that send the first tile
 * at CTA entry, from a6dfa02; bench-12 and bench-13, those with the slot index loaded at entry too, from
 * 5e17b64 and 7af5fe1 (the same kernels), on two instances of a lower roofline): each schema-valid, a run
 * of the committed matrix, and every figure and verdict recomputes from its medians and byte counts
 * (tests/bench_check.py); a copy with one median, verdict, excess (or a missing one), floor or read
 * fraction changed does not, nor one whose two cases of the same bytes hold two reads. */
static void captured_bench_recomputes_from_its_medians(void **s) {
  (void)s;
  struct run_result r;
  static const char *const runs[] = {"fixtures/captured/bench/bench.json", "fixtures/captured/bench-1/bench.json",
                                     "fixtures/captured/bench-2/bench.json", "fixtures/captured/bench-3/bench.json",
                                     "fixtures/captured/bench-4/bench.json", "fixtures/captured/bench-5/bench.json",
                                     "fixtures/captured/bench-6/bench.json", "fixtures/captured/bench-7/bench.json",
                                     "fixtures/captured/bench-8/bench.json", "fixtures/captured/bench-9/bench.json",
                                     "fixtures/captured/bench-10/bench.json", "fixtures/captured/bench-11/bench.json",
                                     "fixtures/captured/bench-12/bench.json", "fixtures/captured/bench-13/bench.json"};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s && /usr/bin/python3 tests/bench_check.py %s && "
               "/usr/bin/python3 -c \"import json, sys; b = json.load(open('%s')); m = json.load(open('fixtures/bench/matrix.json')); "
               "sys.exit(0 if b['matrix'] == m['name'] and b['roofline']['measured'] and b['targets'] else 1)\"",
           runs[i], runs[i], runs[i]);
    if (r.rc != 0) fail_msg("%s: exit %d\n%s%s", runs[i], r.rc, r.out, r.err);
    run_result_release(&r);
  }
  static const struct { const char *run, *edit; } edits[] = {
      {"bench", "b['cases'][0]['median_us'] *= 0.9"},
      {"bench", "t = b['targets'][1]; t['verdict'] = 'missed' if t['verdict'] == 'met' else 'met'"},
      {"bench", "b['roofline']['median_us'] *= 1.1"},
      {"bench", "b['cases'][23]['excess_us'] += 0.05"},
      {"bench", "b['cases'][5]['excess_us'] = None"},
      {"bench", "b['launch_floor']['median_us'] *= 1.1"},
      {"bench-10", "b['cases'][23]['read_fraction'] *= 1.01"},
      {"bench-10", "b['cases'][24]['read_us'] *= 1.01; b['cases'][24]['read_fraction'] *= 1.01"},
      {"bench-11", "t = b['targets'][8]; t['verdict'] = 'met'"},
      {"bench-12", "t = b['targets'][1]; t['verdict'] = 'met'"},
      {"bench-13", "b['cases'][5]['median_us'] *= 1.003"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    run_sh(&r, "/usr/bin/python3 -c \"import json; b = json.load(open('fixtures/captured/%s/bench.json')); %s; "
               "json.dump(b, open('%s/bench.json', 'w'))\" && /usr/bin/python3 tests/bench_check.py %s/bench.json",
           edits[i].run, edits[i].edit, tmp_dir(), tmp_dir());
    if (r.rc != 1) fail_msg("%s: exit %d, want 1\n%s%s", edits[i].edit, r.rc, r.out, r.err);
    run_result_release(&r);
  }
}

/* A run of the quick matrix with --counters on the H200 (fixtures/captured/bench-counters/, commit c7faea7):
 * schema-valid, every case with the DRAM bytes of a call and their ratio to its visible K/V, which
 * recomputes (tests/bench_check.py); only the 4096-key window read less than 0.95 of it from DRAM (its
 * 16.8 MB stay in L2 between calls); a copy with one ratio changed does not recompute, nor one that
 * calls a fraction target on the window's figure met in a run that did not flush L2. */
static void captured_counters_run_recomputes_its_dram_ratios(void **s) {
  (void)s;
  struct run_result r;
  static const char *const run = "fixtures/captured/bench-counters/bench.json";
  /* and the full matrix so (bench-8, bench-10 to bench-13), and with --cold (bench-9): there the counted
   * calls, like the timed ones, start from a flushed L2, and every case read all its visible K/V from
   * DRAM, the window's too */
  static const struct { const char *run, *matrix, *low; } runs[] = {
      {run, "quick", "b1-t32768-window4096\n"},
      {"fixtures/captured/bench-8/bench.json", "matrix", "False b1-t32768-window4096\n"},
      {"fixtures/captured/bench-9/bench.json", "matrix", "True\n"},
      {"fixtures/captured/bench-10/bench.json", "matrix", "False b1-t32768-window4096\n"},
      {"fixtures/captured/bench-11/bench.json", "matrix", "False b1-t32768-window4096\n"},
      {"fixtures/captured/bench-12/bench.json", "matrix", "False b1-t32768-window4096\n"},
      {"fixtures/captured/bench-13/bench.json", "matrix", "False b1-t32768-window4096\n"},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/bench.schema.json %s > /dev/null && /usr/bin/python3 tests/bench_check.py %s "
               "> /dev/null && /usr/bin/python3 -c \"import json, sys; b = json.load(open('%s')); "
               "m = json.load(open('fixtures/bench/%s.json')); assert b['matrix'] == m['name']; "
               "assert all(c['dram_kv_ratio'] is not None for c in b['cases']); "
               "print(*([b['cold']] if 'cold' in b else []), *[c['name'] for c in b['cases'] if c['dram_kv_ratio'] < 0.95])\"",
           runs[i].run, runs[i].run, runs[i].run, runs[i].matrix);
    if (r.rc != 0) fail_msg("%s: exit %d\n%s%s", runs[i].run, r.rc, r.out, r.err);
    assert_string_equal(r.out, runs[i].low);
    run_result_release(&r);
  }
  run_sh(&r, "/usr/bin/python3 -c \"import json; b = json.load(open('%s')); b['cases'][5]['dram_kv_ratio'] *= 0.9; "
             "json.dump(b, open('%s/bench.json', 'w'))\" && /usr/bin/python3 tests/bench_check.py %s/bench.json",
         run, tmp_dir(), tmp_dir());
  if (r.rc != 1) fail_msg("a changed ratio: exit %d, want 1\n%s%s", r.rc, r.out, r.err);
  run_result_release(&r);
  /* a fraction target on the window's L2-served figure: not measured unless the run was --cold */
  static const struct { const char *edit; int rc; } t[] = {
      {"b['targets'] = [dict(case=c['name'], target='visible_roofline_fraction >= 0.20', want=0.2, got=c['visible_roofline_fraction'], verdict='met')]", 1},
      {"b['targets'] = [dict(case=c['name'], target='visible_roofline_fraction >= 0.20', want=0.2, got=None, verdict='not_measured')]", 0},
      {"b['cold'] = True; b['targets'] = [dict(case=c['name'], target='visible_roofline_fraction >= 0.20', want=0.2, got=c['visible_roofline_fraction'], verdict='met')]", 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    run_sh(&r, "/usr/bin/python3 -c \"import json; b = json.load(open('%s')); c = b['cases'][9]; assert c['name'] == 'b1-t32768-window4096'; %s; "
               "json.dump(b, open('%s/bench.json', 'w'))\" && /usr/bin/python3 tests/bench_check.py %s/bench.json",
           run, t[i].edit, tmp_dir(), tmp_dir());
    if (r.rc != t[i].rc) fail_msg("%s: exit %d, want %d\n%s%s", t[i].edit, r.rc, t[i].rc, r.out, r.err);
    run_result_release(&r);
  }
}

DKB_TEST_GROUP(captured, cmocka_unit_test(captured_bench_recomputes_from_its_medians), cmocka_unit_test(captured_counters_run_recomputes_its_dram_ratios), cmocka_unit_test(captured_bundles_validate_at_level_6),
               cmocka_unit_test(captured_bundle_folders_hold_only_what_their_bundles_name), cmocka_unit_test(mutated_captured_bundles_fail),
               cmocka_unit_test(captured_cluster_plans_were_launched_as_clusters),
               cmocka_unit_test(a_launch_failed_after_a_passed_check_stands_at_level_5))
