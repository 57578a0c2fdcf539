/* schedule.c - paper schedules (see schedule.h). The FA2 heuristic and the FlashInfer planner are
 * re-expressed from their published sources (flash-attention csrc/flash_attn/flash_api.cpp,
 * flashinfer include/flashinfer/attention/scheduler.cuh), not copied. */
#include "oracles/schedule.h"
#include "oracles/split_state.h"
#include "lib/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/* ---- FlashAttention-2 split heuristic -------------------------------------------------------- */

/* eta(s) = w / ceil(w), w = blocks * s / num_sms, in float like the source. */
static float fa2_efficiency(long long blocks, int s, int num_sms) {
  float waves = (float)(blocks * s) / (float)num_sms;
  return waves / ceilf(waves);
}

static int fa2_eligible(int s, int num_kv_blocks) {
  return s == 1 || ceil_div(num_kv_blocks, s) != ceil_div(num_kv_blocks, s - 1);
}

int sched_fa2_num_splits(long long blocks, int num_sms, int num_kv_blocks, int max_splits,
                         struct sched_fa2_trace *t) {
  struct sched_fa2_trace local;
  if (!t) t = &local;
  memset(t, 0, sizeof *t);
  if (blocks < 1 || num_sms < 1 || num_kv_blocks < 1 || max_splits < 1) return t->chosen = -1;
  t->chosen = 1;
  if ((float)blocks >= 0.8f * (float)num_sms) { t->early_exit = 1; return 1; }
  int cap = max_splits;
  if (num_sms < cap) cap = num_sms;
  if (num_kv_blocks < cap) cap = num_kv_blocks;
  t->cap = cap;
  t->n = (size_t)cap < SCHED_FA2_TRACE_MAX ? (size_t)cap : SCHED_FA2_TRACE_MAX;
  float best = 0.f;
  for (int s = 1; s <= cap; s++) {
    float eff = fa2_eligible(s, num_kv_blocks) ? fa2_efficiency(blocks, s, num_sms) : 0.f;
    if (eff > best) best = eff;
    if ((size_t)s <= t->n) { t->eligible[s - 1] = (unsigned char)fa2_eligible(s, num_kv_blocks); t->efficiency[s - 1] = eff; }
  }
  t->best = best;
  for (int s = 1; s <= cap; s++) {
    if (!fa2_eligible(s, num_kv_blocks)) continue;
    if ((double)fa2_efficiency(blocks, s, num_sms) >= 0.85 * (double)best) return t->chosen = s;
  }
  return 1;
}

/* ---- pinned FlashInfer batch-decode planner -------------------------------------------------- */

void sched_fi_plan_release(struct sched_fi_plan *p) {
  free(p->request_indices);
  free(p->kv_tile_indices);
  free(p->o_indptr);
  memset(p, 0, sizeof *p);
}

int sched_fi_decode_plan(const long long *num_pages, size_t batch, long long num_kv_heads, int num_sms,
                         int ctas_per_sm, long long page_size, int cuda_graph, long long min_chunk_pages,
                         struct sched_fi_plan *p) {
  memset(p, 0, sizeof *p);
  if (batch < 1 || num_kv_heads < 1 || num_sms < 1 || ctas_per_sm < 1 || page_size < 1) return -1;
  long long max_pages = 0;
  for (size_t b = 0; b < batch; b++) {
    if (num_pages[b] < 0) return -1;
    if (num_pages[b] > max_pages) max_pages = num_pages[b];
  }
  if (min_chunk_pages <= 0) min_chunk_pages = 128 / page_size > 1 ? 128 / page_size : 1;
  p->batch = batch;
  p->gdy = num_kv_heads;
  p->max_grid = (long long)num_sms * ctas_per_sm;
  if ((long long)batch * p->gdy >= p->max_grid) {
    /* the unsplit grid already fills the machine */
    p->split_kv = 0;
    p->chunk_pages = max_pages > 1 ? max_pages : 1;
    p->new_batch_size = (long long)batch;
  } else {
    long long lo = min_chunk_pages, hi = max_pages;
    while (lo < hi) {
      long long mid = (lo + hi) / 2, items = 0;
      for (size_t b = 0; b < batch; b++) items += ceil_div(num_pages[b], mid);
      if (items * p->gdy > p->max_grid) lo = mid + 1;
      else hi = mid;
    }
    p->chunk_pages = lo;
    for (size_t b = 0; b < batch; b++) p->new_batch_size += ceil_div(num_pages[b] > 1 ? num_pages[b] : 1, lo);
    /* without a graph, a partition that splits nothing keeps the direct-output path */
    p->split_kv = !(p->new_batch_size == (long long)batch && !cuda_graph);
  }
  p->chunk_tokens = p->chunk_pages * page_size;
  p->padded_batch_size = cuda_graph ? (p->split_kv ? p->max_grid / p->gdy : (long long)batch) : p->new_batch_size;
  /* request_indices / kv_tile_indices / o_indptr (DecodeSplitKVIndptr) */
  long long items = 0;
  for (size_t b = 0; b < batch; b++) items += ceil_div(num_pages[b] > 1 ? num_pages[b] : 1, p->chunk_pages);
  p->request_indices = DKB_MALLOC((size_t)items * sizeof *p->request_indices);
  p->kv_tile_indices = DKB_MALLOC((size_t)items * sizeof *p->kv_tile_indices);
  p->o_indptr = DKB_MALLOC((batch + 1) * sizeof *p->o_indptr);
  p->o_indptr[0] = 0;
  long long j = 0;
  for (size_t b = 0; b < batch; b++) {
    long long chunks = ceil_div(num_pages[b] > 1 ? num_pages[b] : 1, p->chunk_pages);
    for (long long c = 0; c < chunks; c++, j++) {
      p->request_indices[j] = (long long)b;
      p->kv_tile_indices[j] = c;
    }
    p->o_indptr[b + 1] = j;
  }
  return 0;
}

