/* bench.c - `dkb bench`: a sweep of decode calls against the streaming-read roofline. harness/bench_run.c
 * runs it (bench_prepare, bench_execute); this file parses the options, prints the table and the verdicts, and
 * chooses the exit code. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "evidence/ladder.h"
#include "harness/backends.h"
#include "harness/bench.h"
#include "harness/trace.h"
#include "kernels/kernels.h"
#include "lib/fsutil.h"

/* The bench's exit code over its cases: the first error stays, except that a case whose kernel failed
 * (1) outranks every other, so a CI gate never reads a wrong output as the machine's problem. */
static int worse(int rc, int code) {
  if (code == DKB_OK || rc == DKB_FAIL) return rc;
  return rc == DKB_OK || code == DKB_FAIL ? code : rc;
}

/* A case's split as its row prints it: "-" where the backend does not report one. */
struct split_text { char s[16]; };
static struct split_text split_text(int splits) {
  struct split_text t = {"-"};
  if (splits != DKB_SPLITS_UNREPORTED) snprintf(t.s, sizeof t.s, "%d", splits);
  return t;
}

/* A timed case's row: its median, noise, bandwidths, fractions (with a roofline), excess and same-bytes read. */
static void print_row(const struct bench_case *bc, int roofline_measured) {
  char noise[16] = "-";  /* the samples' relative stdev: how far to trust the median */
  if (bc->samples) snprintf(noise, sizeof noise, "%.2f%%", 100 * bc->rel_stdev);
  char excess[16] = "-";  /* us beyond the floor and the read at the roofline */
  if (isfinite(bc->excess_us)) snprintf(excess, sizeof excess, "%.2f", bc->excess_us);
  char frac[16] = "-", vfrac[16] = "-";  /* fractions of a measured roofline only */
  if (roofline_measured) {
    snprintf(frac, sizeof frac, "%.3f", bc->frac);
    snprintf(vfrac, sizeof vfrac, "%.3f", bc->visible_frac);
  }
  char rd[16] = "-", rf[16] = "-";  /* the same-bytes read and the case's fraction of its speed */
  if (bc->read_us > 0) snprintf(rd, sizeof rd, "%.2f", bc->read_us);
  if (isfinite(bc->read_fraction)) snprintf(rf, sizeof rf, "%.3f", bc->read_fraction);
  if (bc->backend[0]) printf("%-22s ", bc->backend);
  printf("%-34s %-15s %5d %6.0f %4d %7s %10.2f %6s %7.3f %6s %8.3f %6s %7s %8s %6s %5d\n", bc->name, bc->layout, bc->B,
         bc->mean_len, bc->H_q / bc->H_kv, split_text(bc->splits).s, bc->median_us, noise, bc->tbps, frac, bc->visible_tbps, vfrac, excess, rd, rf,
         bc->level);
}

/* print_case's context: the exit code so far, and whether the cases' fractions have a roofline. */
struct table {
  int rc;
  int roofline_measured;
};

/* One case's row of the table (and its clocks and DRAM notes), or its error, as bench_execute reports
 * it. */
static void print_case(void *ctx, const struct bench_matrix *m, const struct bench_case_report *rep) {
  struct table *t = ctx;
  int *rc = &t->rc;
  const struct bench_case *bc = &m->cases[rep->index];
  if (rep->load_err) {
    *rc = cmd_report_err(rep->load_err);
    return;
  }
  if (rep->run_err) {  /* out of host memory for its inputs: 4, as for dkb run */
    *rc = worse(*rc, cmd_report_err_in(bc->name, rep->run_err));
    return;
  }
  if (rep->bundle_err) *rc = worse(*rc, cmd_report_err_in(bc->name, rep->bundle_err));
  if (rep->read_failed) fprintf(stderr, "dkb: bench: %s: same-bytes read not measured: %s\n", bc->name, bc->read_reason);
  *rc = worse(*rc, ladder_terminal_exit_code(bc->terminal, bc->launch_code));  /* a wrong output or a faulting kernel: 1; a launch the machine failed: 4 */
  char note[2048];
  if (bc->median_us > 0) print_row(bc, t->roofline_measured);
  else {  /* no figure, not zeros that read as one; the line below says why */
    if (bc->backend[0]) printf("%-22s ", bc->backend);
    printf("%-34s %-15s %5d %6.0f %4d %7s  not measured (level %d, %s)\n", bc->name, bc->layout, bc->B, bc->mean_len,
           bc->H_q / bc->H_kv, split_text(bc->splits).s, bc->level, bc->terminal);
    if (bench_unmeasured_note(bc, note, sizeof note)) printf("  %s\n", note);
  }
  if (bench_clock_note(bc, note, sizeof note)) printf("  clocks: %s %s\n", bc->name, note);
  if (bench_l2_served(m, bc) && bench_dram_note(bc, note, sizeof note)) printf("  dram: %s %s\n", bc->name, note);  /* --cold: the timed calls found L2 flushed */
  fflush(stdout);
}

