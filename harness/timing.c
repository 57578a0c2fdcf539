/* timing.c - the timed pass and its stopping rule (see timing.h). */
#include "harness/timing.h"
#include "harness/device.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

/* nvbench stdrel constants: the noise history is a ring of the last 512 values; the "settled" check
 * needs more than 64 of them, runs every 16th sample and accepts a 5 % relative deviation. A noise
 * value needs at least 5 samples (nvbench's min_samples_for_noise_estimate). */
enum { NOISE_RING = 512, NOISE_MIN_HISTORY = 64, NOISE_CHECK_EVERY = 16, NOISE_MIN_SAMPLES = 5 };
static const double NOISE_SETTLED = 0.05;

void dkb_timing_opts_default(struct dkb_timing_opts *o) {
  memset(o, 0, sizeof *o);
  o->warmup = 3;
  o->min_samples = DKB_TIMING_MIN_SAMPLES;
  o->max_samples = 100000;
  o->max_noise = 0.005;
  o->min_time_s = 0.5;
  o->max_time_s = 15.0;
}

int dkb_timing_opts_check(const struct dkb_timing_opts *o, struct dkb_err *err) {
  if (o->warmup < 0) return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--warmup must be >= 0 (got %d)", o->warmup);
  if (o->min_samples < DKB_TIMING_MIN_SAMPLES)
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--min-samples must be >= %d (got %zu)", DKB_TIMING_MIN_SAMPLES,
                       o->min_samples);
  if (o->max_samples < o->min_samples)
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--max-samples must be >= --min-samples (got %zu < %zu)",
                       o->max_samples, o->min_samples);
  if (!(o->max_noise >= 0) || !isfinite(o->max_noise))
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--max-noise must be a percentage >= 0 (got %g)",
                       o->max_noise * 100);
  if (!(o->min_time_s >= 0) || !isfinite(o->min_time_s))
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--min-time must be >= 0 seconds (got %g)", o->min_time_s);
  if (!(o->max_time_s > 0) || !isfinite(o->max_time_s))
    return dkb_err_set(err, DKB_USAGE, NULL, NULL, "--max-time must be > 0 seconds (got %g)", o->max_time_s);
  return 0;
}

const char *dkb_timing_stop_name(enum dkb_timing_stop s) {
  switch (s) {
  case DKB_STOP_NOISE_REACHED: return "noise_reached";
  case DKB_STOP_NOISE_STABLE: return "noise_stable";
  case DKB_STOP_MAX_TIME: return "max_time";
  case DKB_STOP_MAX_SAMPLES: return "max_samples";
  default: return "none";
  }
}

void dkb_stop_rule_init(struct dkb_stop_rule *r, const struct dkb_timing_opts *o) {
  memset(r, 0, sizeof *r);
  r->opts = o;
}

void dkb_stop_rule_release(struct dkb_stop_rule *r) {
  free(r->noise);
  memset(r, 0, sizeof *r);
}

double dkb_stop_rule_noise(const struct dkb_stop_rule *r) {
  if (r->n < 2 || r->mean == 0) return 0.0;
  return sqrt(r->m2 / (double)(r->n - 1)) / r->mean;
}

/* nvbench stdrel is_finished(), given that min_samples are in. */
static enum dkb_timing_stop criterion(const struct dkb_stop_rule *r) {
  const struct dkb_timing_opts *o = r->opts;
  if (r->sum_us * 1e-6 <= o->min_time_s || r->nnoise == 0) return DKB_STOP_NONE;
  double cur = r->noise[r->nnoise - 1];
  if (cur < o->max_noise) return DKB_STOP_NOISE_REACHED;
  size_t m = r->nnoise < NOISE_RING ? r->nnoise : NOISE_RING;
  if (m > NOISE_MIN_HISTORY && r->n % NOISE_CHECK_EVERY == 0 && cur > 0) {
    double ss = 0;
    for (size_t i = r->nnoise - m; i < r->nnoise; i++) ss += (r->noise[i] - cur) * (r->noise[i] - cur);
    if (sqrt(ss / (double)(m - 1)) / cur < NOISE_SETTLED) return DKB_STOP_NOISE_STABLE;
  }
  return DKB_STOP_NONE;
}

