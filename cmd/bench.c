/* bench.c - `dkb bench`: a sweep of decode calls against the streaming-read roofline. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "evidence/ladder.h"
#include "harness/bench.h"
#include "harness/decode_call.h"
#include "harness/device.h"
#include "lib/fsutil.h"
#include "harness/backends.h"
#include "harness/runner.h"
#include "kernels/kernels.h"
#include "harness/trace.h"

static void quiet_progress(void *ctx, const char *stage, const char *detail) { (void)ctx; (void)stage; (void)detail; }

/* The bench's exit code over its cases: the first error stays, except that a case whose kernel failed
 * (1) outranks every other, so a CI gate never reads a wrong output as the machine's problem. */
static int worse(int rc, int code) {
  if (code == DKB_OK || rc == DKB_FAIL) return rc;
  return rc == DKB_OK || code == DKB_FAIL ? code : rc;
}

/* Case i's same-bytes read (bench_read): that of an earlier case with the same visible bytes and timing
 * mode, else timed now. skip: why no read is timed in this run (no GPU, --no-roofline). */
static void same_bytes_read(struct bench_matrix *m, int i, const struct dkb_timing_opts *t, const char *skip) {
  struct bench_case *bc = &m->cases[i];
  if (skip) {
    snprintf(bc->read_reason, sizeof bc->read_reason, "%s", skip);
    return;
  }
  const double bytes = bench_visible_bytes(bc);
  for (int k = 0; k < i; k++) {
    const struct bench_case *o = &m->cases[k];
    if (o->read_us > 0 && o->graph == bc->graph && bench_visible_bytes(o) == bytes) {
      bc->read_us = o->read_us;
      bc->read_samples = o->read_samples;
      return;
    }
  }
  struct dkb_err err;
  dkb_err_clear(&err);
  size_t n = 0;
  if (bench_read(bytes, t, bc->graph, &bc->read_us, &n, &err)) {
    snprintf(bc->read_reason, sizeof bc->read_reason, "%s", err.msg);
    fprintf(stderr, "dkb: bench: %s: same-bytes read not measured: %s\n", bc->name, err.msg);
  }
  bc->read_samples = (long long)n;
}

/* usage: dkb bench [FIXTURE... | --matrix FILE] [-o DIR] [--graph] [--cold] [--max-time S] [--no-roofline]
 *                  [--counters] [--require-targets] */
