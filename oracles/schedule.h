/* schedule.h - the paper schedules of decode attention as plain functions (article 0x09, 0x0AB, 0x0AD):
 * FlashAttention-2's split-count heuristic, the pinned FlashInfer batch-decode planner (occupancy +
 * binary-searched page chunks), three work schedules over ragged outputs (fixed per-output splits,
 * LeanAttention-style global equal work, FlashInfer-paper planned chunks with least-loaded
 * assignment) and FlashDecoding++'s guarded shared-shift softmax. dkb's CUDA decode kernels call
 * sched_fa2_num_splits for their auto split policy with the device's real SM count; the fixtures of
 * 0x09G/0x09I and the validator call the rest. Work is counted in logical K/V units: equal units do
 * not prove equal cycles (0x09G), so nothing here is a measurement. */
#ifndef DKB_SCHEDULE_H
#define DKB_SCHEDULE_H

#include <stddef.h>

/* ---- FlashAttention-2 split heuristic (0x0AB) ------------------------------------------------ */

#define SCHED_FA2_TRACE_MAX 1024
/* Why the heuristic chose what it chose. */
struct sched_fa2_trace {
  int early_exit;                             /* blocks >= 0.8 * num_sms: one split, nothing evaluated */
  int cap;                                    /* min(max_splits, num_sms, num_kv_blocks) */
  size_t n;                                   /* candidates traced: min(cap, SCHED_FA2_TRACE_MAX) */
  unsigned char eligible[SCHED_FA2_TRACE_MAX]; /* [s-1]: s == 1 or ceil(N_K/s) != ceil(N_K/(s-1)) */
  float efficiency[SCHED_FA2_TRACE_MAX];      /* [s-1]: eta(s) = w/ceil(w), w = blocks*s/num_sms; 0 if ineligible */
  float best;                                 /* max eta over eligible candidates */
  int chosen;                                 /* the return value */
};

/* Number of K/V splits FlashAttention-2 picks (flash_api.cpp num_splits_heuristic, re-expressed):
 *   blocks        G = B * H * M_q, the producer CTAs of the unsplit launch
 *   num_sms       N_SM, the effective SM count (FA2's binding passes 2x the device's SMs because its
 *                 split kernel runs 128-thread CTAs; dkb passes what its own kernel's occupancy gives)
 *   num_kv_blocks N_K, K/V tiles of the longest request
 *   max_splits    the caller's cap (FA2's binding: 128)
 * If G >= 0.8 N_SM the grid already nearly fills the machine: 1. Otherwise candidates s = 1..cap,
 * cap = min(max_splits, N_SM, N_K), skip s > 1 whose blocks per split equal those of s - 1, and return
 * the smallest eligible s with eta(s) >= 0.85 * max eta (1 if none). Arithmetic is in float like the
 * source, so boundary cases agree with it. Returns -1 when an argument is < 1. trace may be NULL. */
int sched_fa2_num_splits(long long blocks, int num_sms, int num_kv_blocks, int max_splits,
                         struct sched_fa2_trace *trace);

/* ---- pinned FlashInfer batch-decode planner (0x0AD) ------------------------------------------ */

struct sched_fi_plan {
  int split_kv;                 /* partitioned path: partial states + variable-length merge */
  long long max_grid;           /* G_max = N_SM * active CTAs per SM */
  long long gdy;                /* CTAs per work item (grid y) = H_kv */
  long long chunk_pages;        /* max pages per chunk (kv chunk size in pages) */
  long long chunk_tokens;       /* chunk_pages * page_size */
  long long new_batch_size;     /* work items (request, chunk) */
  long long padded_batch_size;  /* grid x; with a CUDA graph the grid is padded and block_valid_mask set */
  size_t batch;
  long long *request_indices;   /* [new_batch_size]: request owning work item j */
  long long *kv_tile_indices;   /* [new_batch_size]: chunk index of item j within its request */
  long long *o_indptr;          /* [batch + 1]: items of request b are [o_indptr[b], o_indptr[b+1]) */
};

