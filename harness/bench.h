/* bench.h - `dkb bench`: a sweep of decode calls, each a level-6 bundle from the same runner as
 * `dkb run`, beside a streaming-read roofline measured in the same process on the same device.
 * Achieved bandwidth = (unique K/V + Q + O bytes) / median time, in decimal TB/s, and its fraction of
 * the roofline; for masked calls also over the K/V bytes of visible tiles only. */
#ifndef DKB_BENCH_H
#define DKB_BENCH_H

#include <jansson.h>

#include "harness/device.h"
#include "harness/timing.h"
#include "lib/err.h"

#define BENCH_MAX_BACKENDS 8
#define BENCH_BACKEND_MAX 48

struct bench_case {
  char name[160];        /* fixture name + split variant */
  char fixture[512];     /* path */
  int forced_splits;     /* 0 = the fixture's own policy; > 0 = fixed S (a different call key) */
  char backend[BENCH_BACKEND_MAX];  /* the backend the case forces (side by side: --backend / "backends"); "" = the
                                     * fixture's own request */
  char selected[BENCH_BACKEND_MAX]; /* the backend that ran it (the bundle's /dispatch/selected); "" when none */
  char why[384];         /* a case below level 6: its bundle's first status reason (a refused backend's reasons) */
  int peer_of;           /* side by side: the first backend's case of the same entry and call; -1 for that one */
  char layout[32];
  int B, H_q, H_kv, d, C;
  int graph;             /* timed as CUDA graph replays (the fixture's mode, or --graph) */
  char dtype[8];
  double mean_len;       /* mean keys per request */
  /* results */
  int ran, level;
  char terminal[64];
  int launch_code;       /* the run's launch_code (harness/runner.h): whose a launch_failed was */
  double median_us, io_bytes, kv_bytes, visible_kv_bytes;
  double rel_stdev;      /* the timing samples' stdev / mean (the bundle's summary); with samples */
  long long samples;     /* raw samples behind median_us; 0 when the case was not timed */
  char call_key[65];     /* the bundle's call-key SHA-256: which call was timed; "" when not read */
  /* NVML around the timed region (the bundle's /measurement/timing/clocks_before and clocks_after) */
  int clocks_reported;     /* either sample holds the SM clock or the clock event reasons */
  int sm_mhz[2];           /* SM clock before, after; -1 when not reported */
  unsigned long long clock_reasons; /* event reason bits active in either sample, but gpu_idle (names and
                                     * whether one slows the GPU: harness/nvml.h) */
  double tbps, frac, visible_tbps, visible_frac;
  double excess_us;      /* bench_case_rates; NAN when there is no roofline or floor to subtract */
  /* The same-bytes read (bench_read): dkb's streaming-read kernel over a buffer of the case's visible
   * bytes (bench_visible_bytes), timed by the case's method (its graph mode, the run's --cold): what one
   * launch that only reads those bytes measures, ramp and tail included, where the roofline is the
   * rate of a read far longer than any call. read_us 0: not measured (read_reason says why when the
   * case was timed); read_fraction = read_us / median_us (bench_case_rates, NAN without both): the
   * call's speed as a fraction of that read's. */
  double read_us, read_fraction;
  long long read_samples;
  char read_reason[1100];
  /* --counters: DRAM bytes one call read, finding L2 as the timed calls found it (as the call before
   * left it, or flushed under --cold; the bundle's /measurement/counters, dram__bytes_read.sum), and
   * that over the call's visible K/V bytes (bench_case_rates): below 1, part of the K/V came from L2.
   * dram_measured 0: not collected. */
  int dram_measured;
  double dram_read_bytes, dram_kv_ratio;
  int splits;               /* the plan's; DKB_SPLITS_UNREPORTED (0) when the backend does not say */
  long long tiles[3];
  char bundle_dir[600];
  /* targets of the matrix entry (its "auto" case only); 0 / -1 when none */
  double want_frac, want_visible_frac;  /* floors on roofline_fraction, visible_roofline_fraction */
  double want_read_frac;                /* floor on read_fraction: the call at least this fraction of its same-bytes read's speed */
  int within_ref;                       /* case whose median this one must stay within within_pct of */
  double within_pct;
};

