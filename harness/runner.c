/* runner.c - `dkb run` as a short driver over named stages (see runner.h). Each stage adds its section
 * to the bundle; a stage that cannot run records why in the bundle's status and the ladder decides the
 * level. A stage returns STAGE_NEXT, STAGE_GRADE (stop running: grade and write what is there) or -1
 * (an error of dkb's or the environment's: no bundle is written). Whichever backend was selected, dkb's
 * own or a plugin's, goes through the same stages: the backend ABI (include/dkb/backend.h) is the only
 * way the runner reaches a kernel. */
#include "harness/runner.h"
#include "harness/backends.h"
#include "harness/builtin.h"
#include "harness/counters.h"
#include "harness/decode_dump.h"
#include "harness/decode_ref.h"
#include "harness/device.h"
#include "harness/device_call.h"
#include "harness/gpucheck.h"
#include "harness/inputs.h"
#include "harness/nvml.h"
#include "harness/plan.h"
#include "harness/run_evidence.h"
#include "harness/trace.h"
#include "evidence/bundle.h"
#include "kernels/decode.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"
#include "lib/sha256.h"
#include "oracles/compare.h"
#include "oracles/dtype.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

enum { STAGE_NEXT = 0, STAGE_GRADE = 1 };

/* Everything one run holds, stage to stage. */
struct run {
  struct decode_call *c;
  const struct run_opts *o;
  struct run_result *res;
  struct backend_set *set;
  json_t *bundle;
  struct dkb_device_info dev;
  int gpu;
  long long cc;
  struct inputs_footprint fp;         /* what the call will hold, from the fixture alone */
  struct decode_inputs in;
  struct decode_plan ref;              /* dkb's planner over the call: tile classes and the ledgers */
  struct backend_admission *ba;
  const struct backend_info *sel;      /* the selected backend, NULL when none */
  struct dkb_plan plan;                /* its plan */
  void *state;                         /* its per-call state */
  char call_sha[65];
  size_t orows;
  double *o_ref, *lse_ref;             /* the float64 oracle */
  struct device_call d;
  struct dkb_trace tr;
  struct dkb_timing tm;
  struct dkb_nvml nvml;
  void *o_gpu;                         /* O and LSE as the backend wrote them (the repeat check's reference) */
  float *lse_gpu;
  void *k_after, *v_after;
  json_t *meas;                        /* /measurement (borrowed from the bundle) */
  int launch_code;                     /* launch_failed: the exit code its error calls for */
  int launch_rc;                       /* what the backend's first failed launch returned (0: none failed) */
  char launch_why[512];                /* and what its last_error said then */
};

