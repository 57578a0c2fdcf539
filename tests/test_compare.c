/* test_compare.c - `dkb compare` on the bench runs kept from the H200 (fixtures/captured/bench/) and on
 * copies of them with medians, noise, levels or devices changed: which changes it calls same, faster or
 * slower, and the exit code CI gates on. */
#include "tests/util.h"

#include <stdio.h>
#include <string.h>

#include "harness/bench.h"
#include "lib/err.h"

/* each case's noise and the device, no clocks */
static const char *const RUN = "fixtures/captured/bench/before-launch-bounds-128-2/bench.json";
/* clocks for every case, none slowed */
#define CLOCKED "fixtures/captured/bench/early-slot-index-b"
#define KEY64 "376515b4654d69566f8dc9b4188627d823a21c548af496e05b376d9aa6b2624e"

/* A copy of RUN as tmp/NAME with edits (tests/jsontool.py's ops) applied; returns its path. */
static const char *edited(const char *name, const char *edit) {
  static char path[4][600];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", tmp_dir(), name);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/jsontool.py edit %s %s %s", RUN, p, edit);
  if (r.rc) fail_msg("%s: %s%s", edit, r.out, r.err);
  run_result_release(&r);
  return p;
}

/* Runs `build/dkb compare ARGS` into r and fails (with its output) unless it exits want. */
static void compare(struct run_result *r, int want, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void compare(struct run_result *r, int want, const char *fmt, ...) {
  char args[2000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  run_sh(r, "build/dkb compare %s", args);
  if (r->rc != want) fail_msg("compare %s: exit %d, want %d\n%s%s", args, r->rc, want, r->out, r->err);
}

/* The verdict line of one case: "name ... verdict ..." */
static void assert_verdict(const char *out, const char *name, const char *verdict) {
  char key[200];
  snprintf(key, sizeof key, "\n%s ", name);
  const char *l = strstr(out, key);
  if (!l) fail_msg("no row for %s in\n%s", name, out);
  const char *end = strchr(l + 1, '\n');
  char line[400];
  snprintf(line, sizeof line, "%.*s", (int)(end - l - 1), l + 1);
  char want[40];
  snprintf(want, sizeof want, " %s ", verdict);
  if (!strstr(line, want)) fail_msg("%s: want %s in '%s'", name, verdict, line);
}

#define NOISE_1PCT "set /cases/*/rel_stdev 0.005 set /cases/*/samples 1000"
/* Case I timed F times slower, as a run would record it: its median times F, its bandwidths and fractions
 * over F (dkb compare refuses a file whose fractions disagree with its medians). */
#define RETIMED(i, f) \
  " scale /cases/" i "/median_us " f " div /cases/" i "/tbps " f " div /cases/" i "/roofline_fraction " f \
  " div /cases/" i "/visible_tbps " f " div /cases/" i "/visible_roofline_fraction " f

static void compare_calls_a_run_the_same_as_itself(void **s) {
  (void)s;
  struct run_result r;
  compare(&r, 0, "%s %s --noise 0.1", RUN, RUN);
  assert_non_null(strstr(r.out, "compare: 44 cases: 44 same, 0 faster, 0 slower, 0 unknown"));
  assert_non_null(strstr(r.out, "roofline: new / base - 1 = +0.0 %"));
  run_result_release(&r);
  /* a run that recorded each case's noise and its device: no band needs to be given; a bench output folder
   * stands for its bench.json */
  compare(&r, 0, CLOCKED " " CLOCKED "/bench.json");
  assert_non_null(strstr(r.out, "compare: 44 cases: 44 same, 0 faster, 0 slower, 0 unknown"));
  assert_non_null(strstr(r.out, ", NVIDIA H200 (GPU-d37cfc5e-b00f-d515-3c86-273ef85e6a34)\n"));
  assert_non_null(strstr(r.out, "device: the same GPU\n"));
  assert_non_null(strstr(r.out, "base  " CLOCKED "/bench.json: commit 7af5fe1b223d, "));
  run_result_release(&r);
  /* a run from before rel_stdev (and call keys and the device) were recorded, as a kept run without them
   * (another instance, 4.633 TB/s): without --noise no case can be judged, and a gate that judged nothing
   * has not passed (exit 4) */
  struct run_result e;
  run_sh(&e, "/usr/bin/python3 tests/jsontool.py edit fixtures/captured/bench/first-tile-at-entry/bench.json %s/no-noise.json "
             "del /cases/*/rel_stdev del /cases/*/samples del /cases/*/call_key_sha256 del /device", tmp_dir());
  assert_int_equal(e.rc, 0);
  run_result_release(&e);
  compare(&r, 4, "%s/no-noise.json %s", tmp_dir(), RUN);
  assert_string_equal(r.err, "dkb: error: no case could be judged: each is unknown (--noise PCT), unmeasured, other_call or in one run only\n");
  assert_non_null(strstr(r.out, "44 unknown (no recorded noise: --noise PCT)"));
  assert_non_null(strstr(r.out, "roofline: new / base - 1 = -2.1 %"));
  assert_non_null(strstr(r.out, "device: not recorded by both runs"));
  assert_verdict(r.out, "b16-t8192-g4-paged16", "unknown");
  run_result_release(&r);
}

/* Noise 0.5 % in each run: a band of 1 %. +5 % is slower (exit 1), -5 % faster, +0.9 % the same. */
static void compare_flags_a_case_slower_beyond_its_noise(void **s) {
  (void)s;
  const char *base = edited("cmp-base.json", NOISE_1PCT);
  const char *cand = edited("cmp-new.json", NOISE_1PCT RETIMED("0", "1.05") RETIMED("5", "0.95") RETIMED("23", "1.009"));
  struct run_result r;
  compare(&r, 1, "%s %s", base, cand);
  assert_verdict(r.out, "b16-t8192-g4-contig", "slower");
  assert_verdict(r.out, "b16-t8192-g4-paged16", "faster");
  assert_verdict(r.out, "b1-t131072-g8-contig", "same");
  assert_non_null(strstr(r.out, "b16-t8192-g4-contig                      127.26     133.63    +5.0%    1.0% slower"));
  assert_non_null(strstr(r.out, "compare: 44 cases: 42 same, 1 faster, 1 slower, 0 unknown"));
  assert_string_equal(r.err, "dkb: error: 1 case slower beyond the noise\n");
  run_result_release(&r);
  /* the same pair with a band wide enough: nothing fails */
  compare(&r, 0, "%s %s --noise 6", base, cand);
  assert_non_null(strstr(r.out, "44 same"));
  run_result_release(&r);
}

/* A case that ran slowed in either run says so under its row and in --json (base_slowed, new_slowed; null
 * for a run that recorded no clocks, as RUN did not); the verdict stays the time's. A clocks member
 * that is not an object is malformed input at its pointer. */
static void compare_says_when_a_case_ran_slowed(void **s) {
  (void)s;
  const char *base = edited("cmp-clk-base.json", NOISE_1PCT);
  const char *cand = edited("cmp-clk-new.json", NOISE_1PCT RETIMED("0", "1.05") " set /cases/0/clocks "
                                                "'{\"sm_mhz_before\": 1980, \"sm_mhz_after\": 1755, \"event_reasons\": [\"sw_power_cap\"], "
                                                "\"slowed\": true}' set /cases/1/clocks '{\"sm_mhz_before\": 1980, "
                                                "\"sm_mhz_after\": 1980, \"event_reasons\": [], \"slowed\": false}'");
  struct run_result r;
  compare(&r, 1, "%s %s", base, cand);
  assert_verdict(r.out, "b16-t8192-g4-contig", "slower");
  const char *row = strstr(r.out, "\nb16-t8192-g4-contig ");
  assert_non_null(row);
  const char *next = strchr(row + 1, '\n');
  assert_non_null(next);
  assert_true(!strncmp(next + 1, "  clocks: NVML saw a slowdown around the timing in the new run: the change may be the machine's, "
                                 "not the kernel's\n", 99));
  int lines = 0;
  for (const char *p = r.out; (p = strstr(p, "  clocks: ")); p++) lines++;
  assert_int_equal(lines, 1);  /* case 1 recorded clocks, not slowed; the rest recorded none */
  run_result_release(&r);
  run_sh(&r, "build/dkb compare %s %s --json > %s/clk.json; /usr/bin/python3 tests/schema_check.py schemas/compare-report.schema.json "
             "%s/clk.json && /usr/bin/python3 tests/bench_facts.py slowed %s/clk.json 3",
         base, cand, tmp_dir(), tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out, "[(None, True), (None, False), (None, None)]\n");
  run_result_release(&r);
  /* Real runs: CLOCKED recorded NVML clocks for every case (1980 MHz, no reason), RUN none: no clocks line,
   * and every case is (None, False) */
  run_sh(&r, "build/dkb compare %s " CLOCKED " --json > %s/clk-real.json; [ $? -le 1 ] && "
             "/usr/bin/python3 tests/bench_facts.py slowed %s/clk-real.json all",
         RUN, tmp_dir(), tmp_dir());
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out, "44 [(None, False)]\n");
  run_result_release(&r);
  compare(&r, 1, "%s " CLOCKED, RUN);
  assert_null(strstr(r.out, "  clocks: "));
  assert_non_null(strstr(r.out, "device: two different GPUs"));
  run_result_release(&r);
  static const struct { const char *edit, *want; } bad[] = {
      {"set /cases/2/clocks 5", "/cases/2/clocks: must be an object or null (got integer)"},
      {"set /cases/2/clocks '{\"event_reasons\": []}'", "/cases/2/clocks: missing required key 'slowed'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    compare(&r, 3, "%s %s", base, edited("cmp-clk-bad.json", bad[i].edit));
    if (!strstr(r.err, bad[i].want)) fail_msg("%s: stderr\n%s\nwant\n%s", bad[i].edit, r.err, bad[i].want);
    run_result_release(&r);
  }
}

/* The band never falls below --min-noise (0.5 % by default), however quiet the samples. */
static void compare_band_has_a_floor(void **s) {
  (void)s;
#define NOISE_QUIET "set /cases/*/rel_stdev 0.0005 set /cases/*/samples 9"
  const char *base = edited("cmp-quiet-base.json", NOISE_QUIET);
  const char *cand = edited("cmp-quiet-new.json", NOISE_QUIET RETIMED("0", "1.004") RETIMED("1", "1.006"));
  struct run_result r;
  compare(&r, 1, "%s %s", base, cand);
  assert_verdict(r.out, "b16-t8192-g4-contig", "same");
  assert_verdict(r.out, "b16-t8192-g4-contig/split1", "slower");
  run_result_release(&r);
  compare(&r, 0, "%s %s --min-noise 1", base, cand);
  assert_verdict(r.out, "b16-t8192-g4-contig/split1", "same");
  run_result_release(&r);
}

/* Only level-6 medians of the same call are compared; cases of one run only, or whose call keys differ
 * under one name, are listed, never judged. */
#define KEY_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define KEY_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define KEYS "set /cases/*/call_key_sha256 '\"" KEY_A "\"'"
static void compare_judges_level_6_cases_of_the_same_call(void **s) {
  (void)s;
  const char *base = edited("cmp-l-base.json", NOISE_1PCT " " KEYS);
  const char *cand = edited("cmp-l-new.json", NOISE_1PCT " " KEYS " set /cases/0/level 5" RETIMED("0", "2")
                                              " set /cases/1/name '\"renamed\"' "
                                              "set /cases/2/call_key_sha256 '\"" KEY_B "\"'" RETIMED("2", "1.1"));
  struct run_result r;
  compare(&r, 0, "%s %s", base, cand);
  assert_verdict(r.out, "b16-t8192-g4-contig", "unmeasured");
  assert_verdict(r.out, "b16-t8192-g4-contig/split1", "only_base");
  assert_verdict(r.out, "renamed", "only_new");
  assert_verdict(r.out, "b16-t8192-g4-contig/split2", "other_call");
  assert_non_null(strstr(r.out, "compare: 45 cases: 41 same, 0 faster, 0 slower, 0 unknown (no recorded noise: --noise PCT), "
                                "1 unmeasured (below level 6), 1 other call (same name, different call key), 2 in one run only"));
  run_result_release(&r);
}

/* A case that was not timed (median_us null, or 0 as runs before null was recorded wrote it) has no
 * median: the table prints "-", as for every figure a side lacks, and --json writes null, never 0.00. */
static void compare_prints_no_median_for_a_case_not_timed(void **s) {
  (void)s;
  const char *cand = edited("cmp-untimed.json", "set /cases/0/median_us null set /cases/0/level 2 "
                                                "set /cases/1/median_us 0 set /cases/1/level 2");
  struct run_result r;
  compare(&r, 0, "%s %s --noise 1", RUN, cand);
  assert_non_null(strstr(r.out, "\nb16-t8192-g4-contig                      127.26          -       -      - unmeasured     0.930         -\n"));
  assert_non_null(strstr(r.out, "\nb16-t8192-g4-contig/split1               140.54          -       -      - unmeasured     0.842         -\n"));
  run_result_release(&r);
  compare(&r, 0, "%s %s --noise 1 --json > %s/cmp-untimed.out && /usr/bin/python3 tests/jsontool.py get %s/cmp-untimed.out "
                 "/cases/0/base_us /cases/1/base_us /cases/1/new_us",
          cand, RUN, tmp_dir(), tmp_dir());
  assert_string_equal(r.out, "None None 140.54399728775024\n");  /* jsontool prints null as Python does */
  run_result_release(&r);
}

/* Recorded devices are told apart by uuid. */
static void compare_names_the_devices(void **s) {
  (void)s;
  const char *a = edited("cmp-dev-a.json", "set /device '{\"status\": \"available\", \"device\": {\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-a\"}}'");
  const char *b = edited("cmp-dev-b.json", "set /device '{\"status\": \"available\", \"device\": {\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-b\"}}'");
  struct run_result r;
  compare(&r, 0, "%s %s --noise 1 && build/dkb compare %s %s --noise 1", a, a, a, b);
  assert_non_null(strstr(r.out, "roofline 4.537 TB/s, NVIDIA H200 (GPU-a)\n"));
  assert_non_null(strstr(r.out, "device: the same GPU\n"));
  assert_non_null(strstr(r.out, "device: two different GPUs"));
  run_result_release(&r);
}

/* Not a bench result, or one with a broken case: exit 3 with the file, the JSON Pointer and the reason.
 * Wrong arguments: exit 2. */
static void compare_rejects_bad_input_with_its_pointer(void **s) {
  (void)s;
  static const struct { const char *edit, *err; } bad[] = {
      {"set /schema '\"dkb.bundle/v1\"'", "/schema: must be \"dkb.bench/v1\" (got \"dkb.bundle/v1\"): not a dkb bench result"},
      {"del /cases/3/median_us", "/cases/3: missing required key 'median_us'"},
      {"set /cases/7/rel_stdev '\"low\"'", "/cases/7/rel_stdev: must be a number"},
      {"copy /cases/2/name /cases/9/name", "/cases/9/name: 'b16-t8192-g4-contig/split2' is also case 2: names must be unique"},
      {"set /cases/1/level 7", "/cases/1/level: must be"},
      {"set /cases/4 12", "/cases/4: must be an object (got integer)"},
      /* a median changed without its fractions, or a fraction without its median: the file contradicts itself,
       * and a gate that recomputed would trust the changed median */
      {"scale /cases/0/median_us 1.05", "/cases/0/roofline_fraction: 0.930316 is not io_bytes / median_us / the roofline's tbps "
                                        "= 0.886016: the figures disagree (one changed after dkb bench wrote them)\n"},
      {"scale /cases/40/visible_roofline_fraction 1.01", "/cases/40/visible_roofline_fraction: 0.621624 is not (visible_kv_bytes + "
                                                         "io_bytes - kv_bytes) / median_us / the roofline's tbps = 0.615469: the "
                                                         "figures disagree (one changed after dkb bench wrote them)\n"},
  };
  struct run_result r;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *p = edited("cmp-bad.json", bad[i].edit);
    compare(&r, 3, "%s %s", RUN, p);
    char want[900];
    snprintf(want, sizeof want, "dkb: error: %s: %s", p, bad[i].err);
    if (strncmp(r.err, want, strlen(want))) fail_msg("%s: stderr\n%s\nwant it to start with\n%s", bad[i].edit, r.err, want);
    run_result_release(&r);
  }
  compare(&r, 2, "%s", RUN);
  run_result_release(&r);
  compare(&r, 2, "%s %s --noise 0", RUN, RUN);
  run_result_release(&r);
}

/* Writes dir/bundle.json with a call key and `measurement` (a JSON object) for bench_case_read_bundle. */
static void measurement_bundle(const char *dir, const char *measurement) {
  struct run_result r;
  run_sh(&r, "mkdir -p %s && printf '%%s' '{\"dispatch\": {\"call_key_sha256\": \"%s\"}, \"measurement\": %s}' > %s/bundle.json",
         dir, KEY64, measurement, dir);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
}

/* bench_case_read_bundle refuses bc's bundle as malformed input, at `pointer`. */
static void assert_bundle_rejected_at(struct bench_case *bc, int timed, const char *pointer) {
  struct dkb_err e;
  dkb_err_clear(&e);
  assert_int_equal(bench_case_read_bundle(bc, timed, &e), -1);
  assert_int_equal(e.code, DKB_INPUT);
  assert_string_equal(e.pointer, pointer);
}

/* bench reads each case's call key and, when timed, its spread from its bundle (the record), and says
 * which pointer is missing. */
static void bench_reads_a_cases_call_key_and_spread_from_its_bundle(void **s) {
  (void)s;
  struct bench_case bc;
  memset(&bc, 0, sizeof bc);
  snprintf(bc.bundle_dir, sizeof bc.bundle_dir, "%s/spread", tmp_dir());
  measurement_bundle(bc.bundle_dir, "{\"timing\": {\"summary\": {\"count\": 1234, \"rel_stdev\": 0.0123}}}");
  struct dkb_err e;
  dkb_err_clear(&e);
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_int_equal(bc.samples, 1234);
  assert_near(bc.rel_stdev, 0.0123, 0);
  assert_string_equal(bc.call_key, KEY64);
  /* an untimed case needs no summary; a timed one does */
  measurement_bundle(bc.bundle_dir, "{\"timing\": {}}");
  memset(bc.call_key, 0, sizeof bc.call_key);
  assert_int_equal(bench_case_read_bundle(&bc, 0, &e), 0);
  assert_string_equal(bc.call_key, KEY64);
  assert_int_equal(bc.samples, 0);
  assert_bundle_rejected_at(&bc, 1, "/measurement/timing/summary");
  struct run_result r;
  run_sh(&r, "printf '%%s' '{\"dispatch\": {}}' > %s/bundle.json", bc.bundle_dir);
  run_result_release(&r);
  assert_bundle_rejected_at(&bc, 0, "/dispatch");
}

/* A case with no figure says why under its row: the selected backend's bundle stopped below level 6
 * with its first reason (the repeat call's difference, as cuDNN's bundles record it), or the forced
 * backend refused the call; a timed case, or one without a reason, has no such line. */
static void bench_says_why_a_case_has_no_figure(void **s) {
  (void)s;
  struct bench_case bc;
  memset(&bc, 0, sizeof bc);
  snprintf(bc.backend, sizeof bc.backend, "cudnn_sdpa");
  snprintf(bc.bundle_dir, sizeof bc.bundle_dir, "%s/below6", tmp_dir());
  struct run_result r;
  run_sh(&r, "mkdir -p %s && printf '%%s' '{\"dispatch\": {\"call_key_sha256\": \"%s\", \"selected\": \"cudnn_sdpa\"}, "
             "\"status\": {\"reasons\": [{\"code\": \"output_not_reproduced\", \"detail\": \"44 of 2048 LSE rows differ\"}]}}' "
             "> %s/bundle.json", bc.bundle_dir, KEY64, bc.bundle_dir);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  struct dkb_err e;
  dkb_err_clear(&e);
  assert_int_equal(bench_case_read_bundle(&bc, 0, &e), 0);
  char note[600];
  assert_int_equal(bench_unmeasured_note(&bc, note, sizeof note), 1);
  assert_string_equal(note, "below level 6: cudnn_sdpa: 44 of 2048 LSE rows differ");
  bc.selected[0] = '\0';  /* the forced backend refused the call: its reasons */
  assert_int_equal(bench_unmeasured_note(&bc, note, sizeof note), 1);
  assert_string_equal(note, "refused: cudnn_sdpa: 44 of 2048 LSE rows differ");
  bc.median_us = 25.0;  /* a figure needs no reason */
  assert_int_equal(bench_unmeasured_note(&bc, note, sizeof note), 0);
  assert_string_equal(note, "");
  bc.median_us = 0;
  bc.why[0] = '\0';
  assert_int_equal(bench_unmeasured_note(&bc, note, sizeof note), 0);
}

/* A bundle whose /measurement/timing holds a summary and `clocks` (its clocks_before and clocks_after
 * members). */
static void clock_bundle(const char *dir, const char *clocks) {
  char m[1024];
  snprintf(m, sizeof m, "{\"timing\": {\"summary\": {\"count\": 20, \"rel_stdev\": 0.01}, %s}}", clocks);
  measurement_bundle(dir, m);
}

/* bench reads the clocks NVML saw around a case's timed region from its bundle: the SM clock of each
 * sample, the event reason bits of either but gpu_idle, and whether one of them slowed the GPU (a power
 * cap, a thermal or hardware slowdown, the power brake; an application clock setting is not one). A
 * sample NVML could not take leaves the clocks unreported; a malformed one is an error at its pointer. */
static void bench_reads_a_cases_clocks_and_flags_a_slowdown(void **s) {
  (void)s;
  struct bench_case bc;
  memset(&bc, 0, sizeof bc);
  struct dkb_err e;
  dkb_err_clear(&e);
  char note[300];
  /* a bundle captured on the H200: 1980 MHz before and after, no reason */
  snprintf(bc.bundle_dir, sizeof bc.bundle_dir, "fixtures/captured/bundles/default");
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_true(bc.clocks_reported);
  assert_int_equal(bc.sm_mhz[0], 1980);
  assert_int_equal(bc.sm_mhz[1], 1980);
  assert_true(bc.clock_reasons == 0);
  assert_int_equal(bench_clock_note(&bc, note, sizeof note), 0);
  assert_string_equal(note, "");
  /* idle before, power-capped and hot after */
  snprintf(bc.bundle_dir, sizeof bc.bundle_dir, "%s/clocks", tmp_dir());
  clock_bundle(bc.bundle_dir, "\"clocks_before\": {\"sm_clock_mhz\": 1980, \"clocks_event_reasons\": {\"bits\": \"0x1\", \"names\": [\"gpu_idle\"]}}, "
                              "\"clocks_after\": {\"sm_clock_mhz\": 1755, \"clocks_event_reasons\": {\"bits\": \"0x24\", "
                              "\"names\": [\"sw_power_cap\", \"sw_thermal_slowdown\"]}}");
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_true(bc.clocks_reported);
  assert_int_equal(bc.sm_mhz[0], 1980);
  assert_int_equal(bc.sm_mhz[1], 1755);
  assert_true(bc.clock_reasons == 0x24);  /* sw_power_cap, sw_thermal_slowdown; gpu_idle left out */
  assert_int_equal(bench_clock_note(&bc, note, sizeof note), 1);
  assert_string_equal(note, "ran slowed (sw_power_cap,sw_thermal_slowdown; SM clock 1980 MHz before, 1755 after): its median is "
                            "not the kernel's alone");
  /* the application clock setting in both samples, no SM clock: reported once, not a slowdown */
  clock_bundle(bc.bundle_dir, "\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"0x2\", \"names\": [\"applications_clocks_setting\"]}, "
                              "\"not_reported\": {\"sm_clock_mhz\": \"not supported\"}}, \"clocks_after\": {\"clocks_event_reasons\": "
                              "{\"bits\": \"0x2\", \"names\": [\"applications_clocks_setting\"]}}");
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_true(bc.clocks_reported);
  assert_int_equal(bc.sm_mhz[0], -1);
  assert_int_equal(bc.sm_mhz[1], -1);
  assert_true(bc.clock_reasons == 0x2);
  assert_int_equal(bench_clock_note(&bc, note, sizeof note), 0);
  /* no NVML: nothing reported, nothing guessed */
  clock_bundle(bc.bundle_dir, "\"clocks_before\": {\"not_reported\": \"libnvidia-ml.so.1 not loaded\"}, "
                              "\"clocks_after\": {\"not_reported\": \"libnvidia-ml.so.1 not loaded\"}");
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_false(bc.clocks_reported);
  assert_true(bc.clock_reasons == 0);
  assert_int_equal(bc.sm_mhz[1], -1);
  /* malformed samples: the pointer of the bad value */
  static const struct { const char *clocks, *pointer; } bad[] = {
      {"\"clocks_after\": {\"sm_clock_mhz\": \"fast\"}", "/measurement/timing/clocks_after/sm_clock_mhz"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": 3}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"24\"}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"0x2z\"}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"0x\"}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"0x-1\"}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"bits\": \"0x10000000000000000\"}}", "/measurement/timing/clocks_before/clocks_event_reasons/bits"},
      {"\"clocks_before\": {\"clocks_event_reasons\": {\"names\": [\"gpu_idle\"]}}", "/measurement/timing/clocks_before/clocks_event_reasons"},
      {"\"clocks_after\": \"hot\"", "/measurement/timing/clocks_after"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clock_bundle(bc.bundle_dir, bad[i].clocks);
    assert_bundle_rejected_at(&bc, 1, bad[i].pointer);
  }
}

/* bench --counters: a case's DRAM bytes come from its bundle's counters (dram__bytes_read.sum), the
 * ratio over its visible K/V bytes from bench_case_rates, and a ratio below 0.95 is called L2's; a
 * bundle without counters leaves them unmeasured; a malformed counter is an error at its pointer. */
static void bench_reads_a_calls_dram_bytes_and_flags_k_v_served_by_l2(void **s) {
  (void)s;
  struct bench_case bc;
  memset(&bc, 0, sizeof bc);
  snprintf(bc.bundle_dir, sizeof bc.bundle_dir, "%s/dram", tmp_dir());
  struct dkb_err e;
  dkb_err_clear(&e);
  struct bench_roofline r;
  memset(&r, 0, sizeof r);
  char note[300];
  static const char *const counters =
      "{\"timing\": {}, \"counters\": [{\"name\": \"dram__bytes_write.sum\", \"value\": 1047040.0}, "
      "{\"name\": \"dram__bytes_read.sum\", \"value\": %s}]}";
  struct { const char *value; double ratio; int flagged; } cases[] = {
      {"48904448.0", 48904448.0 / 67108864.0, 1},  /* B1 T131072 with a7eaad2's prefetch: 18 MB came from L2 */
      {"67079168.0", 67079168.0 / 67108864.0, 0},  /* ad0ff3f: all of it from DRAM */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char body[400];
    snprintf(body, sizeof body, counters, cases[i].value);
    measurement_bundle(bc.bundle_dir, body);
    assert_int_equal(bench_case_read_bundle(&bc, 0, &e), 0);
    assert_true(bc.dram_measured);
    bc.visible_kv_bytes = 67108864.0;
    bench_case_rates(&bc, &r);
    assert_near(bc.dram_kv_ratio, cases[i].ratio, 1e-12);
    assert_int_equal(bench_dram_note(&bc, note, sizeof note), cases[i].flagged);
    if (cases[i].flagged)
      assert_string_equal(note, "a call read 0.73 of its visible K/V from DRAM (48.9 of 67.1 MB): L2 served the rest, left there by the "
                                "calls before it");
    else assert_string_equal(note, "");
  }
  /* no counters: nothing measured, nothing flagged */
  clock_bundle(bc.bundle_dir, "\"clocks_before\": {\"not_reported\": \"no NVML\"}");
  assert_int_equal(bench_case_read_bundle(&bc, 1, &e), 0);
  assert_false(bc.dram_measured);
  bench_case_rates(&bc, &r);
  assert_int_equal(bench_dram_note(&bc, note, sizeof note), 0);
  static const struct { const char *measurement, *pointer; } bad[] = {
      {"{\"counters\": {}}", "/measurement/counters"},
      {"{\"counters\": [7]}", "/measurement/counters/0"},
      {"{\"counters\": [{\"value\": 1}]}", "/measurement/counters/0"},
      {"{\"counters\": [{\"name\": \"dram__bytes_read.sum\", \"value\": -1}]}", "/measurement/counters/0/value"},
      {"{\"counters\": [{\"name\": \"dram__bytes_read.sum\"}]}", "/measurement/counters/0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    measurement_bundle(bc.bundle_dir, bad[i].measurement);
    assert_bundle_rejected_at(&bc, 0, bad[i].pointer);
  }
}

/* tools/ab-bench.sh runs the base build's bench and then the new one's, round after round, compares each
 * round's pair, keeps no per-case bundles and packs everything in one ab.tgz; its exit is the worst
 * compare's (without a GPU nothing is judged: 4). Wrong use is exit 2, before any bench runs. */
static void ab_bench_alternates_two_builds_and_compares_each_round(void **s) {
  (void)s;
  struct run_result r;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/ab", tmp_dir());
  run_sh(&r, "rm -rf %s && tools/ab-bench.sh build/dkb build/dkb %s fixtures/decode/dk128-dv64.json -- --no-roofline "
             "> /dev/null 2>&1; echo rc=$?; ls %s/compare-1.txt %s/compare-2.txt; tar tzf %s/ab.tgz | sort | grep -c -e "
             "'^./base-[12]/bench.json$' -e '^./new-[12]/bench.json$'; find %s -name cases | wc -l",
         dir, dir, dir, dir, dir, dir);
  char why[256], want[1600];
  const int gpu = have_gpu(why, sizeof why);
  snprintf(want, sizeof want, "%s\n%s/compare-1.txt\n%s/compare-2.txt\n4\n0\n", gpu ? "" : "rc=4", dir, dir);
  if (gpu) assert_true(!strncmp(r.out, "rc=0\n", 5) || !strncmp(r.out, "rc=1\n", 5));
  else assert_string_equal(r.out, want);
  run_result_release(&r);
  run_sh(&r, "grep -c '^dk128-dv64 .* unmeasured ' %s/compare-1.txt", dir);  /* the case's row */
  if (!gpu) assert_string_equal(r.out, "1\n");
  run_result_release(&r);
  /* wrong use: too few arguments, a base that is not an executable, no fixture */
  run_sh(&r, "tools/ab-bench.sh build/dkb build/dkb %s; echo rc=$?; tools/ab-bench.sh /nonexistent build/dkb %s x.json; "
             "echo rc=$?; tools/ab-bench.sh build/dkb build/dkb %s -- --no-roofline; echo rc=$?", dir, dir, dir);
  assert_string_equal(r.out, "rc=2\nrc=2\nrc=2\n");
  assert_non_null(strstr(r.err, "tools/ab-bench.sh: /nonexistent is not an executable dkb\n"));
  assert_non_null(strstr(r.err, "tools/ab-bench.sh: no fixture\n"));
  run_result_release(&r);
}

/* Several new arms (comma-separated) run in every round after the base, in order (each bench's log comes
 * after the one before it), each compared with the base in its own file; a list with an empty arm is
 * wrong use, refused before any bench. */
static void ab_bench_runs_every_new_arm_after_the_base(void **s) {
  (void)s;
  struct run_result r;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/ab3", tmp_dir());
  run_sh(&r, "rm -rf %s && ROUNDS=1 tools/ab-bench.sh build/dkb build/dkb,build/dkb %s fixtures/decode/dk128-dv64.json "
             "-- --no-roofline > /dev/null 2>&1; cd %s && ls -d base-1 new-1 new2-1 new3-1 compare-1.txt compare2-1.txt "
             "2>&1; ls -tr base-1.log new-1.log new2-1.log | tr '\\n' ' '; grep -c 'new2-1/bench.json' compare2-1.txt",
         dir, dir, dir);
  assert_string_equal(r.out, "ls: cannot access 'new3-1': No such file or directory\nbase-1\ncompare-1.txt\n"
                             "compare2-1.txt\nnew-1\nnew2-1\nbase-1.log new-1.log new2-1.log 1\n");
  run_result_release(&r);
  run_sh(&r, "tools/ab-bench.sh build/dkb build/dkb, %s x.json; echo rc=$?", dir);
  assert_string_equal(r.out, "rc=2\n");
  assert_non_null(strstr(r.err, "tools/ab-bench.sh:  is not an executable dkb\n"));
  run_result_release(&r);
}

/* --json: the same verdicts as the table, in a report valid against schemas/compare-report.schema.json. */
static void compare_json_report_is_schema_valid(void **s) {
  (void)s;
  const char *cand = edited("cmp-json-new.json", NOISE_1PCT RETIMED("0", "1.05"));
  const char *base = edited("cmp-json-base.json", NOISE_1PCT);
  struct run_result r;
  run_sh(&r, "build/dkb compare %s %s --json > %s/cr.json; echo rc=$?; /usr/bin/python3 tests/schema_check.py "
             "schemas/compare-report.schema.json %s/cr.json && /usr/bin/python3 tests/bench_facts.py verdict %s/cr.json",
         base, cand, tmp_dir(), tmp_dir(), tmp_dir());
  if (strncmp(r.out, "rc=1\n", 5)) fail_msg("%s%s", r.out, r.err);
  assert_string_equal(r.out + 5, "b16-t8192-g4-contig slower 5.0 1.0 1 43 {'fixed_pct': None, 'min_pct': 0.5} True 0.0\n");
  run_result_release(&r);
}

/* End to end: a bench run compared with itself. On a GPU every case is level 6 with its noise: all same,
 * exit 0. Without one nothing was measured, and the gate says so (exit 4) instead of passing. */
static void compare_of_a_fresh_bench_run_with_itself(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb bench fixtures/decode/default.json fixtures/decode/dk128-dv64.json -o %s/fresh --max-time 0.2 "
             "> /dev/null 2>&1 && build/dkb compare %s/fresh %s/fresh",
         tmp_dir(), tmp_dir(), tmp_dir());
  char why[256];
  if (have_gpu(why, sizeof why)) {
    if (r.rc) fail_msg("exit %d\n%s%s", r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, "compare: 2 cases: 2 same, 0 faster, 0 slower, 0 unknown"));
  } else {
    if (r.rc != 4) fail_msg("exit %d, want 4\n%s%s", r.rc, r.out, r.err);
    assert_non_null(strstr(r.out, ", no GPU\n"));
    assert_non_null(strstr(r.out, "device: a run without a GPU measured nothing\n"));
    assert_non_null(strstr(r.out, "compare: 2 cases: 0 same, 0 faster, 0 slower, 0 unknown (no recorded noise: --noise PCT), 2 unmeasured"));
  }
  run_result_release(&r);
}

DKB_TEST_GROUP(compare, cmocka_unit_test(ab_bench_alternates_two_builds_and_compares_each_round), cmocka_unit_test(ab_bench_runs_every_new_arm_after_the_base), cmocka_unit_test(bench_says_why_a_case_has_no_figure), cmocka_unit_test(compare_of_a_fresh_bench_run_with_itself), cmocka_unit_test(compare_json_report_is_schema_valid), cmocka_unit_test(compare_calls_a_run_the_same_as_itself),
               cmocka_unit_test(compare_flags_a_case_slower_beyond_its_noise), cmocka_unit_test(compare_band_has_a_floor),
               cmocka_unit_test(compare_says_when_a_case_ran_slowed),
               cmocka_unit_test(compare_judges_level_6_cases_of_the_same_call), cmocka_unit_test(compare_names_the_devices),
               cmocka_unit_test(compare_prints_no_median_for_a_case_not_timed),
               cmocka_unit_test(compare_rejects_bad_input_with_its_pointer),
               cmocka_unit_test(bench_reads_a_cases_call_key_and_spread_from_its_bundle),
               cmocka_unit_test(bench_reads_a_cases_clocks_and_flags_a_slowdown),
               cmocka_unit_test(bench_reads_a_calls_dram_bytes_and_flags_k_v_served_by_l2))