struct bench_matrix {
  char name[128];
  /* Side by side: every entry runs once per backend, forced, on the same inputs (the cases of one entry are
   * consecutive, in this order); targets judge the first backend's cases, and it is judged against each
   * other backend that admits the same call ("median <= B's"). 0 backends: each fixture's own request. */
  int nbackends;
  char backends[BENCH_MAX_BACKENDS][BENCH_BACKEND_MAX];
  int cold;                   /* the run's timed calls started from a flushed L2 (--cold) */
  long long roofline_bytes;   /* bytes the roofline kernel streams (>= 4 GiB) */
  double auto_within_pct;     /* each auto case within this % of its fixture's best forced split; 0 = none */
  struct bench_case *cases;
  int n;
};

/* One target of the matrix, judged on the measured cases. */
enum bench_verdict_state { BENCH_MET, BENCH_MISSED, BENCH_NOT_MEASURED };
struct bench_verdict {
  int case_index;
  int peer_index;     /* "median <= B's": the other backend's case it was judged against; else -1 */
  char what[200];     /* "roofline_fraction >= 0.92", "median within 5% of b16-t8192-g4-contig", ... */
  double want, got;   /* got: the fraction, or the % difference; NAN when not measured */
  int is_pct;         /* want and got are % differences of medians, not fractions */
  double need_us;     /* a missed fraction floor: the median that would meet it (median x got / want); else NAN */
  int l2_served;      /* a fraction floor not measured because L2 served part of the case's K/V (bench_l2_served) */
  enum bench_verdict_state state;
  /* The noise band in % the margin is read against (bench_noise_band of the medians compared; a fraction
   * floor: of the case's median alone, its reference's spread is not recorded), NAN when not measured or
   * no spread is recorded; beyond_noise: got is farther from want than the band (a % difference: by more
   * than the band in points; a fraction: by more than the band in % of want), so the verdict holds beyond
   * the run's noise, not at the edge. */
  double noise_pct;
  int beyond_noise;
};

/* Reads a dkb.bench-matrix/v1 file (schemas/bench-matrix.schema.json); fixture paths are relative to
 * the matrix file. */
int bench_matrix_load(const char *path, struct bench_matrix *m, struct dkb_err *err);
/* A matrix of the given fixtures with their own split policies. */
int bench_matrix_from_fixtures(char **paths, int n, struct bench_matrix *m, struct dkb_err *err);
/* Runs every entry of m under each of the comma-separated backends of list (replacing the matrix's own
 * "backends"): names of [a-z0-9_], at most BENCH_MAX_BACKENDS, no repeats. DKB_USAGE with the reason
 * otherwise. Whether each name is a loaded backend is the caller's to check (backends_check_request). */
int bench_matrix_set_backends(struct bench_matrix *m, const char *list, struct dkb_err *err);
void bench_matrix_release(struct bench_matrix *m);

struct bench_roofline {
  int measured;
  char reason[1100];
  double bytes, median_us, tbps;
  size_t samples;
  /* The launch floor: an empty kernel timed by the same pass, the least any case can measure (small
   * calls are read against it), [0] with plain launches and [1] replayed from a CUDA graph (the floor of
   * --graph cases). */
  struct bench_floor {
    int measured;
    char reason[1100];
    double us;
    size_t samples;
  } floor[2];
};
/* Streams `bytes` through kernels/roofline.cu with the timing pass (dkb_timing_run), then times the
 * empty kernel the same way, plainly and from a graph (the floors). */
int bench_roofline(long long bytes, const struct dkb_timing_opts *t, struct bench_roofline *r, struct dkb_err *err);

/* The bytes a case must read: its visible K/V (non-SKIP tiles) + Q + O; the numerator of visible_tbps. */
double bench_visible_bytes(const struct bench_case *bc);
/* Times dkb's streaming-read kernel over a buffer of `bytes` (rounded down to 16) with the timing pass,
 * as the cases are timed (t; graph: replayed from a CUDA graph): its median and sample count. */
int bench_read(double bytes, const struct dkb_timing_opts *t, int graph, double *median_us, size_t *samples,
               struct dkb_err *err);

/* A timed case's rates from its median and byte counts: tbps and visible_tbps, their fractions of the
 * roofline, and excess_us = median - the launch floor of its timing mode - (visible K/V + Q + O bytes) /
 * roofline: what the call costs beyond an empty launch and the read of what it must read at the
 * roofline (prologue, first-tile latency, the merge, the tail, streaming below the roofline). The
 * fractions need a measured roofline (else 0), excess_us also the floor (else NAN); read_fraction
 * needs the case's same-bytes read (read_us, else NAN). */