static void progress(const struct run *r, const char *stage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void progress(const struct run *r, const char *stage, const char *fmt, ...) {
  if (!r->o->progress) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  r->o->progress(r->o->progress_ctx, stage, buf);
}

void run_result_release(struct run_result *r) {
  json_decref(r->bundle);
  memset(r, 0, sizeof *r);
}

/* The launch every pass makes: the selected backend's, on the stream the pass gives. A failure is kept
 * with the backend's own words, read at once (last_error may be per thread, or overwritten by the next
 * call): the pass that called it sees only a status, which need not be a cudaError_t. */
static int launch_selected(void *arg, void *stream) {
  struct run *r = arg;
  int rc = r->sel->t->launch(r->state, &r->d.call, r->d.ws, stream);
  if (rc && !r->launch_rc) {
    const char *why = r->sel->t->last_error(r->state);
    r->launch_rc = rc;
    snprintf(r->launch_why, sizeof r->launch_why, "%s", why ? why : "");
  }
  return rc;
}

/* A failed launch, poison or download: the bundle says launch_failed with the CUDA error. */
static int launch_failed(struct run *r, const char *reason, const struct dkb_err *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int launch_failed(struct run *r, const char *reason, const struct dkb_err *e, const char *fmt, ...) {
  char detail[768] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  r->launch_code = e->code;
  bundle_set_status(r->bundle, "launch_failed", reason, "%s%s", detail, e->msg);
  return STAGE_GRADE;
}

/* A backend's own error (plan or setup returned one), with its last_error's words: the thing under test
 * failed, or for a CUDA error the machine may have (backends_failure). */
static int backend_failed(struct run *r, const char *reason, const char *what, int rc, void *state) {
  char msg[768];
  r->launch_code = backends_failure(r->sel->t->name, what, rc, r->sel->t->last_error(state), msg, sizeof msg);
  bundle_set_status(r->bundle, "launch_failed", reason, "%s", msg);
  return STAGE_GRADE;
}

/* The backend's launch failed (launch_selected kept what it returned and said): the bundle says so in the
 * backend's words, with the exit code backends_failure gives, never as a CUDA or CUPTI failure of dkb's. */
static int launch_refused(struct run *r, const char *when) {
  char what[1200], msg[2048];
  snprintf(what, sizeof what, "launch %s", when);
  r->launch_code = backends_failure(r->sel->t->name, what, r->launch_rc, r->launch_why, msg, sizeof msg);
  bundle_set_status(r->bundle, "launch_failed", "launch_failed", "%s", msg);
  return STAGE_GRADE;
}

/* ---- stages ------------------------------------------------------------------------------------ */

static int stage_begin(struct run *r, struct dkb_err *err) {
  char fixture_sha[65];
  /* a call the machine cannot hold is refused before anything is allocated */
  inputs_footprint(r->c, &r->fp);
  if (inputs_check_host_memory(r->c, &r->fp, err)) return -1;
  if (dkb_mkdirs(r->o->out_dir, err) || dkb_sha256_file(r->c->file, fixture_sha, err)) return -1;
  r->bundle = bundle_new(r->o->argc, r->o->argv, r->c->file, r->c->name, fixture_sha);
  /* Device first: without one, everything below still runs on the host and is recorded. */
  struct dkb_err e2;
  dkb_err_clear(&e2);
  dkb_device_probe(0, &r->dev, &e2);
  r->gpu = r->dev.available;
  r->cc = r->gpu ? r->dev.dev.cc_major * 10 + r->dev.dev.cc_minor : DK_ABSENT;
  progress(r, "device", "%s", r->gpu ? r->dev.dev.name : r->dev.reason);
  return STAGE_NEXT;
}

static int stage_inputs(struct run *r, struct dkb_err *err) {
  const struct decode_call *c = r->c;
  const int rows = (c->H_q / c->H_kv) * c->C;
  const int tile = dkb_decode_tile_tokens(c->dtype, c->dk, c->dv, rows);
  if (inputs_build(c, tile > 0 ? tile : 64, &r->in, err)) return -1;
  progress(r, "inputs", "%zu MB of K/V, %lld poisoned elements", (r->in.k_bytes + r->in.v_bytes) >> 20,
           (long long)r->in.poisoned_elems);
  r->set->ctx.c = c;
  r->set->ctx.in = &r->in;
  r->set->ctx.gpu = r->gpu;
  return STAGE_NEXT;
}

/* Admission of every backend, then the selected one's plan (level 4). */
static int stage_dispatch(struct run *r, struct dkb_err *err) {
  const struct decode_call *c = r->c;
  struct run_result *res = r->res;
  const int sms = r->gpu ? r->dev.dev.sm_count : 0;
  r->sel = backends_admit(r->set, c, r->cc, sms, r->ba);
  /* dkb's planner over the call gives the tile classes and the visible bytes, whichever backend runs */
  const struct plan_opts po =
      builtin_plan_opts(c, sms, r->gpu && r->sel && !strcmp(r->sel->t->name, "dkb_split_kv") ? r->dev.dev.ordinal : -1);
  if (plan_build(c, &r->in, &po, &r->ref, err)) return -1;
  memcpy(res->tiles, r->ref.tiles, sizeof res->tiles);
  /* what people read as "split": the policy's S of dkb's plan, else the selected backend's own (below) */
  res->splits = r->ref.splits;
  res->direct = r->ref.direct;
  res->kv_bytes = (double)decode_call_kv_bytes(c);
  res->visible_kv_bytes = (double)plan_visible_kv_bytes(c, &r->ref);
  res->io_bytes = res->kv_bytes + (double)decode_call_qo_bytes(c);
  json_t *key = decode_call_key(c);
  int rc = cjson_digest(key, r->call_sha, err);
  json_decref(key);
  if (rc) return -1;
  if (r->sel) {
    snprintf(res->selected, sizeof res->selected, "%s", r->sel->t->name);
    struct dkb_call call;
    backends_call(c, &r->in, r->cc < 0 ? -1 : (int)r->cc, sms, &call);
    memset(&r->plan, 0, sizeof r->plan);
    r->plan.size = sizeof r->plan;
    int prc = r->sel->t->plan(r->sel->t, &call, &r->plan, &r->state);
    if (prc) {
      r->state = NULL;
      if (run_evidence_dispatch(r->bundle, r->o->out_dir, c, r->call_sha, r->ba, r->sel, NULL, err)) return -1;
      return backend_failed(r, "backend_plan_failed", "plan", prc, NULL);
    }
    char why[256];
    if (run_evidence_plan_check(&r->plan, c->graph || r->o->timing.graph, why, sizeof why)) {
      if (run_evidence_dispatch(r->bundle, r->o->out_dir, c, r->call_sha, r->ba, r->sel, NULL, err)) return -1;
      r->launch_code = DKB_FAIL;
      bundle_set_status(r->bundle, "launch_failed", "backend_plan_invalid", "backend %s: %s", r->sel->t->name, why);
      return STAGE_GRADE;
    }
    if (r->sel->lib) {
      /* direct: one split and no merge kernel declared; a backend's merge may run at one split (FlashInfer's
       * graph mode by design); an unreported split is never direct */
      int merge = 0;
      for (int k = 0; k < r->plan.n_kernels; k++) merge |= r->plan.kernels[k].role == DKB_KERNEL_COMBINE;
      res->splits = r->plan.splits;
      res->direct = r->plan.splits == 1 && !merge;
    }
  }
  if (run_evidence_dispatch(r->bundle, r->o->out_dir, c, r->call_sha, r->ba, r->sel, r->sel ? &r->plan : NULL, err))
    return -1;
  if (r->gpu && r->sel) {  /* the device must hold the call and the plan's workspaces: refuse before the oracle runs */
    long long need = r->fp.device_bytes;
    for (int i = 0; i < r->plan.n_workspaces; i++) need += (long long)r->plan.ws[i].bytes;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && (size_t)need > free_b)
      return dkb_err_set(err, DKB_ENV, c->file, NULL,
                         "the call needs %lld bytes of device memory, %zu available (cudaMemGetInfo on %s)", need, free_b,
                         r->dev.dev.name);
    cudaGetLastError();
  }
  char split[16];
  if (r->sel && r->plan.splits == DKB_SPLITS_UNREPORTED) snprintf(split, sizeof split, "unreported");
  else snprintf(split, sizeof split, "%d", r->sel ? (int)r->plan.splits : 0);
  progress(r, "plan", "%s: split %s, %d work items; tiles SKIP %lld FULL %lld PARTIAL %lld",
           r->sel ? r->sel->t->name : "no backend", split, r->sel ? r->plan.work_items : 0,
           (long long)r->ref.tiles[0], (long long)r->ref.tiles[1], (long long)r->ref.tiles[2]);
  if (!r->sel) {
    const char *terminal = r->ba->a.outcome == ADM_FORCED_ERROR ? "backend_rejected" : "no_eligible_backend";
    struct dkb_buf none;
    dkb_buf_init(&none);
    admission_why_none(&r->ba->a, &none);
    bundle_set_status(r->bundle, terminal, terminal, "%s", none.p);
    dkb_buf_release(&none);
  }
  return STAGE_NEXT;
}

static int stage_oracle(struct run *r, struct dkb_err *err) {
  (void)err;
  const struct decode_call *c = r->c;
  r->orows = (size_t)c->B * c->C * c->H_q;
  r->o_ref = DKB_MALLOC(r->orows * (size_t)c->dv * sizeof *r->o_ref);
  r->lse_ref = DKB_MALLOC(r->orows * sizeof *r->lse_ref);
  decode_ref_compute(c, &r->in, r->o_ref, r->lse_ref);
  progress(r, "oracle", "float64 reference of %zu rows", r->orows);
  if (!r->gpu) {
    const char *terminal = r->dev.device_count == 0 ? "no_gpu" : "cuda_runtime_unavailable";
    bundle_set_status(r->bundle, terminal, terminal, "%s", r->dev.reason);
    return STAGE_GRADE;
  }
  return r->sel ? STAGE_NEXT : STAGE_GRADE;
}

/* Device buffers, the backend's setup, and the traced call in its NVTX range (level 5). */
static int stage_capture(struct run *r, struct dkb_err *err) {
  struct dkb_err e2;
  struct dkb_call call;
  backends_call(r->c, &r->in, (int)r->cc, r->dev.dev.sm_count, &call);
  dkb_err_clear(&e2);
  if (device_call_setup(&call, &r->in, &r->d, &e2) || device_call_workspaces(&r->d, &r->plan, &e2))
    return launch_failed(r, "device_setup_failed", &e2, NULL);
  int src = r->sel->t->setup(r->state, &r->d.call, r->d.ws, r->d.stream);
  if (src) return backend_failed(r, "backend_setup_failed", "setup", src, r->state);
  char range[128];
  snprintf(range, sizeof range, "dkb/call/%s", r->call_sha);
  dkb_err_clear(&e2);
  if (device_call_poison(&r->d, &e2)) return launch_failed(r, "poison_failed", &e2, NULL);
  int traced = dkb_trace_capture(0, range, 1, launch_selected, r, NULL, &r->tr, &e2) == 0;
  if (!traced && r->launch_rc) {  /* the backend's launch failed, not CUPTI: nothing to retry untraced */
    if (r->tr.nkernels && run_evidence_execution(r->bundle, r->o->out_dir, &r->tr, range, r->res->kernels,
                                                 sizeof r->res->kernels, err))
      return -1;
    return launch_refused(r, "of the traced call");
  }
  if (!traced && r->tr.nkernels == 0) {
    /* CUPTI may be refused (privileges, another profiler): still check correctness untraced */
    char why[1024];
    snprintf(why, sizeof why, "%s", e2.msg);
    dkb_err_clear(&e2);
    int lrc = launch_selected(r, NULL);
    if (r->launch_rc) {
      char when[1100];
      snprintf(when, sizeof when, "untraced after CUPTI refused (%s)", why);
      return launch_refused(r, when);
    }
    if (!lrc) lrc = (int)cudaDeviceSynchronize();
    if (lrc) {
      dkb_gpucheck_cuda(&e2, lrc, "the backend's launch or cudaDeviceSynchronize()", __FILE__, __LINE__);
      return launch_failed(r, "launch_failed", &e2, "untraced after CUPTI refused (%s): ", why);
    }
    bundle_set_status(r->bundle, "profiler_unavailable", "profiler_unavailable", "%s", why);
  } else {
    if (run_evidence_execution(r->bundle, r->o->out_dir, &r->tr, range, r->res->kernels, sizeof r->res->kernels, err))
      return -1;
    if (!traced) {
      r->launch_code = e2.code;
      bundle_set_status(r->bundle, "launch_failed", "launch_failed", "%s", e2.msg);
    }
  }
  return STAGE_NEXT;
}

/* Correctness of the traced call against the float64 oracle, in dkb's conventions (level 6). */
static int stage_correctness(struct run *r, struct dkb_err *err) {
  (void)err;
  const struct decode_call *c = r->c;
  struct dkb_err e2;
  dkb_err_clear(&e2);
  r->o_gpu = DKB_MALLOC(r->d.o_bytes);
  r->lse_gpu = c->return_lse ? DKB_MALLOC(r->d.lse_bytes) : NULL;
  if (c->phase == PHASE_APPEND) { r->k_after = DKB_MALLOC(r->in.k_bytes); r->v_after = DKB_MALLOC(r->in.v_bytes); }
  if (device_call_download(&r->d, r->o_gpu, r->lse_gpu, r->k_after, r->v_after, &e2))
    return launch_failed(r, "launch_failed", &e2, NULL);
  struct run_check chk = {c, &r->in, &r->plan, r->o_ref, r->lse_ref, r->o_gpu, r->lse_gpu, r->k_after, r->v_after};
  struct run_check_result cr;
  json_t *corr = run_evidence_correctness(&chk, &cr);
  r->meas = json_pack("{s:o}", "correctness", corr);
  json_object_set_new(r->bundle, "measurement", r->meas);
  struct run_result *res = r->res;
  res->correctness = cr.passed;
  res->out_max_abs = cr.out.max_abs;
  res->out_max_ratio = cr.out.max_ratio;
  res->out_violations = (long long)cr.out.violations;
  res->lse_max_abs = cr.lse.max_abs;
  if (!cr.passed) {
    char why[512];
    run_check_failure_text(&cr, c->atol, c->rtol, c->lse_atol, c->lse_rtol, why, sizeof why);
    progress(r, "correctness", "FAILED: %s", why);
    bundle_set_status(r->bundle, "correctness_failed", "correctness_failed", "%s", why);
    return STAGE_GRADE;
  }
  if (cr.has_lse) progress(r, "correctness", "passed: max |err| %.3g (O), %.3g (LSE)", cr.out.max_abs, cr.lse.max_abs);
  else progress(r, "correctness", "passed: max |err| %.3g (O)", cr.out.max_abs);
  return STAGE_NEXT;
}

/* The timing pass without tracing, then the repeat check (level 6). */
static int stage_timing(struct run *r, struct dkb_err *err) {
  if (!r->o->timing_enabled) return STAGE_NEXT;
  if (r->plan.launch_flags & DKB_LAUNCH_SYNCS) {
    bundle_set_status(r->bundle, "timing_unavailable", "timing_unavailable",
                      "backend %s synchronizes inside its launch: it cannot be timed behind a held stream",
                      r->sel->t->name);
    return STAGE_GRADE;
  }
  struct dkb_err e2;
  json_t *before = NULL, *after = NULL;
  struct dkb_nvml_sample ns;
  int have_nvml = dkb_nvml_open(&r->nvml, &e2) == 0;
  if (have_nvml && dkb_nvml_sample(&r->nvml, r->dev.dev.pci_bus_id, &ns, &e2) == 0) before = dkb_nvml_sample_json(&ns);
  struct dkb_timing_opts to = r->o->timing;
  to.graph = to.graph || r->c->graph;
  dkb_err_clear(&e2);
  int trc = dkb_timing_run(0, &to, launch_selected, r, NULL, &r->tm, &e2);
  if (have_nvml && dkb_nvml_sample(&r->nvml, r->dev.dev.pci_bus_id, &ns, &e2) == 0) after = dkb_nvml_sample_json(&ns);
  if (trc) {
    json_decref(before);
    json_decref(after);
    return r->launch_rc ? launch_refused(r, "in the timing pass") : launch_failed(r, "timing_failed", &e2, NULL);
  }
  json_t *timing = run_evidence_timing(&r->tm, &to, before, after, r->nvml.lib != NULL, err);
  if (!timing) return -1;
  json_object_set_new(r->meas, "timing", timing);
  /* The timed calls must leave the kernels able to reproduce the checked output: one more call on
   * poisoned outputs, compared bit for bit (state kept between calls, such as the fused combine's
   * arrival counters, or a merge in a varying order would show here); a backend that declares a
   * nondeterministic reduction order is held to the oracle's tolerance instead. */
  void *o_again = DKB_MALLOC(r->d.o_bytes);
  float *lse_again = r->lse_gpu ? DKB_MALLOC(r->d.lse_bytes) : NULL;
  dkb_err_clear(&e2);
  int lrc = device_call_poison(&r->d, &e2) ? -1 : launch_selected(r, r->d.stream);
  int drc = lrc ? -1 : device_call_download(&r->d, o_again, lse_again, NULL, NULL, &e2);
  json_t *rep = NULL;
  char diff[256] = "";
  int same = 0, held = 0;
  if (!lrc && !drc) {
    struct run_check chk = {r->c, &r->in, &r->plan, r->o_ref, r->lse_ref, r->o_gpu, r->lse_gpu, r->k_after, r->v_after};
    rep = run_evidence_repeat_check(&chk, o_again, lse_again, r->d.o_bytes, r->lse_gpu ? r->d.lse_bytes : 0, r->tm.n,
                                    &same, &held, diff, sizeof diff);
  }
  free(o_again);
  free(lse_again);
  if (r->launch_rc || lrc || drc) {
    json_decref(rep);
    return r->launch_rc ? launch_refused(r, "of the call after the timing pass")
                        : launch_failed(r, "launch_failed", &e2, "the call after the timing pass: ");
  }
  json_object_set_new(timing, "repeat_check", rep);
  progress(r, "repeat", "%s%s", same ? "the call after the timed samples reproduces the checked output bitwise"
                                : held ? "differs from the checked output within the oracle's tolerance (nondeterministic backend): "
                                       : "DIFFERS from the checked output: ", diff);
  if (!held) {
    bundle_set_status(r->bundle, "output_not_reproduced", "timing_output_not_reproduced",
                      "after %zu timed samples, a call on poisoned outputs did not reproduce the checked output%s: %s", r->tm.n,
                      (r->plan.launch_flags & DKB_LAUNCH_NONDETERMINISTIC) ? " within the oracle's tolerance" : "", diff);
    return STAGE_GRADE;
  }
  r->res->median_us = r->tm.stats.median;
  progress(r, "timing", "%zu samples, median %.2f us, rel stdev %.2f%%", r->tm.n, r->tm.stats.median, 100 * r->tm.stats.rel_stdev);
  return STAGE_NEXT;
}

/* The CUPTI counters in their own pass, never the timed one. */
static int stage_counters(struct run *r, struct dkb_err *err) {
  (void)err;
  if (!r->o->counters) return STAGE_NEXT;
  struct dkb_counters cn;
  memset(&cn, 0, sizeof cn);
  struct dkb_err e2;
  dkb_err_clear(&e2);
  /* The counted call starts from the L2 the timed calls started from: flushed (--cold) or as the
   * previous call left it. */
  struct dkb_l2_flush fl = {0};
  const int cold = r->o->timing_enabled && r->o->timing.cold;
  if (!cold || dkb_l2_flush_init(0, &fl, &e2) == 0)
    /* its own short range name: the NVTX range name (73 characters) crashes the counter decoder */
    dkb_counters_collect(0, "dkb/counters", launch_selected, r, NULL, cold ? dkb_l2_flush_launch : NULL, &fl, &cn, &e2);
  else
    dkb_counters_unavailable(&cn, "dkb/counters", &e2);
  dkb_l2_flush_release(&fl);
  run_evidence_counters(r->meas, &cn, cold);
  return r->launch_rc ? launch_refused(r, "in the counters pass") : STAGE_NEXT;
}

/* The dump, the ledgers, what is loaded (level 3), and the graded bundle, written atomically. */
static int stage_bundle(struct run *r, struct dkb_err *err) {
  const struct decode_call *c = r->c;
  struct run_result *res = r->res;
  /* The dump: inputs and oracle always, GPU outputs when they exist; --dump-on-fail only on failure. */
  if (r->o->dump_dir && (!r->o->dump_on_fail || res->correctness == 0)) {
    const int have = res->correctness >= 0;
    struct decode_outputs dout = {r->o_ref, r->lse_ref, have ? r->o_gpu : NULL, have ? r->lse_gpu : NULL,
                                  have ? r->k_after : NULL, have ? r->v_after : NULL};
    json_t *index = NULL, *iref = NULL;
    if (decode_dump_write(r->o->dump_dir, c, &r->in, &dout, &index, err)) return -1;
    int arc = bundle_add_json_artifact(r->bundle, r->o->out_dir, "dump-index", index, &iref, err);
    json_decref(index);
    if (arc) return -1;
    json_object_set_new(r->bundle, "dump", json_pack("{s:s,s:o}", "dir", r->o->dump_dir, "index", iref));
    snprintf(res->dump_dir, sizeof res->dump_dir, "%s", r->o->dump_dir);
    progress(r, "dump", "%s", r->o->dump_dir);
  }
  /* Logical byte ledgers beside any counters (0x03F): never presented as measured traffic. */
  const long long ws = r->sel ? run_evidence_workspace_bytes(&r->plan) : 0;
  json_object_set_new(r->bundle, "ledgers",
                      json_pack("{s:I,s:I,s:I,s:I,s:s}", "unique_kv_bytes", (json_int_t)res->kv_bytes, "visible_kv_bytes",
                                (json_int_t)res->visible_kv_bytes, "q_o_bytes", (json_int_t)decode_call_qo_bytes(c),
                                "workspace_round_trip_bytes", (json_int_t)(2 * ws),
                                "kind", "logical ledgers (article 0x03F), not measured DRAM traffic"));
  if (run_evidence_source(r->bundle, r->sel, err) ||
      run_evidence_loaded(r->bundle, r->o->out_dir, &r->dev, r->sel, r->state, err))
    return -1;
  struct ladder_result lr;
  ladder_result_init(&lr);
  int rc = bundle_write(r->bundle, r->o->out_dir, &lr, err);
  if (!rc) {
    res->level = lr.computed;
    snprintf(res->terminal, sizeof res->terminal, "%s", lr.terminal);
  }
  ladder_result_release(&lr);
  if (rc) return -1;
  res->gpu = r->gpu;
  res->launch_code = !strcmp(res->terminal, "launch_failed") ? r->launch_code : DKB_OK;
  res->bundle = json_incref(r->bundle);
  return STAGE_NEXT;
}

typedef int (*stage_fn)(struct run *r, struct dkb_err *err);

int runner_execute(struct decode_call *c, struct backend_set *set, const struct run_opts *o, struct run_result *res,
                   struct dkb_err *err) {
  static const stage_fn STAGES[] = {stage_begin, stage_inputs, stage_dispatch, stage_oracle, stage_capture,
                                    stage_correctness, stage_timing, stage_counters};
  memset(res, 0, sizeof *res);
  res->correctness = -1;
  struct run *r = DKB_CALLOC(1, sizeof *r);
  r->c = c;
  r->o = o;
  r->res = res;
  r->set = set;
  r->ba = DKB_CALLOC(1, sizeof *r->ba);
  r->launch_code = DKB_FAIL;
  int rc = STAGE_NEXT;
  for (size_t i = 0; i < sizeof STAGES / sizeof STAGES[0] && rc == STAGE_NEXT; i++) rc = STAGES[i](r, err);
  if (rc >= 0) rc = stage_bundle(r, err);
  json_decref(r->bundle);
  dkb_timing_release(&r->tm);
  dkb_trace_release(&r->tr);
  if (r->nvml.lib) dkb_nvml_close(&r->nvml);
  device_call_release(&r->d);
  if (r->sel && r->state) r->sel->t->release(r->state);
  plan_release(&r->ref);
  inputs_release(&r->in);
  set->ctx.c = NULL;
  set->ctx.in = NULL;
  free(r->ba);
  free(r->o_ref);
  free(r->lse_ref);
  free(r->o_gpu);
  free(r->lse_gpu);
  free(r->k_after);
  free(r->v_after);
  free(r);
  return rc < 0 ? -1 : 0;
}
