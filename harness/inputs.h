/* inputs.h - the host tensors of one decode call, laid out as the kernel reads them.
 * Values are a pure function of (seed, tensor, request, position, head, lane), so every layout and
 * split policy of the same call holds the same logical Q/K/V. Everything a correct kernel must never
 * read is poisoned with NaN: capacity beyond each request's keys, page tails, unused pool pages and
 * cache rows, and (append) the new rows before the call writes them. Addresses come from
 * oracles/kv_address.h and mask arrays from oracles/mask.h: one implementation of each. */
#ifndef DKB_INPUTS_H
#define DKB_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "harness/decode_call.h"
#include "lib/err.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"

struct decode_inputs {
  struct kv_layout L;         /* points into the arrays below; L.len = call->kv_len */
  int32_t *cache_batch_idx;   /* [B] */
  int64_t *indptr;            /* ragged: [B+1] */
  int32_t *block_table;       /* paged dense: [cache_rows][table_width], -1 = no page */
  int32_t *page_indptr;       /* paged CSR: [B+1] */
  int32_t *page_indices;      /* paged CSR */
  int32_t *last_page_len;     /* paged CSR: [B] */
  int64_t n_page_indices;     /* entries of page_indices */
  int esize;                  /* bytes per element of Q/K/V/O */
  void *q;                    /* [B][C][H_q][dk] */
  void *k, *v;                /* caches: state before the call */
  size_t q_bytes, k_bytes, v_bytes;
  void *k_new, *v_new;        /* append: [B][C][H_kv][dk] / [dv]; NULL for decode */
  size_t new_k_bytes, new_v_bytes;
  /* mask */
  struct mask_program mask;   /* points into the arrays below */
  int64_t *col_indptr;        /* flashmask: [B+1] */
  int32_t *uts, *ute, *lts, *lte;
  int64_t fm_block;           /* summary block (keys), the kernel tile */
  int32_t *fm_summary;        /* [sum_indptr[B]][8] */
  int64_t *fm_sum_indptr;     /* [B+1] */
  int64_t poisoned_elems;     /* K+V elements holding poison (never to be read) */
};

/* The value of one logical element, in [-1, 1) before rounding to the storage dtype. tensor: 0 Q, 1 K, 2 V. */
double inputs_value(uint64_t seed, int tensor, int64_t b, int64_t pos, int64_t head, int64_t x);

/* What a call will hold, computed from the fixture alone so a call too large for the machine is refused
 * before anything is allocated: the K and V tensors' bytes (exactly what inputs_build allocates), every
 * host buffer a run keeps at once (inputs, the oracle, the downloaded outputs, an append's cache copies),
 * and the device buffers dkb allocates before the backend's workspaces. */
struct inputs_footprint {
  long long kv_bytes, host_bytes, device_bytes;
};
void inputs_footprint(const struct decode_call *c, struct inputs_footprint *f);
/* 0 when the machine's MemAvailable (/proc/meminfo) holds f->host_bytes, or when it cannot be read; else
 * -1 with DKB_ENV "needs N bytes of host memory, M available". */
int inputs_check_host_memory(const struct decode_call *c, const struct inputs_footprint *f, struct dkb_err *err);

/* Builds everything; fm_block is the kernel's tile (flashmask summaries). */
int inputs_build(const struct decode_call *c, int64_t fm_block, struct decode_inputs *in, struct dkb_err *err);
void inputs_release(struct decode_inputs *in);
/* Row (b, t, h, 0..d) of K (which 0) or V (1) widened to double, as the call sees it: for append the new rows come from
 * k_new/v_new, which is what the cache holds once the call has written them. */
void inputs_kv_row(const struct decode_call *c, const struct decode_inputs *in, int which, int64_t b, int64_t t,
                   int64_t h, double *out);
/* The expected cache after an append (a copy of k or v with the new rows written through the address
 * translator); malloc'ed, caller frees. */
void *inputs_expected_cache(const struct decode_call *c, const struct decode_inputs *in, int which);

#endif