/* The references bench_prepare measured (or why not), then the table's legend and header. */
static void print_references(const struct bench_env *env, int roof, int side_by_side) {
  const struct bench_roofline *r = &env->roof;
  if (roof && env->dev.available) {
    if (env->roof_failed) fprintf(stderr, "dkb: bench: roofline failed: %s\n", env->roof_err.msg);
    else {
      printf("roofline: %s streams %.3g GB: median %.1f us = %.3f TB/s (%zu samples)\n", dkb_roofline_symbol, r->bytes / 1e9,
             r->median_us, r->tbps, r->samples);
      static const char *const how[2] = {"plain launches", "graph replay"};
      for (int g = 0; g < 2; g++) {
        const struct bench_floor *f = &r->floor[g];
        if (f->measured)
          printf("floor: %s (an empty kernel, the same timing, %s) median %.2f us (%zu samples): the least a%s case can "
                 "measure\n", dkb_empty_symbol, how[g], f->us, f->samples, g ? " --graph" : "ny");
        else fprintf(stderr, "dkb: bench: launch floor (%s) not measured: %s\n", how[g], f->reason);
      }
    }
  }
  printf("bandwidth = (unique K/V bytes + Q bytes + O bytes) / median time, decimal TB/s; fraction = bandwidth / roofline\n");
  printf("excess = median - launch floor - (visible K/V + Q + O bytes) / roofline: the cost beyond an empty launch and the read\n");
  printf("read = %s over a buffer of the case's visible K/V + Q + O bytes, timed as the case: what one launch that only "
         "reads them measures; rfrac = read / median\n", dkb_roofline_symbol);
  if (side_by_side) printf("%-22s ", "backend");
  printf("%-34s %-15s %5s %6s %4s %7s %10s %6s %7s %6s %8s %6s %7s %8s %6s %5s\n", "case", "layout", "B", "T", "g", "split",
         "median_us", "noise", "TB/s", "frac", "vis_TB/s", "vfrac", "excess", "read_us", "rfrac", "level");
}

/* Side by side: each entry's backends in one line, their medians and fractions, and the first backend's
 * median over the fastest other that admitted the call. */
static void print_side_by_side(const struct bench_matrix *m, int roofline_measured) {
  const int nb = m->nbackends;
  if (nb < 2) return;
  printf("side by side (%s first; ratio = its median / the fastest other backend's that admitted the call):\n", m->backends[0]);
  printf("  %-34s", "case");
  for (int k = 0; k < nb; k++) printf(" %22s", m->backends[k]);
  printf(" %22s %7s\n", "fastest other", "ratio");
  for (int i = 0; i + nb <= m->n; i += nb) {
    printf("  %-34s", m->cases[i].name);
    int fast = -1;
    for (int k = 0; k < nb; k++) {
      const struct bench_case *c = &m->cases[i + k];
      char cell[48];
      if (c->median_us > 0 && roofline_measured) snprintf(cell, sizeof cell, "%.2f us %.3f", c->median_us, c->frac);
      else if (c->median_us > 0) snprintf(cell, sizeof cell, "%.2f us", c->median_us);
      else snprintf(cell, sizeof cell, "%s", c->ran && !c->selected[0] ? "refused" : "not measured");
      printf(" %22s", cell);
      if (k && c->median_us > 0 && c->level == 6 && (fast < 0 || c->median_us < m->cases[fast].median_us)) fast = i + k;
    }
    const struct bench_case *a = &m->cases[i];
    if (fast >= 0 && a->median_us > 0 && a->level == 6)
      printf(" %22s %7.3f\n", m->cases[fast].backend, a->median_us / m->cases[fast].median_us);
    else printf(" %22s %7s\n", fast >= 0 ? m->cases[fast].backend : "-", "-");
  }
}