enum dkb_timing_stop dkb_stop_rule_add(struct dkb_stop_rule *r, double sample_us, double elapsed_s) {
  /* Welford: the rule needs the noise after every sample; recomputing it from scratch each time
   * would be quadratic. The summary itself comes from dkb_stats_compute. */
  r->n++;
  r->sum_us += sample_us;
  double d = sample_us - r->mean;
  r->mean += d / (double)r->n;
  r->m2 += d * (sample_us - r->mean);
  double noise = dkb_stop_rule_noise(r);
  if (r->n >= NOISE_MIN_SAMPLES && isfinite(noise)) {
    if (r->nnoise == r->cap) {
      size_t cap = r->cap ? 2 * r->cap : 256;
      r->noise = DKB_REALLOC(r->noise, cap * sizeof *r->noise);
      r->cap = cap;
    }
    r->noise[r->nnoise++] = noise;
  }
  if (r->n >= r->opts->min_samples) {
    enum dkb_timing_stop s = criterion(r);
    if (s != DKB_STOP_NONE) return s;
  }
  if (elapsed_s > r->opts->max_time_s) return DKB_STOP_MAX_TIME;
  if (r->n >= r->opts->max_samples) return DKB_STOP_MAX_SAMPLES;
  return DKB_STOP_NONE;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void dkb_timing_summarize(struct dkb_timing *t) {
  dkb_stats_compute(t->samples_us, t->n, &t->stats);
  t->final_noise = t->stats.rel_stdev;
}

void dkb_timing_release(struct dkb_timing *t) {
  free(t->samples_us);
  memset(t, 0, sizeof *t);
}

int dkb_l2_flush_init(int device, struct dkb_l2_flush *f, struct dkb_err *err) {
  int l2 = 0;
  memset(f, 0, sizeof *f);
  DKB_CUDA_CHECK(err, cudaSetDevice(device));
  DKB_CUDA_CHECK(err, cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  /* Twice L2 so no line of the previous sample's data survives the sweep. */
  const long long bytes = 2LL * (l2 > 0 ? l2 : 1 << 20);
  DKB_CUDA_CHECK(err, cudaMalloc(&f->buf, (size_t)bytes));
  f->bytes = bytes;
  DKB_CUDA_CHECK(err, cudaMemset(f->buf, 0, (size_t)bytes));  /* zero: the read kernel's sink never fires */
  /* The zeroing left up to L2's worth of the buffer dirty in L2: two reads of it write most of those
   * lines back now, not inside the first timed (or counted) call. */
  for (int i = 0; i < 2; i++) DKB_CUDA_CHECK(err, dkb_l2_flush_launch(f, NULL));
  DKB_CUDA_CHECK(err, cudaDeviceSynchronize());
  return 0;
cleanup:
  dkb_l2_flush_release(f);
  return -1;
}

int dkb_l2_flush_launch(void *f, void *stream) {
  const struct dkb_l2_flush *fl = f;
  return dkb_l2_flush(fl->buf, (size_t)fl->bytes, stream);
}

void dkb_l2_flush_release(struct dkb_l2_flush *f) {
  if (f->buf) cudaFree(f->buf);
  memset(f, 0, sizeof *f);
}

int dkb_timing_run(int device, const struct dkb_timing_opts *o, dkb_launch_fn launch, void *arg, void *stream,
                   struct dkb_timing *out, struct dkb_err *err) {
  int rc = -1, capturing = 0;
  cudaStream_t s = (cudaStream_t)stream, own = NULL;
  cudaEvent_t start = NULL, stop = NULL;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  struct dkb_l2_flush flush = {0};
  volatile int *hold = NULL;  /* host-mapped: [0] releases the held stream, [1] says the hold gave up */
  int *hold_dev = NULL;
  struct dkb_stop_rule rule;
  size_t cap = 0;
  memset(out, 0, sizeof *out);
  out->opts = *o;
  dkb_stop_rule_init(&rule, &out->opts);
  if (dkb_timing_opts_check(o, err) || dkb_device_require(device, err)) goto cleanup;
  DKB_CUDA_CHECK(err, cudaSetDevice(device));
  if (!s) {
    DKB_CUDA_CHECK(err, cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    s = own;
  }
  DKB_CUDA_CHECK(err, cudaEventCreate(&start));
  DKB_CUDA_CHECK(err, cudaEventCreate(&stop));
  if (o->cold) {
    if (dkb_l2_flush_init(device, &flush, err)) goto cleanup;
    out->flush_bytes = flush.bytes;
  }
  DKB_CUDA_CHECK(err, cudaHostAlloc((void **)&hold, 2 * sizeof(int), cudaHostAllocMapped));
  DKB_CUDA_CHECK(err, cudaHostGetDevicePointer((void **)&hold_dev, (void *)hold, 0));
  if (o->graph) {
    DKB_CUDA_CHECK(err, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    capturing = 1;
    DKB_CUDA_CHECK(err, launch(arg, s));
    capturing = 0;
    DKB_CUDA_CHECK(err, cudaStreamEndCapture(s, &graph));
    DKB_CUDA_CHECK(err, cudaGraphInstantiate(&exec, graph, 0));
    DKB_CUDA_CHECK(err, cudaGraphUpload(exec, s));
  }
  for (int i = 0; i < o->warmup; i++) {
    if (exec) DKB_CUDA_CHECK(err, cudaGraphLaunch(exec, s));
    else DKB_CUDA_CHECK(err, launch(arg, s));
  }
  DKB_CUDA_CHECK(err, cudaStreamSynchronize(s));

  double t0 = now_s();
  for (;;) {
    if (flush.buf) DKB_CUDA_CHECK(err, dkb_l2_flush_launch(&flush, s));
    /* Hold the stream while the events and the call are enqueued (nvbench's blocking kernel): the
     * interval then holds the GPU's work, not the host's launch calls. */
    hold[0] = hold[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    DKB_CUDA_CHECK(err, dkb_hold_stream(hold_dev, DKB_TIMING_HOLD_NS, s));
    DKB_CUDA_CHECK(err, cudaEventRecord(start, s));
    if (exec) DKB_CUDA_CHECK(err, cudaGraphLaunch(exec, s));
    else DKB_CUDA_CHECK(err, launch(arg, s));
    DKB_CUDA_CHECK(err, cudaEventRecord(stop, s));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    hold[0] = 1;
    DKB_CUDA_CHECK(err, cudaEventSynchronize(stop));
    if (hold[1]) {
      dkb_err_set(err, DKB_ENV, NULL, NULL,
                  "timing: the stream hold gave up after %.1f s before the host had enqueued sample %zu: its interval would "
                  "include host time", DKB_TIMING_HOLD_NS * 1e-9, out->n + 1);
      goto cleanup;
    }
    float ms = 0;
    DKB_CUDA_CHECK(err, cudaEventElapsedTime(&ms, start, stop));
    if (out->n == cap) {
      cap = cap ? 2 * cap : 256;
      out->samples_us = DKB_REALLOC(out->samples_us, cap * sizeof *out->samples_us);
    }
    double us = 1000.0 * (double)ms;
    out->samples_us[out->n++] = us;
    if ((out->stop = dkb_stop_rule_add(&rule, us, now_s() - t0)) != DKB_STOP_NONE) break;
  }
  out->wall_s = now_s() - t0;
  dkb_timing_summarize(out);
  rc = 0;
cleanup:
  if (capturing) { /* end a broken capture so the stream is usable again */
    cudaGraph_t g = NULL;
    cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  dkb_l2_flush_release(&flush);
  if (hold) cudaFreeHost((void *)hold);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (own) cudaStreamDestroy(own);
  dkb_stop_rule_release(&rule);
  if (rc) {
    free(out->samples_us);
    out->samples_us = NULL;
    out->n = 0;
  }
  return rc;
}

json_t *dkb_stats_json(const struct dkb_stats *s) {
  return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "count", (json_int_t)s->count, "min", s->min, "max",
                   s->max, "mean", s->mean, "median", s->median, "p95", s->p95, "stdev", s->stdev, "rel_stdev",
                   s->rel_stdev);
}

json_t *dkb_timing_json(const struct dkb_timing *t, struct dkb_err *err) {
  const struct dkb_timing_opts *o = &t->opts;
  json_t *samples = json_array();
  for (size_t i = 0; i < t->n; i++) {
    if (!isfinite(t->samples_us[i])) {
      json_decref(samples);
      dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "timing sample %zu is not finite", i);
      return NULL;
    }
    json_array_append_new(samples, json_real(t->samples_us[i]));
  }
  json_t *rule = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:i, s:i, s:i, s:f}", "name", "nvbench-stdrel",
                           "min_samples", (json_int_t)o->min_samples, "max_samples", (json_int_t)o->max_samples,
                           "max_noise", o->max_noise, "min_time_s", o->min_time_s, "max_time_s", o->max_time_s,
                           "noise_min_samples", NOISE_MIN_SAMPLES, "noise_history", NOISE_RING,
                           "noise_check_every", NOISE_CHECK_EVERY, "noise_settled", NOISE_SETTLED);
  json_object_set_new(rule, "noise_min_history", json_integer(NOISE_MIN_HISTORY));
  return json_pack(
      "{s:s, s:o, s:o, s:s, s:f, s:o, s:i, s:b, s:I, s:b, s:s, s:s, s:f}", "unit", "us", "samples", samples, "summary",
      dkb_stats_json(&t->stats), "stop_reason", dkb_timing_stop_name(t->stop), "final_noise", t->final_noise, "rule",
      rule, "warmup", o->warmup, "cold", o->cold, "l2_flush_bytes", (json_int_t)t->flush_bytes, "graph", o->graph,
      "timed_interval",
      o->graph ? "stream held by a spin kernel; cudaEventRecord(start) .. cudaGraphLaunch of one captured call .. cudaEventRecord(stop) enqueued behind it, then released: GPU time only, one stream"
               : "stream held by a spin kernel; cudaEventRecord(start) .. one call's launches .. cudaEventRecord(stop) enqueued behind it, then released: GPU time only, one stream",
      "synchronization", "cudaEventSynchronize(stop) after every sample; L2 flush (cold) before start, outside the events: a read of 2x L2 through L2 (clean lines, nothing for the call to write back)",
      "wall_s", t->wall_s);
}