/* ---- work schedules -------------------------------------------------------------------------- */

void sched_schedule_release(struct sched_schedule *s) {
  free(s->frag);
  free(s->load);
  free(s->cost);
  memset(s, 0, sizeof *s);
}

static void push(struct sched_schedule *s, size_t *cap, int worker, size_t output, long long start, long long end) {
  if (s->nfrag == *cap) s->frag = DKB_REALLOC(s->frag, (*cap = *cap ? 2 * *cap : 16) * sizeof *s->frag);
  s->frag[s->nfrag++] = (struct sched_fragment){worker, output, start, end};
  s->load[worker] += end - start;
}

static int begin(const long long *work, size_t nout, int workers, struct sched_schedule *s) {
  memset(s, 0, sizeof *s);
  if (nout < 1 || workers < 1) return -1;
  for (size_t r = 0; r < nout; r++) {
    if (work[r] < 0) return -1;
    s->total += work[r];
  }
  s->workers = workers;
  s->load = DKB_CALLOC((size_t)workers, sizeof *s->load);
  return 0;
}

static void finish(struct sched_schedule *s) {
  for (int w = 0; w < s->workers; w++)
    if (s->load[w] > s->max_load) s->max_load = s->load[w];
  s->mean = (double)s->total / s->workers;
  s->max_over_mean = s->mean > 0 ? (double)s->max_load / s->mean : 0;
  s->efficiency = s->max_load > 0 ? (double)s->total / ((double)s->workers * (double)s->max_load) : 0;
}

int sched_fixed_splits(const long long *work, size_t nout, int splits, int workers, struct sched_schedule *s) {
  if (splits < 1 || begin(work, nout, workers, s)) return -1;
  size_t cap = 0;
  for (size_t r = 0; r < nout; r++)
    for (int j = 0; j < splits; j++) {
      long long a, e;
      ss_balanced_bounds(work[r], splits, j, &a, &e);
      push(s, &cap, (int)(((long long)r * splits + j) % workers), r, a, e);
    }
  finish(s);
  return 0;
}

int sched_global_equal(const long long *work, size_t nout, int workers, struct sched_schedule *s) {
  if (begin(work, nout, workers, s)) return -1;
  size_t cap = 0, r = 0;
  long long base = 0; /* flattened offset where output r starts */
  for (int w = 0; w < workers; w++) {
    long long a, e;
    ss_balanced_bounds(s->total, workers, w, &a, &e);
    while (a < e) {
      while (r < nout && a >= base + work[r]) base += work[r++];
      long long stop = e < base + work[r] ? e : base + work[r];
      push(s, &cap, w, r, a - base, stop - base); /* a fragment never crosses an output identity */
      a = stop;
    }
  }
  finish(s);
  return 0;
}

struct chunk {
  size_t output;
  long long index, start, end;
  double cost;
};