/* What the cases' tally says about clocks and counters, then each auto case against its best forced split. */
static void print_summary(const struct bench_matrix *m, const struct bench_tally *n, int counters, int cold) {
  if (n->timed && n->clocked < n->timed)
    printf("clocks: NVML reported no clocks for %d of %d timed cases\n", n->timed - n->clocked, n->timed);
  if (n->clocked)
    printf("clocks: %d of the %d timed cases with NVML clocks ran with a slowdown reason active (before or after)\n", n->slowed,
           n->clocked);
  if (counters && n->counted < m->n)
    printf("dram: no counters for %d of %d cases (a case below level 5 never reached them; else its bundle's "
           "/measurement/counters_pass says why)\n", m->n - n->counted, m->n);
  if (n->counted && !cold)
    printf("dram: %d of the %d cases with counters read less than %.2f of their visible K/V from DRAM in a call after the timed "
           "ones: their bandwidth is partly L2's, and their fraction targets are not measured\n", n->l2served, n->counted,
           BENCH_DRAM_KV_MIN);
  for (int i = 0; i < m->n; i++) {
    const struct bench_case *a = &m->cases[i];
    if (a->forced_splits || !a->ran || a->median_us <= 0) continue;
    int forced, all6;
    const int k = bench_best_forced(m, i, &forced, &all6);
    if (k < 0) continue;
    const double best = m->cases[k].median_us;
    const int best_s = m->cases[k].forced_splits;
    printf("auto vs best forced: %-34s auto %.2f us (split %d), best split %d %.2f us: %+.1f%%\n", a->name, a->median_us,
           a->splits, best_s, best, 100 * (a->median_us / best - 1));
  }
}

/* The matrix's targets, judged on level-6 results only, and how many were met, missed and not measured. */
static void print_targets(const struct bench_matrix *m, const char *matrix, const struct bench_outcome *o) {
  const struct bench_verdict *v = o->v;
  for (int i = 0; i < o->nv; i++) {
    if (!i) printf("targets (%s):\n", matrix ? matrix : m->name);
    const char *got = "";
    char gb[48];
    if (v[i].state != BENCH_NOT_MEASURED) {
      snprintf(gb, sizeof gb, v[i].is_pct ? "%+.1f%%" : "%.3f", v[i].got);
      got = gb;
    }
    char need[128] = "";  /* a missed floor: the time that would meet it, and what that leaves of the excess */
    const struct bench_case *vc = &m->cases[v[i].case_index];
    if (isfinite(v[i].need_us)) {
      const int n = snprintf(need, sizeof need, " (met at %.2f us, %.2f us less", v[i].need_us, vc->median_us - v[i].need_us);
      if (isfinite(vc->excess_us))
        snprintf(need + n, sizeof need - (size_t)n, ": an excess of %.2f us, not %.2f)", vc->excess_us - (vc->median_us - v[i].need_us),
                 vc->excess_us);
      else snprintf(need + n, sizeof need - (size_t)n, ")");
    }
    char note[2048], slow[2056] = "", dram[2056] = "";  /* a verdict on a slowed case says so: its miss may be the machine's */
    if (bench_clock_note(vc, note, sizeof note)) snprintf(slow, sizeof slow, " [%s]", note);
    if (bench_l2_served(m, vc) && bench_dram_note(vc, note, sizeof note)) snprintf(dram, sizeof dram, " [%s]", note);
    char edge[64] = "";  /* a verdict the run's noise could turn */
    if (isfinite(v[i].noise_pct) && !v[i].beyond_noise) snprintf(edge, sizeof edge, " (at the edge: noise %.2f%%)", v[i].noise_pct);
    printf("  %-12s %-34s %s%s%s%s%s%s%s\n", bench_verdict_name(v[i].state), vc->name, v[i].what,
           *got ? ": " : v[i].l2_served ? " (not a DRAM figure)" : " (no level-6 measurement)", got, edge, need, slow, dram);
  }
  struct bench_target_count c;
  bench_count_targets(v, o->nv, &c);
  if (o->nv)
    printf("targets: %d met (%d beyond the noise), %d missed (%d beyond the noise), %d not measured\n", c.met,
           c.met_beyond, c.missed, c.missed_beyond, c.unmeasured);
}

/* usage: dkb bench [FIXTURE... | --matrix FILE] [-o DIR] [--backend A,B,...] [--plugin PATH]... [--graph] [--cold]
 *                  [--max-time S] [--no-roofline] [--counters] [--require-targets | --require-margin] */
