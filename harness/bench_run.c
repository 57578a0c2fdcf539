/* bench_run.c - one `dkb bench` run, as cmd/bench.c drives it (see bench.h): the device and the
 * references first, then every case through the runner (harness/runner.h), each case's bundle read back,
 * its same-bytes read and rates, and the matrix's targets judged. Apart from bench_matrix.c (the matrix)
 * and bench.c (the references, the rates, the verdicts and the writers), so that what only reads or writes
 * bench results does not link the runner. */
#include "harness/bench.h"
#include "harness/backends.h"
#include "harness/decode_call.h"
#include "harness/nvml.h"
#include "harness/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_prepare(const struct bench_opts *o, long long roofline_bytes, struct bench_env *env) {
  memset(env, 0, sizeof *env);
  struct dkb_err derr;  /* the probe's message is also env->dev.reason */
  dkb_err_clear(&derr);
  dkb_device_probe(0, &env->dev, &derr);
  struct dkb_timing_opts *t = &env->timing;
  dkb_timing_opts_default(t);
  t->max_time_s = o->max_time_s;
  if (t->min_time_s > o->max_time_s) t->min_time_s = o->max_time_s;
  t->cold = o->cold;
  struct bench_roofline *r = &env->roof;
  if (o->roofline && env->dev.available) {
    dkb_err_clear(&env->roof_err);
    env->roof_failed = bench_roofline(roofline_bytes, t, r, &env->roof_err) != 0;
  } else {
    snprintf(r->reason, sizeof r->reason, "%s", o->roofline ? env->dev.reason : "--no-roofline");
    for (int g = 0; g < 2; g++) snprintf(r->floor[g].reason, sizeof r->floor[g].reason, "%s", r->reason);
  }
}

static void quiet_progress(void *ctx, const char *stage, const char *detail) { (void)ctx; (void)stage; (void)detail; }

/* Case i's same-bytes read (bench_read): that of an earlier case with the same visible bytes and timing
 * mode, else timed now. skip: why no read is timed in this run (no GPU, --no-roofline). Returns 1 when
 * the read was timed and failed (read_reason says why). */
static int same_bytes_read(struct bench_matrix *m, int i, const struct dkb_timing_opts *t, const char *skip) {
  struct bench_case *bc = &m->cases[i];
  if (skip) {
    snprintf(bc->read_reason, sizeof bc->read_reason, "%s", skip);
    return 0;
  }
  const double bytes = bench_visible_bytes(bc);
  for (int k = 0; k < i; k++) {
    const struct bench_case *o = &m->cases[k];
    if (o->read_us > 0 && o->graph == bc->graph && bench_visible_bytes(o) == bytes) {
      bc->read_us = o->read_us;
      bc->read_samples = o->read_samples;
      return 0;
    }
  }
  struct dkb_err err;
  dkb_err_clear(&err);
  size_t n = 0;
  const int failed = bench_read(bytes, t, bc->graph, &bc->read_us, &n, &err) != 0;
  if (failed) snprintf(bc->read_reason, sizeof bc->read_reason, "%s", err.msg);
  bc->read_samples = (long long)n;
  return failed;
}

/* Case i through the runner into its bundle, then what the bundle records, its same-bytes read and its
 * rates. Returns -1 when the case did not run (rep->load_err or rep->run_err set, pointing at err). */
static int execute_case(struct bench_matrix *m, int i, const struct bench_opts *o, const struct bench_env *env,
                        struct bench_case_report *rep, struct dkb_err *err, struct dkb_err *berr) {
  struct bench_case *bc = &m->cases[i];
  struct decode_call call;
  if (bench_case_call(bc, o->graph, &call, err)) {
    rep->load_err = err;
    return -1;
  }
  if (backends_check_request(o->backends, &call, err)) {
    rep->load_err = err;
    decode_call_release(&call);
    return -1;
  }
  struct run_opts ro;
  memset(&ro, 0, sizeof ro);
  snprintf(bc->bundle_dir, sizeof bc->bundle_dir, "%s/cases/%03d", o->out_dir, i);
  ro.out_dir = bc->bundle_dir;
  ro.timing = env->timing;
  ro.timing_enabled = 1;
  ro.counters = o->counters;
  ro.argc = o->argc;
  ro.argv = o->argv;
  ro.progress = quiet_progress;
  struct run_result res;
  if (runner_execute(&call, o->backends, &ro, &res, err)) {  /* out of host memory for its inputs, say: the others go on */
    rep->run_err = err;
    decode_call_release(&call);
    return -1;
  }
  bc->ran = 1;
  bc->level = res.level;
  snprintf(bc->terminal, sizeof bc->terminal, "%s", res.terminal);
  bc->launch_code = res.launch_code;
  bc->median_us = res.median_us;
  bc->io_bytes = res.io_bytes;
  bc->kv_bytes = res.kv_bytes;
  bc->visible_kv_bytes = res.visible_kv_bytes;
  bc->splits = res.splits;
  memcpy(bc->tiles, res.tiles, sizeof bc->tiles);
  if (bench_case_read_bundle(bc, res.median_us > 0, berr)) rep->bundle_err = berr;
  bc->graph = call.graph;
  const char *skip = !o->roofline ? "--no-roofline" : !env->dev.available ? env->dev.reason : NULL;
  if (bc->samples > 0) rep->read_failed = same_bytes_read(m, i, &env->timing, skip);
  bench_case_rates(bc, &env->roof);
  run_result_release(&res);
  decode_call_release(&call);
  return 0;
}

void bench_execute(struct bench_matrix *m, const struct bench_opts *o, const struct bench_env *env, bench_case_fn *on_case,
                   void *ctx, struct bench_outcome *out) {
  memset(out, 0, sizeof *out);
  struct bench_tally *n = &out->tally;
  for (int i = 0; i < m->n; i++) {
    struct dkb_err err, berr;
    dkb_err_clear(&err);
    dkb_err_clear(&berr);
    struct bench_case_report rep = {.index = i};
    const int ran = execute_case(m, i, o, env, &rep, &err, &berr) == 0;
    on_case(ctx, m, &rep);
    if (rep.load_err) break;
    if (!ran) continue;
    const struct bench_case *bc = &m->cases[i];
    n->counted += bc->dram_measured;
    n->l2served += bench_l2_served(m, bc);
    n->timed += bc->samples > 0;
    n->clocked += bc->samples > 0 && bc->clocks_reported;
    n->slowed += dkb_nvml_reasons_slow(bc->clock_reasons);  /* as bench_clock_note says it */
  }
  /* at most 4 targets and 1 auto check per case (another backend's case: its "median <= B's") */
  out->v = DKB_CALLOC((size_t)(5 * m->n + 1), sizeof *out->v);
  out->nv = bench_judge(m, &env->roof, out->v, 5 * m->n + 1);
}

void bench_outcome_release(struct bench_outcome *out) {
  free(out->v);
  memset(out, 0, sizeof *out);
}