static int chunk_order(const void *x, const void *y) {
  const struct chunk *a = x, *b = y;
  if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
  if (a->output != b->output) return a->output < b->output ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

int sched_planned_chunks(const long long *work, const long long *q_len, size_t nout, int workers, long long q_tile,
                         double alpha, double beta, struct sched_schedule *s) {
  if (q_tile < 1 || begin(work, nout, workers, s)) return -1;
  long long weighted = 0;
  for (size_t r = 0; r < nout; r++) {
    long long lq = q_len ? q_len[r] : 1;
    if (lq < 1) { sched_schedule_release(s); return -1; }
    weighted += ceil_div(lq, q_tile) * work[r];
  }
  long long L = ceil_div(weighted, workers);
  if (L < 1) L = 1;
  s->chunk_limit = L;
  size_t nchunk = 0, cap = 0;
  for (size_t r = 0; r < nout; r++) nchunk += (size_t)ceil_div(work[r], L);
  struct chunk *c = DKB_MALLOC(nchunk * sizeof *c);
  size_t k = 0;
  for (size_t r = 0; r < nout; r++)
    for (long long a = 0, i = 0; a < work[r]; a += L, i++) {
      long long e = a + L < work[r] ? a + L : work[r];
      c[k++] = (struct chunk){r, i, a, e, alpha * (double)(q_len ? q_len[r] : 1) + beta * (double)(e - a)};
    }
  qsort(c, nchunk, sizeof *c, chunk_order);
  s->cost = DKB_CALLOC((size_t)workers, sizeof *s->cost);
  for (k = 0; k < nchunk; k++) {
    int best = 0;
    for (int w = 1; w < workers; w++)
      if (s->cost[w] < s->cost[best]) best = w;
    s->cost[best] += c[k].cost;
    push(s, &cap, best, c[k].output, c[k].start, c[k].end);
  }
  free(c);
  finish(s);
  return 0;
}

size_t sched_worker_outputs(const struct sched_schedule *s, int w) {
  size_t n = 0;
  for (size_t i = 0; i < s->nfrag; i++) {
    if (s->frag[i].worker != w) continue;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = s->frag[j].worker == w && s->frag[j].output == s->frag[i].output;
    n += !seen;
  }
  return n;
}

/* ---- FlashDecoding++ shared shift ------------------------------------------------------------ */

int sched_shared_shift(const double *scores, const double *values, size_t n, size_t d, const long long (*parts)[2],
                       size_t nparts, double phi, double lower, double upper, double *o,
                       struct sched_shift_result *res) {
  memset(res, 0, sizeof *res);
  if (n == 0 || d == 0 || nparts == 0) return -1;
  unsigned char *owned = DKB_CALLOC(n, 1);
  int bad = 0;
  for (size_t j = 0; j < nparts && !bad; j++) {
    if (parts[j][0] < 0 || parts[j][1] < parts[j][0] || parts[j][1] > (long long)n) { bad = 1; break; }
    for (long long i = parts[j][0]; i < parts[j][1] && !bad; i++) bad = owned[i]++;
  }
  for (size_t i = 0; i < n && !bad; i++) bad = !owned[i];
  free(owned);
  if (bad) return -1;

  /* the per-row range guard, partition by partition */
  for (size_t j = 0; j < nparts && !res->fallback; j++)
    for (long long i = parts[j][0]; i < parts[j][1]; i++) {
      double delta = scores[i] - phi;
      if (!(delta > lower && delta < upper)) {
        res->fallback = 1;
        res->guard_part = j;
        res->guard_index = (size_t)i;
        res->guard_delta = delta;
        break;
      }
    }
  if (!res->fallback) {
    /* one exponential frame: partials add without rescaling */
    double den = 0;
    for (size_t x = 0; x < d; x++) o[x] = 0;
    for (size_t j = 0; j < nparts; j++)
      for (long long i = parts[j][0]; i < parts[j][1]; i++) {
        double e = exp(scores[i] - phi);
        den += e;
        for (size_t x = 0; x < d; x++) o[x] += e * values[(size_t)i * d + x];
      }
    for (size_t x = 0; x < d; x++) o[x] /= den;
    res->lse = phi + log(den);
    return 0;
  }
  /* synchronized partial softmax: each partition's own max, exact merge (0x02) */
  struct ss_state *st = DKB_CALLOC(nparts + 1, sizeof *st);
  double *u = DKB_CALLOC((nparts + 1) * d, sizeof *u), *scratch = DKB_CALLOC(nparts * d, sizeof *scratch);
  for (size_t j = 0; j <= nparts; j++) st[j].u = u + j * d;
  for (size_t j = 0; j < nparts; j++)
    ss_summarize(scores, values, NULL, (size_t)parts[j][0], (size_t)parts[j][1], d, SS_F64, &st[j]);
  ss_reduce(st, NULL, nparts, d, SS_SEQUENTIAL, SS_F64, &st[nparts], scratch);
  ss_finalize(&st[nparts], d, o, &res->lse);
  free(st);
  free(u);
  free(scratch);
  return 0;
}