int cmd_bench(int argc, char **argv) {
  enum { O_MATRIX = 256, O_GRAPH, O_COLD, O_TIME, O_NOROOF, O_REQ, O_COUNTERS };
  static const struct option opts[] = {{"matrix", required_argument, NULL, O_MATRIX}, {"output", required_argument, NULL, 'o'},
                                       {"graph", no_argument, NULL, O_GRAPH}, {"cold", no_argument, NULL, O_COLD},
                                       {"max-time", required_argument, NULL, O_TIME}, {"no-roofline", no_argument, NULL, O_NOROOF},
                                       {"require-targets", no_argument, NULL, O_REQ}, {"counters", no_argument, NULL, O_COUNTERS},
                                       {NULL, 0, NULL, 0}};
  const char *matrix = NULL, *out = "bench-out";
  int graph = 0, cold = 0, roof = 1, require = 0, counters = 0, c;
  double max_time = 2.0;
  while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
    switch (c) {
    case O_MATRIX: matrix = optarg; break;
    case 'o': out = optarg; break;
    case O_GRAPH: graph = 1; break;
    case O_COLD: cold = 1; break;
    case O_NOROOF: roof = 0; break;
    case O_REQ: require = 1; break;
    case O_COUNTERS: counters = 1; break;
    case O_TIME: {
      char *end;
      max_time = strtod(optarg, &end);
      if (*end || !(max_time >= 0.01 && max_time <= 3600)) return cmd_usage_error("bench", "--max-time must be in [0.01, 3600] (got '%s')", optarg);
      break;
    }
    case ':': return cmd_usage_error("bench", "option '%s' needs a value", argv[optind - 1]);
    default: return cmd_usage_error("bench", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (!!matrix == (optind < argc)) return cmd_usage_error("bench", "give fixtures or --matrix FILE (one of them)");
  struct dkb_err err;
  dkb_err_clear(&err);
  dkb_trace_route_nvtx(&err);
  dkb_err_clear(&err);
  struct bench_matrix m;
  if (matrix ? bench_matrix_load(matrix, &m, &err) : bench_matrix_from_fixtures(argv + optind, argc - optind, &m, &err))
    return cmd_report_err(&err);
  if (dkb_mkdirs(out, &err)) { bench_matrix_release(&m); return cmd_report_err(&err); }
  m.cold = cold;

  struct dkb_device_info dev;
  struct dkb_err derr;
  dkb_err_clear(&derr);
  if (dkb_device_probe(0, &dev, &derr)) {
    fprintf(stderr, "dkb: bench: no GPU (%s); every case stops at the level the host proves\n", dev.reason);
  }
  struct dkb_timing_opts t;
  dkb_timing_opts_default(&t);
  t.max_time_s = max_time;
  if (t.min_time_s > max_time) t.min_time_s = max_time;
  t.cold = cold;
  struct bench_roofline r;
  memset(&r, 0, sizeof r);
  if (roof && dev.available) {
    if (bench_roofline(m.roofline_bytes, &t, &r, &err)) fprintf(stderr, "dkb: bench: roofline failed: %s\n", err.msg);
    else {
      printf("roofline: %s streams %.3g GB: median %.1f us = %.3f TB/s (%zu samples)\n", dkb_roofline_symbol, r.bytes / 1e9,
             r.median_us, r.tbps, r.samples);
      static const char *const how[2] = {"plain launches", "graph replay"};
      for (int g = 0; g < 2; g++) {
        const struct bench_floor *f = &r.floor[g];
        if (f->measured)
          printf("floor: %s (an empty kernel, the same timing, %s) median %.2f us (%zu samples): the least a%s case can "
                 "measure\n", dkb_empty_symbol, how[g], f->us, f->samples, g ? " --graph" : "ny");
        else fprintf(stderr, "dkb: bench: launch floor (%s) not measured: %s\n", how[g], f->reason);
      }
    }
  } else {
    snprintf(r.reason, sizeof r.reason, "%s", roof ? dev.reason : "--no-roofline");
    for (int g = 0; g < 2; g++) snprintf(r.floor[g].reason, sizeof r.floor[g].reason, "%s", r.reason);
  }
  printf("bandwidth = (unique K/V bytes + Q bytes + O bytes) / median time, decimal TB/s; fraction = bandwidth / roofline\n");
  printf("excess = median - launch floor - (visible K/V + Q + O bytes) / roofline: the cost beyond an empty launch and the read\n");
  printf("read = %s over a buffer of the case's visible K/V + Q + O bytes, timed as the case: what one launch that only "
         "reads them measures; rfrac = read / median\n", dkb_roofline_symbol);
  printf("%-34s %-15s %5s %6s %4s %7s %10s %6s %7s %6s %8s %6s %7s %8s %6s %5s\n", "case", "layout", "B", "T", "g", "split",
         "median_us", "noise", "TB/s", "frac", "vis_TB/s", "vfrac", "excess", "read_us", "rfrac", "level");
  int rc = DKB_OK, timed = 0, clocked = 0, slowed = 0, counted = 0, l2served = 0;
  struct backend_set *set = DKB_CALLOC(1, sizeof *set);
  if (backend_set_open(set, NULL, 0, &err)) DKB_BUG("%s", err.msg);
  for (int i = 0; i < m.n; i++) {
    struct bench_case *bc = &m.cases[i];
    struct decode_call call;
    if (decode_call_load(bc->fixture, &call, &err) || backends_check_request(set, &call, &err)) { rc = cmd_report_err(&err); break; }
    if (bc->forced_splits) {
      call.split_policy = SPLIT_FIXED;
      call.splits = call.capacity = bc->forced_splits;
    }
    if (graph) call.graph = 1;
    struct run_opts ro;
    memset(&ro, 0, sizeof ro);
    snprintf(bc->bundle_dir, sizeof bc->bundle_dir, "%s/cases/%03d", out, i);
    ro.out_dir = bc->bundle_dir;
    ro.timing = t;
    ro.timing_enabled = 1;
    ro.counters = counters;
    ro.argc = argc;
    ro.argv = argv;
    ro.progress = quiet_progress;
    struct run_result res;
    if (runner_execute(&call, set, &ro, &res, &err)) {  /* the case is recorded as not run; the others go on */
      rc = worse(rc, cmd_report_err_in(bc->name, &err));  /* out of host memory for its inputs: 4, as for dkb run */
      decode_call_release(&call);
      continue;
    }
    bc->ran = 1;
    bc->level = res.level;
    snprintf(bc->terminal, sizeof bc->terminal, "%s", res.terminal);
    bc->median_us = res.median_us;
    bc->io_bytes = res.io_bytes;
    bc->kv_bytes = res.kv_bytes;
    bc->visible_kv_bytes = res.visible_kv_bytes;
    bc->splits = res.splits;
    memcpy(bc->tiles, res.tiles, sizeof bc->tiles);
    if (bench_case_read_bundle(bc, res.median_us > 0, &err)) rc = worse(rc, cmd_report_err_in(bc->name, &err));
    bc->graph = call.graph;
    if (bc->samples > 0) same_bytes_read(&m, i, &t, !roof ? "--no-roofline" : !dev.available ? dev.reason : NULL);
    bench_case_rates(bc, &r);
    rc = worse(rc, ladder_terminal_exit_code(res.terminal, res.launch_code));  /* a wrong output or a faulting kernel: 1; a launch the machine failed: 4 */
    char noise[16] = "-";  /* the samples' relative stdev: how far to trust the median */
    if (bc->samples) snprintf(noise, sizeof noise, "%.2f%%", 100 * bc->rel_stdev);
    char excess[16] = "-";  /* us beyond the floor and the read at the roofline */
    if (isfinite(bc->excess_us)) snprintf(excess, sizeof excess, "%.2f", bc->excess_us);
    char rd[16] = "-", rf[16] = "-";  /* the same-bytes read and the case's fraction of its speed */
    if (bc->read_us > 0) snprintf(rd, sizeof rd, "%.2f", bc->read_us);
    if (isfinite(bc->read_fraction)) snprintf(rf, sizeof rf, "%.3f", bc->read_fraction);
    printf("%-34s %-15s %5d %6.0f %4d %7d %10.2f %6s %7.3f %6.3f %8.3f %6.3f %7s %8s %6s %5d\n", bc->name, bc->layout, bc->B,
           bc->mean_len, bc->H_q / bc->H_kv, bc->splits, bc->median_us, noise, bc->tbps, bc->frac, bc->visible_tbps, bc->visible_frac,
           excess, rd, rf, bc->level);
    char note[2048];
    const int slow = bench_clock_note(bc, note, sizeof note);
    if (slow) printf("  clocks: %s %s\n", bc->name, note);
    const int served = bench_l2_served(&m, bc);  /* --cold: the timed calls found L2 flushed */
    if (served && bench_dram_note(bc, note, sizeof note)) printf("  dram: %s %s\n", bc->name, note);
    counted += bc->dram_measured;
    l2served += served;
    timed += bc->samples > 0;
    clocked += bc->samples > 0 && bc->clocks_reported;
    slowed += slow;
    fflush(stdout);
    run_result_release(&res);
    decode_call_release(&call);
  }
  backend_set_close(set);
  free(set);
  if (timed && clocked < timed) printf("clocks: NVML reported no clocks for %d of %d timed cases\n", timed - clocked, timed);
  if (clocked) printf("clocks: %d of the %d timed cases with NVML clocks ran with a slowdown reason active (before or after)\n", slowed, clocked);
  if (counters && counted < m.n)
    printf("dram: no counters for %d of %d cases (a case below level 5 never reached them; else its bundle's "
           "/measurement/counters_pass says why)\n", m.n - counted, m.n);
  if (counted && !cold)
    printf("dram: %d of the %d cases with counters read less than %.2f of their visible K/V from DRAM in a call after the timed "
           "ones: their bandwidth is partly L2's, and their fraction targets are not measured\n", l2served, counted, BENCH_DRAM_KV_MIN);
  /* auto versus the best forced split count of the same fixture */
  for (int i = 0; i < m.n; i++) {
    const struct bench_case *a = &m.cases[i];
    if (a->forced_splits || !a->ran || a->median_us <= 0) continue;
    int forced, all6;
    const int k = bench_best_forced(&m, i, &forced, &all6);
    if (k < 0) continue;
    const double best = m.cases[k].median_us;
    const int best_s = m.cases[k].forced_splits;
    printf("auto vs best forced: %-34s auto %.2f us (split %d), best split %d %.2f us: %+.1f%%\n", a->name, a->median_us,
           a->splits, best_s, best, 100 * (a->median_us / best - 1));
  }
  /* the matrix's targets, judged on level-6 results only */
  struct bench_verdict *v = DKB_CALLOC((size_t)(4 * m.n + 1), sizeof *v);  /* at most 3 targets and 1 auto check per case */
  const int nv = bench_judge(&m, &r, v, 4 * m.n + 1);
  int missed = 0, unmeasured = 0;
  for (int i = 0; i < nv; i++) {
    if (!i) printf("targets (%s):\n", matrix);
    const char *got = "";
    char gb[48];
    if (v[i].state != BENCH_NOT_MEASURED) {
      snprintf(gb, sizeof gb, v[i].is_pct ? "%+.1f%%" : "%.3f", v[i].got);
      got = gb;
    }
    char need[128] = "";  /* a missed floor: the time that would meet it, and what that leaves of the excess */
    const struct bench_case *vc = &m.cases[v[i].case_index];
    if (isfinite(v[i].need_us)) {
      const int n = snprintf(need, sizeof need, " (met at %.2f us, %.2f us less", v[i].need_us, vc->median_us - v[i].need_us);
      if (isfinite(vc->excess_us))
        snprintf(need + n, sizeof need - (size_t)n, ": an excess of %.2f us, not %.2f)", vc->excess_us - (vc->median_us - v[i].need_us),
                 vc->excess_us);
      else snprintf(need + n, sizeof need - (size_t)n, ")");
    }
    char note[2048], slow[2056] = "", dram[2056] = "";  /* a verdict on a slowed case says so: its miss may be the machine's */
    if (bench_clock_note(vc, note, sizeof note)) snprintf(slow, sizeof slow, " [%s]", note);
    if (bench_l2_served(&m, vc) && bench_dram_note(vc, note, sizeof note)) snprintf(dram, sizeof dram, " [%s]", note);
    printf("  %-12s %-34s %s%s%s%s%s%s\n", bench_verdict_name(v[i].state), vc->name, v[i].what,
           *got ? ": " : v[i].l2_served ? " (not a DRAM figure)" : " (no level-6 measurement)", got, need, slow, dram);
    missed += v[i].state == BENCH_MISSED;
    unmeasured += v[i].state == BENCH_NOT_MEASURED;
  }
  if (nv) printf("targets: %d met, %d missed, %d not measured\n", nv - missed - unmeasured, missed, unmeasured);
  if (bench_write(out, &m, &r, v, nv, &dev, argc, argv, &err)) rc = cmd_report_err(&err);
  else printf("wrote %s/bench.json, %s/bench.csv, %s/roofline-fraction.svg\n", out, out, out);
  free(v);
  bench_matrix_release(&m);
  fflush(stdout);  /* the table before the verdict when both go to one file */
  if (rc == DKB_OK && require && missed) {
    fprintf(stderr, "dkb: error: %d of %d bench targets missed\n", missed, nv);
    return DKB_FAIL;
  }
  if (rc == DKB_OK && require && unmeasured) {
    fprintf(stderr, "dkb: error: %d of %d bench targets could not be measured on this host\n", unmeasured, nv);
    return DKB_ENV;
  }
  return rc;
}