/* The plan for requests of num_pages[b] pages (b < batch). If batch * H_kv >= G_max the plan stays
 * unsplit (one chunk per request). Otherwise binary-search the smallest chunk in
 * [min_chunk_pages, max pages] whose item count times H_kv fits G_max; without a CUDA graph a plan
 * whose items equal the requests stays unsplit. min_chunk_pages <= 0 takes the pinned default
 * max(128 / page_size, 1). Returns 0, or -1 on an argument < 1 (num_pages may hold 0: an empty
 * request still owns one item). Release with sched_fi_plan_release. */
int sched_fi_decode_plan(const long long *num_pages, size_t batch, long long num_kv_heads, int num_sms,
                         int ctas_per_sm, long long page_size, int cuda_graph, long long min_chunk_pages,
                         struct sched_fi_plan *out);
void sched_fi_plan_release(struct sched_fi_plan *p);

/* ---- work schedules over ragged outputs (0x09B, 0x09D, 0x09E, 0x09G) ------------------------- */

/* [start, end) K/V units of one output, owned by one worker; each fragment publishes its own state. */
struct sched_fragment {
  int worker;
  size_t output;
  long long start, end;
};

struct sched_schedule {
  int workers;
  size_t nfrag;
  struct sched_fragment *frag;  /* assignment order */
  long long *load;              /* [workers] K/V units per worker */
  double *cost;                 /* [workers] planner cost alpha*l_q + beta*l_kv (planned chunks only, else NULL) */
  long long total, max_load;
  double mean;                  /* total / workers: the ideal W-bar */
  double max_over_mean;         /* rho = max / mean */
  double efficiency;            /* eta_work = total / (workers * max) */
  long long chunk_limit;        /* planned chunks: the integer chunk limit L; 0 otherwise */
};

/* Flash-Decoding: every output split into `splits` balanced chunks (0x03B bounds); chunk g = r*splits+j
 * runs on worker g % workers. */
int sched_fixed_splits(const long long *work, size_t nout, int splits, int workers, struct sched_schedule *s);
/* LeanAttention-style: the outputs laid end to end and cut into `workers` balanced intervals; an interval
 * crossing an output boundary becomes two fragments (two output-specific states). */
int sched_global_equal(const long long *work, size_t nout, int workers, struct sched_schedule *s);
/* FlashInfer paper planner: L = ceil(sum_r ceil(q_len_r / q_tile) * work_r / workers); each output cut
 * into chunks of at most L; chunks sorted by cost descending (ties: output, then chunk order) and each
 * given to the least-loaded worker by cost (ties: lowest worker id) - deterministic for a length
 * manifest. q_len NULL means 1 per output. */
int sched_planned_chunks(const long long *work, const long long *q_len, size_t nout, int workers, long long q_tile,
                         double alpha, double beta, struct sched_schedule *s);
void sched_schedule_release(struct sched_schedule *s);
/* Number of distinct outputs worker w holds fragments of (> 1: it publishes several states). */
size_t sched_worker_outputs(const struct sched_schedule *s, int w);

/* ---- FlashDecoding++ shared shift (0x09C) ---------------------------------------------------- */

struct sched_shift_result {
  int fallback;          /* the guard fired and O came from the synchronized (exact split-state) path */
  size_t guard_part;     /* first partition whose row left the range (when fallback) */
  size_t guard_index;    /* its first offending position */
  double guard_delta;    /* score - phi there */
  double lse;            /* log sum exp of the row, from whichever path produced O */
};

/* One row of n scores and values [n][d], split into nparts half-open ranges, with the common shift phi.
 * Every partition checks each delta = s - phi against the open interval (lower, upper); if every delta
 * is inside, O = sum_j n_j(phi) / sum_j l_j(phi) with no cross-partition rescaling. If any delta is
 * outside, the row falls back to the synchronized partial softmax (split_state.h merge) in float64.
 * o receives d values. Returns 0, or -1 when the ranges do not cover [0, n) exactly once. */
int sched_shared_shift(const double *scores, const double *values, size_t n, size_t d, const long long (*parts)[2],
                       size_t nparts, double phi, double lower, double upper, double *o,
                       struct sched_shift_result *res);

#endif
