/* timing.h - the timed pass (article 0x0BH; docs/STYLE.md 13): warm-up, then samples each bracketed by a
 * cudaEvent pair on the stream and synchronized, every raw sample kept (microseconds), a stated
 * stopping rule, and the summary from oracles/stats.h. Run it without tracing or counters.
 *
 * Stopping rule (nvbench's "stdrel" criterion as measure_cold applies it): after each sample the noise
 * is the relative standard deviation of all samples so far. Once at least min_samples are taken and
 * their summed time exceeds min_time_s, the pass stops when the noise is below max_noise
 * ("noise_reached"), or, past 64 noise values and on every 16th sample, when the noise itself has
 * settled (relative deviation of the noise history around the current noise below 5 %:
 * "noise_stable", a kernel that is noisier than the target but steady). Independently it stops when
 * the pass's wall time exceeds max_time_s ("max_time", nvbench's timeout) or at max_samples
 * ("max_samples"). */
#ifndef DKB_TIMING_H
#define DKB_TIMING_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"
#include "harness/gpucheck.h"
#include "oracles/stats.h"

#define DKB_TIMING_MIN_SAMPLES 20 /* the article's floor of positive raw samples */
/* Each sample's start event, call and stop event are enqueued behind a spin kernel that holds the
 * stream (kernels/hold.cu) and then released together, as nvbench does: the interval is the GPU's time
 * for the call, without the host's launch calls (which a GPU that idles between the start event and
 * the first kernel would otherwise count). The hold gives up after this long: the pass then fails. */
#define DKB_TIMING_HOLD_NS 1000000000ULL

struct dkb_timing_opts {
  int warmup;          /* launches (or graph replays) before the first sample */
  size_t min_samples;  /* >= DKB_TIMING_MIN_SAMPLES */
  size_t max_samples;  /* hard cap */
  double max_noise;    /* relative stdev target as a fraction: --max-noise PCT gives PCT / 100 */
  double min_time_s;   /* summed sample time before the noise rule may stop the pass */
  double max_time_s;   /* wall-clock limit of the sampling loop (--max-time S) */
  int cold;            /* flush L2 before each sample (struct dkb_l2_flush), outside the events */
  int graph;           /* capture one launch into a CUDA graph and time its replays */
};

enum dkb_timing_stop {
  DKB_STOP_NONE = 0,
  DKB_STOP_NOISE_REACHED,
  DKB_STOP_NOISE_STABLE,
  DKB_STOP_MAX_TIME,
  DKB_STOP_MAX_SAMPLES,
};

/* The running state of the stopping rule, separate from CUDA so it can be tested on its own. */
struct dkb_stop_rule {
  const struct dkb_timing_opts *opts;
  size_t n;             /* samples seen */
  double sum_us;        /* their sum */
  double mean, m2;      /* Welford running mean and sum of squared deviations */
  double *noise;        /* relative stdev after each sample from the second on */
  size_t nnoise, cap;
};

struct dkb_timing {
  double *samples_us;          /* every raw sample, in order */
  size_t n;
  struct dkb_stats stats;      /* dkb_stats_compute(samples_us, n) */
  enum dkb_timing_stop stop;   /* why sampling ended */
  double final_noise;          /* relative stdev when it ended (equals stats.rel_stdev) */
  double wall_s;               /* wall time of the sampling loop */
  long long flush_bytes;       /* L2 flush buffer size (cold), else 0 */
  struct dkb_timing_opts opts; /* what ran */
};

/* The L2 flush of a cold pass: a buffer of twice the device's L2, zeroed once, read through L2 before
 * each sample (kernels/roofline.cu, dkb_l2_flush_v1). Read, not written: a memset flush leaves L2 full of
 * dirty lines, and the timed call's own reads would write them back to DRAM inside its interval. */
struct dkb_l2_flush {
  void *buf;
  long long bytes;
};
/* Allocates the buffer on `device`, zeroes it and reads it twice, so the lines the zeroing left dirty
 * are written back now (synchronized). -1 with err: the runtime's reason. */
int dkb_l2_flush_init(int device, struct dkb_l2_flush *f, struct dkb_err *err);
/* A dkb_launch_fn: enqueues the read of f (a struct dkb_l2_flush *) on stream. */
int dkb_l2_flush_launch(void *f, void *stream);
void dkb_l2_flush_release(struct dkb_l2_flush *f);

/* warmup 3, min_samples 20, max_samples 100000, max_noise 0.005 (nvbench's default 0.5 %),
 * min_time_s 0.5 and max_time_s 15 (nvbench's defaults), hot, no graph. */
void dkb_timing_opts_default(struct dkb_timing_opts *o);
/* DKB_USAGE with the option's name when out of range ("--min-samples must be >= 20 (got 5)"). */
int dkb_timing_opts_check(const struct dkb_timing_opts *o, struct dkb_err *err);

void dkb_stop_rule_init(struct dkb_stop_rule *r, const struct dkb_timing_opts *o);
/* Adds one sample; returns why to stop now, or DKB_STOP_NONE. elapsed_s is the loop's wall time. */
enum dkb_timing_stop dkb_stop_rule_add(struct dkb_stop_rule *r, double sample_us, double elapsed_s);
/* Relative stdev of the samples added so far (0 before two samples). */
double dkb_stop_rule_noise(const struct dkb_stop_rule *r);
void dkb_stop_rule_release(struct dkb_stop_rule *r);
/* "noise_reached", "noise_stable", "max_time", "max_samples", "none". */
const char *dkb_timing_stop_name(enum dkb_timing_stop s);

/* The timed pass on `device`. stream NULL: the pass makes its own non-blocking stream (graph capture
 * needs one). Fills out (release with dkb_timing_release). -1 with err: no device (the runtime's
 * reason), a failed launch (its error), out of memory for the flush buffer, ... */
int dkb_timing_run(int device, const struct dkb_timing_opts *o, dkb_launch_fn launch, void *arg, void *stream,
                   struct dkb_timing *out, struct dkb_err *err);
/* Recomputes t->stats and t->final_noise from t->samples_us (the summary the validator recomputes). */
void dkb_timing_summarize(struct dkb_timing *t);
void dkb_timing_release(struct dkb_timing *t);
/* {"unit": "us", "samples": [...], "summary": {...}, "stop_reason", "rule": {...}, "warmup", "cold",
 *  "l2_flush_bytes", "graph", "timed_interval", "synchronization", "wall_s"}. New reference; NULL with
 * err when a sample is not finite. */
json_t *dkb_timing_json(const struct dkb_timing *t, struct dkb_err *err);
/* The summary object alone: {count, min, max, mean, median, p95, stdev, rel_stdev}. */
json_t *dkb_stats_json(const struct dkb_stats *s);

#endif