void bench_case_rates(struct bench_case *bc, const struct bench_roofline *r);

/* The fastest forced-split case (a median exists) of case i's fixture, or -1; *forced counts the
 * fixture's forced cases and *all_level6 says whether each of them is a level-6 measurement. */
int bench_best_forced(const struct bench_matrix *m, int i, int *forced, int *all_level6);
/* Whether a case's timed calls found part of their K/V in L2, left there by the calls before them: its
 * counters say a call read less than BENCH_DRAM_KV_MIN of its visible K/V from DRAM, and L2 was not
 * flushed before each sample. Its bandwidth is then not the DRAM's. */
int bench_l2_served(const struct bench_matrix *m, const struct bench_case *bc);
/* Judges every target of the matrix on its results: roofline fraction floors need a measured case and
 * roofline, the read_fraction floor a measured case and its same-bytes read (and each, for a case with
 * counters, K/V that came from DRAM: not bench_l2_served);
 * "within" compares medians ((case / reference - 1) * 100 <= pct); auto_within_pct compares each auto
 * case with the fastest forced split of the same fixture (side by side: the first backend's cases, as every
 * target but "median <= B's"). Returns the count (<= cap). */
int bench_judge(const struct bench_matrix *m, const struct bench_roofline *r, struct bench_verdict *v, int cap);
const char *bench_verdict_name(enum bench_verdict_state s);
/* How many of a run's verdicts were met, missed and not measured, and of the met and missed how many by
 * more than the run's noise (beyond_noise). */
struct bench_target_count { int met, met_beyond, missed, missed_beyond, unmeasured; };
void bench_count_targets(const struct bench_verdict *v, int nv, struct bench_target_count *c);
/* The gate over a run's verdicts (dkb bench --require-targets; margin: --require-margin, the rule
 * that a target holds only beyond its run's noise): DKB_OK when every target is met (with margin: beyond
 * the noise); DKB_FAIL when one is missed, or with margin met only at the edge; else DKB_ENV when one
 * could not be measured on this host, or none was judged. why gets the reason (without "dkb: error: "). */
int bench_gate(const struct bench_verdict *v, int nv, int margin, char *why, size_t n);

/* The call case bc times: its fixture, with the backend and the split count the case forces, and timed
 * as CUDA graph replays where graph (--graph) is set; decode_call_release it. And that call's key
 * (cjson_digest of decode_call_key), what the case's bundle records as /dispatch/call_key_sha256, with no
 * device and no inputs: so a kept run's calls can be checked against today's fixtures. */
struct decode_call;
int bench_case_call(const struct bench_case *bc, int graph, struct decode_call *call, struct dkb_err *err);
int bench_case_key(const struct bench_case *bc, int graph, char sha[65], struct dkb_err *err);
/* What a comparison of two runs needs of a case, from its bundle (the record): which call it was
 * (/dispatch/call_key_sha256), when timed its median's spread (/measurement/timing/summary:
 * rel_stdev, samples), the clocks NVML saw around the timed region (clocks_before, clocks_after:
 * SM clock, event reasons, whether one of them slowed the GPU), and the DRAM bytes a call read when the
 * bundle holds counters (dram_measured, dram_read_bytes). */
int bench_case_read_bundle(struct bench_case *bc, int timed, struct dkb_err *err);
/* Below this dram_kv_ratio a case's K/V was partly served by L2 across calls: its bandwidth is not the
 * DRAM's, and a decode step, which never finds a layer's K/V still in L2, would be slower. */
#define BENCH_DRAM_KV_MIN 0.95
/* For a case whose warm call read less than BENCH_DRAM_KV_MIN of its visible K/V from DRAM: "a call
 * read 0.73 of its visible K/V from DRAM (48.9 of 67.1 MB): L2 served the rest, left there by the
 * calls before it" in out, and 1; 0 (out empty) otherwise. */
int bench_dram_note(const struct bench_case *bc, char *out, size_t n);
/* For a case that ran slowed (a reason of dkb_nvml_reasons_slow): "ran slowed (sw_power_cap; SM clock
 * 1980 MHz before, 1755 after): its median is not the kernel's alone" in out, and 1; 0 (out empty) otherwise. */