int cmd_bench(int argc, char **argv) {
  enum { O_MATRIX = 256, O_GRAPH, O_COLD, O_TIME, O_NOROOF, O_REQ, O_REQ_MARGIN, O_COUNTERS, O_BACKEND, O_PLUGIN };
  static const struct option opts[] = {{"matrix", required_argument, NULL, O_MATRIX}, {"output", required_argument, NULL, 'o'},
                                       {"graph", no_argument, NULL, O_GRAPH}, {"cold", no_argument, NULL, O_COLD},
                                       {"max-time", required_argument, NULL, O_TIME}, {"no-roofline", no_argument, NULL, O_NOROOF},
                                       {"require-targets", no_argument, NULL, O_REQ}, {"require-margin", no_argument, NULL, O_REQ_MARGIN},
                                       {"counters", no_argument, NULL, O_COUNTERS},
                                       {"backend", required_argument, NULL, O_BACKEND},
                                       {"plugin", required_argument, NULL, O_PLUGIN}, {NULL, 0, NULL, 0}};
  const char *matrix = NULL, *out = "bench-out", *backends = NULL;
  const char *plugins[BACKENDS_MAX_PLUGINS];
  size_t nplugins = 0;
  int graph = 0, cold = 0, roof = 1, require = 0, counters = 0, c;
  double max_time = 2.0;
  while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
    switch (c) {
    case O_MATRIX: matrix = optarg; break;
    case 'o': out = optarg; break;
    case O_GRAPH: graph = 1; break;
    case O_COLD: cold = 1; break;
    case O_NOROOF: roof = 0; break;
    case O_REQ: require = require > 1 ? require : 1; break;
    case O_REQ_MARGIN: require = 2; break;  /* --require-targets, and each met beyond the run's noise */
    case O_COUNTERS: counters = 1; break;
    case O_BACKEND: backends = optarg; break;
    case O_PLUGIN:
      if (nplugins == BACKENDS_MAX_PLUGINS) return cmd_usage_error("bench", "at most %d --plugin options", BACKENDS_MAX_PLUGINS);
      plugins[nplugins++] = optarg;
      break;
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
  if (backends && bench_matrix_set_backends(&m, backends, &err)) {
    bench_matrix_release(&m);
    return cmd_usage_error("bench", "%s", err.msg);
  }
  struct backend_set *set = DKB_CALLOC(1, sizeof *set);
  if (backend_set_open(set, plugins, nplugins, &err)) {
    free(set);
    bench_matrix_release(&m);
    return cmd_report_err(&err);
  }
  for (int k = 0; k < m.nbackends; k++) {  /* a name no loaded backend has is refused before any case runs */
    struct dkb_buf why;
    dkb_buf_init(&why);
    int known = backend_request_known(set, m.backends[k], &why);
    int bad = known ? DKB_OK : backends ? cmd_usage_error("bench", "--backend %s", why.p) : DKB_INPUT;
    if (!known && !backends) {
      dkb_err_set(&err, DKB_INPUT, matrix, "/backends", "%s", why.p);
      cmd_report_err(&err);
    }
    dkb_buf_release(&why);
    if (bad) {
      backend_set_close(set);
      free(set);
      bench_matrix_release(&m);
      return bad;
    }
  }
  if (dkb_mkdirs(out, &err)) {
    backend_set_close(set);
    free(set);
    bench_matrix_release(&m);
    return cmd_report_err(&err);
  }
  m.cold = cold;

  const struct bench_opts o = {.out_dir = out, .graph = graph, .cold = cold, .roofline = roof, .counters = counters,
                               .max_time_s = max_time, .argc = argc, .argv = argv, .backends = set};
  struct bench_env env;
  bench_prepare(&o, m.roofline_bytes, &env);
  if (!env.dev.available)
    fprintf(stderr, "dkb: bench: no GPU (%s); every case stops at the level the host proves\n", env.dev.reason);
  print_references(&env, roof, m.nbackends > 0);
  struct table tab = {DKB_OK, env.roof.measured};
  struct bench_outcome res;
  bench_execute(&m, &o, &env, print_case, &tab, &res);
  int rc = tab.rc;
  print_summary(&m, &res.tally, counters, cold);
  print_side_by_side(&m, env.roof.measured);
  print_targets(&m, matrix, &res);
  if (bench_write(out, &m, &env.roof, res.v, res.nv, &env.dev, argc, argv, &err)) rc = cmd_report_err(&err);
  else printf("wrote %s/bench.json, %s/bench.csv, %s/roofline-fraction.svg\n", out, out, out);
  char why[200] = "";
  const int gate = require ? bench_gate(res.v, res.nv, require == 2, why, sizeof why) : DKB_OK;
  bench_outcome_release(&res);
  bench_matrix_release(&m);
  backend_set_close(set);
  free(set);
  fflush(stdout);  /* the table before the verdict when both go to one file */
  if (rc == DKB_OK && gate != DKB_OK) {
    fprintf(stderr, "dkb: error: %s\n", why);
    return gate;
  }
  return rc;
}
