/* decode_call.h - one frozen decode call: the dkb.decode/v1 fixture (schemas/decode.schema.json)
 * loaded, checked field by field, and turned into the readable call key (article 0x07A, 0x0BE).
 * Everything downstream (plan, inputs, oracle, kernels, bundle) reads this struct, never the JSON. */
#ifndef DKB_DECODE_CALL_H
#define DKB_DECODE_CALL_H

#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

enum call_phase { PHASE_DECODE, PHASE_APPEND };
enum split_policy { SPLIT_FIXED, SPLIT_AUTO, SPLIT_CHUNK };
enum mask_program_kind { MASKGEN_EXPLICIT, MASKGEN_DOCUMENTS };

/* A paged fixture's pool holds this many unused pages unless /cache/pool_extra_pages says otherwise. */
#define DKB_POOL_EXTRA_PAGES 8

struct decode_call {
  char file[512];            /* fixture path */
  char name[128];
  char fixture_sha256[65];   /* canonical-JSON digest of the fixture document */
  int phase;                 /* enum call_phase: append writes the q_len new K/V rows first */
  int B;                     /* active requests */
  int C;                     /* query rows per request (S_q), 1..4 */
  int64_t *kv_len;           /* [B] keys visible to the call, new rows included */
  int32_t *cache_row;        /* [B] cache_batch_idx / dense block-table row of each request */
  int H_q, H_kv, dk, dv;
  int dtype;                 /* enum dkb_dtype: DKB_F16, DKB_BF16 or DKB_F32 (Q, K, V, O) */
  double scale;              /* softmax scale, default 1/sqrt(dk) */
  /* cache layout */
  int layout;                /* enum kv_layout_kind */
  int table;                 /* enum kv_table_kind */
  int64_t page_size;         /* paged */
  int64_t pool_extra_pages;  /* paged: unused pool pages (poisoned), DKB_POOL_EXTRA_PAGES unless the fixture says */
  int shuffle_pages;         /* paged: physical page ids are a seeded permutation */
  int64_t shuffle_group;     /* shuffled pages: permuted within consecutive groups of this many pool pages; 0: the pool */
  int64_t T_cap;             /* contiguous: capacity per cache row */
  int64_t cache_rows;        /* contiguous / dense table rows */
  /* mask */
  int mask_kind;             /* enum mask_kind */
  int64_t window, sink;      /* sliding window */
  int mask_program;          /* flashmask: enum mask_program_kind */
  int documents;             /* flashmask documents per request (equal lengths, query in the last) */
  json_t *mask_columns;      /* flashmask explicit: per request [[UTS,UTE,LTS,LTE], ...] (borrowed) */
  /* split policy and workspace */
  int split_policy;          /* enum split_policy */
  int splits, capacity;      /* fixed: S and S_capacity >= S */
  int64_t chunk;             /* chunk: keys per split */
  int max_splits;            /* auto: cap (default DKB_ABI_MAX_SPLITS) */
  int abi;                   /* DKB_ABI_MLU or DKB_ABI_LSE_O (kernels/decode.h) */
  int ws_o_dtype;            /* LSE_O: DKB_BF16 or DKB_F32 */
  int return_lse, graph;
  char backend[48];          /* "auto" or a backend name (DK_BACKEND_NAME_MAX) */
  uint64_t seed;
  double atol, rtol;         /* output tolerance: |gpu - ref| <= atol + rtol * |ref| */
  double lse_atol, lse_rtol; /* LSE tolerance (infinities must match exactly) */
  json_t *doc;               /* the fixture document (owned) */
};

/* Loads and checks a fixture: unknown keys, types, ranges and cross-field rules (H_q % H_kv, capacity,
 * cache rows distinct, page sizes, window >= 1, ...) are errors with file + JSON Pointer. */
int decode_call_load(const char *path, struct decode_call *c, struct dkb_err *err);
int decode_call_from_json(const char *name, json_t *doc, struct decode_call *c, struct dkb_err *err);
void decode_call_release(struct decode_call *c);

/* The readable call key of 0x0BE (phase, B, S_q, S_k_per_request, H_q, H_kv, d_qk, d_v, dtypes, cache
 * layout, page size, mask, split policy, workspace ABI, graph mode, backend request, tolerance, ...). */
json_t *decode_call_key(const struct decode_call *c);
/* Total bytes of K and V payload that are visible (unique, by K/V head): sum_b N_b * H_kv * (dk + dv) * e
 * (call_key_kv_bytes, the formula dkb validate recomputes the bundle's ledger with). */
int64_t decode_call_kv_bytes(const struct decode_call *c);
/* Bytes of Q read and O written: B * C * H_q * (dk + dv) * e (call_key_qo_bytes). */
int64_t decode_call_qo_bytes(const struct decode_call *c);

#endif