int bench_clock_note(const struct bench_case *bc, char *out, size_t n);
/* For a case with no figure, why: "refused: BACKEND: <reasons>" when its forced backend refused the call,
 * "below level 6: BACKEND: <the bundle's first reason>" when the selected backend ran and the bundle
 * stopped short of level 6 (cuDNN's repeat call differing from the checked one, say), in out, and 1;
 * 0 (out empty) for a case with a figure or no reason. */
int bench_unmeasured_note(const struct bench_case *bc, char *out, size_t n);

/* A bench run end to end, as `dkb bench` drives it: bench_prepare probes the device and measures the
 * references, bench_execute runs every case through the runner and judges the matrix's targets.
 * Neither prints: cmd/ prints what they return and what the per-case callback reports. */
struct backend_set;
struct bench_opts {
  const char *out_dir;   /* case i's bundle goes to OUT/cases/NNN */
  int graph;             /* every case timed as CUDA graph replays (--graph) */
  int cold;              /* every timed call starts from a flushed L2 (--cold) */
  int roofline;          /* time the roofline, the launch floors and the same-bytes reads (0: --no-roofline) */
  int counters;          /* each case's counters pass (--counters) */
  double max_time_s;     /* a timing pass's limit (--max-time) */
  int argc;              /* the command line, recorded in each bundle */
  char **argv;
  struct backend_set *backends;  /* the registry every case is admitted over (harness/backends.h) */
};

/* The device and the references every case is read against. */
struct bench_env {
  struct dkb_device_info dev;    /* dev.available 0: every case stops at the level the host proves */
  struct dkb_timing_opts timing; /* how each case (and each reference) is timed */
  struct bench_roofline roof;    /* roof.reason says why it was not measured */
  int roof_failed;               /* the roofline was timed and failed: roof_err says why */
  struct dkb_err roof_err;
};
/* Fills env: the device probe, the timing options, and, with a GPU and o->roofline, the roofline and
 * launch floors of roofline_bytes (bench_roofline). Never fails: what could not be had is recorded. */
void bench_prepare(const struct bench_opts *o, long long roofline_bytes, struct bench_env *env);

/* What bench_execute reports after each case, beyond the case's results in the matrix. */
struct bench_case_report {
  int index;                         /* the case, m->cases[index] */
  const struct dkb_err *load_err;    /* its fixture could not be loaded: no case after it runs */
  const struct dkb_err *run_err;     /* the runner failed (it wrote no bundle): the case did not run */
  const struct dkb_err *bundle_err;  /* its bundle could not be read back: its spread and clocks are missing */
  int read_failed;                   /* its same-bytes read was timed and failed: read_reason says why */
};
typedef void bench_case_fn(void *ctx, const struct bench_matrix *m, const struct bench_case_report *rep);

/* The cases that reached a result (no load_err or run_err), counted. */
struct bench_tally {
  int timed;     /* with timing samples */
  int clocked;   /* timed, with NVML clocks */
  int slowed;    /* with a slowdown reason active (bench_clock_note) */
  int counted;   /* with counters (dram_measured) */
  int l2served;  /* whose K/V L2 partly served (bench_l2_served) */
};
struct bench_outcome {
  struct bench_tally tally;
  struct bench_verdict *v;  /* the matrix's targets, judged (bench_judge); owned */
  int nv;
};
/* Runs every case of m in order through the runner (harness/runner.h) into its bundle, reads back what
 * the bundle records, times its same-bytes read, derives its rates, and calls on_case after each; a case
 * the runner refuses is recorded as not run and the others go on; a fixture that can no longer be loaded
 * ends the loop there. Then judges the targets into out. */
void bench_execute(struct bench_matrix *m, const struct bench_opts *o, const struct bench_env *env, bench_case_fn *on_case,
                   void *ctx, struct bench_outcome *out);
void bench_outcome_release(struct bench_outcome *out);

/* Writes DIR/bench.json (dkb.bench/v1, with the verdicts and the device, when dev is not NULL),
 * DIR/bench.csv and DIR/roofline-fraction.svg atomically. A case that was not timed records no figure:
 * its median, bandwidths and fractions are null in bench.json and empty in the CSV, as its fractions are
 * without a measured roofline. */
int bench_write(const char *dir, const struct bench_matrix *m, const struct bench_roofline *r, const struct bench_verdict *v,
                int nv, const struct dkb_device_info *dev, int argc, char **argv, struct dkb_err *err);

#endif
