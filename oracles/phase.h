/* phase.h - phase integration of article 0x08 in plain C: training, prefill, append, decode and mixed
 * serving batches over one visibility algebra. A serving request is frozen as (T, C): T committed K/V
 * rows before the call, C new query rows and staged K/V rows; local row i sits at absolute position
 * T + i and sees keys [0, T + i + 1) (bottom-right causality, 0x08B). The cache append is a
 * transaction: every capacity, identity and page check runs before the first write (0x08C, 0x08H).
 * The GPU append path compares its post-call cache with phase_cache_append's, the decode reference
 * reads keys through phase_key_row, and the "phase_integration" contract fixtures check 0x08. */
#ifndef DKB_PHASE_H
#define DKB_PHASE_H

#include <stddef.h>
#include <stdint.h>

enum phase_kind { PHASE_PREFILL, PHASE_APPEND, PHASE_DECODE, PHASE_INVALID };
/* "prefill", "append", "decode", "invalid"; parse gives -1 if unknown. */
const char *phase_kind_name(enum phase_kind k);
int phase_kind_parse(const char *name);
/* prefill T = 0, C > 0; append T > 0, C > 1; decode T > 0, C = 1; anything else is invalid. */
enum phase_kind phase_classify(int64_t T, int64_t C);

/* Logical score cells of one (T, C) call (0x08B): not FLOPs, tiles or DRAM transactions. */
struct phase_cells {
  int64_t rect;          /* C * (T + C) */
  int64_t visible;       /* C * T + C * (C + 1) / 2 */
  int64_t masked;        /* rect - visible = C * (C - 1) / 2, independent of T */
  int64_t post_length;   /* T + C after a valid commit */
};
void phase_cells(int64_t T, int64_t C, struct phase_cells *out);

/* A causal visibility rule as an implementation applies it; only BOTTOM_RIGHT is the contract. */
enum phase_visibility {
  PHASE_VIS_BOTTOM_RIGHT,  /* row i sees [0, T + i + 1) */
  PHASE_VIS_UPPER_LEFT,    /* row i sees [0, i + 1): local row zero aligned with key zero */
  PHASE_VIS_ALL_STAGED,    /* row i sees [0, T + C): staged rows treated as committed */
};
/* "bottom_right_causal", "upper_left_causal", "all_staged"; parse gives -1 if unknown. */
const char *phase_visibility_name(enum phase_visibility v);
int phase_visibility_parse(const char *name);
/* End of the key prefix [0, end) local row i (0 <= i < C) sees under rule v. */
int64_t phase_row_end(enum phase_visibility v, int64_t T, int64_t C, int64_t i);
/* Compares rule v with bottom-right causality row by row. Returns 0, or -1 with reason
 * upper_left_causal_alignment (a row loses keys it may see) or future_row_leakage (a row sees a
 * staged row after its own position) and a detail naming the first such row. */
int phase_visibility_check(enum phase_visibility v, int64_t T, int64_t C, char reason[64], char detail[256]);

/* One entry of a frozen microbatch manifest (0x08H). Entries are in active-batch (packing) order. */
struct phase_request {
  int64_t request_id;      /* stable request identity */
  int64_t cache_row_id;    /* persistent cache row it reads and commits to; never its active index */
  int64_t T;               /* committed K/V rows before the call, as the manifest froze it */
  int64_t C;               /* new query rows = staged K/V rows */
  double dropout_p;        /* serving calls must pass 0.0 explicitly */
  const char *name;        /* for messages; NULL = the numeric request_id */
};

/* Unique request ids and cache rows, a valid phase per entry, zero inference dropout. Returns 0, or
 * -1 with reason invalid_active_request, duplicate_request_id, duplicate_cache_row_id or
 * inference_dropout_nonzero. */
int phase_manifest_check(const struct phase_request *r, int64_t n, char reason[64], char detail[256]);
/* Every entry classifies as `label`; otherwise -1 with reason global_phase_label (0x08F). */
int phase_label_check(const struct phase_request *r, int64_t n, enum phase_kind label, char reason[64],
                      char detail[256]);
/* Packed query offsets: qo_indptr[0] = 0, qo_indptr[b + 1] = qo_indptr[b] + C_b ([n + 1] entries). */
void phase_qo_indptr(const struct phase_request *r, int64_t n, int64_t *qo_indptr);

/* Work ledgers of a mixed batch (0x08F). */
struct phase_batch {
  int64_t rect, visible, masked;   /* sums of the per-request cells */
  int64_t appended;                /* sum of C_b: rows committed */
  int64_t max_C, max_post;         /* largest C_b and T_b + C_b */
  int64_t padded_envelope;         /* n * max_C * max_post: a common padded tensor envelope */
  int64_t outside_envelope;        /* padded_envelope - rect: cells outside every request's rectangle */
};
void phase_batch_ledger(const struct phase_request *r, int64_t n, struct phase_batch *out);
/* A measured-work claim must come from a profiler counter. Returns 0 when counter names one, else -1
 * with reason padded_envelope_as_measured_work (the claim is the padded envelope) or
 * measured_work_without_counter. */
int phase_measured_cells_check(const struct phase_batch *b, int64_t cells, const char *counter, char reason[64],
                               char detail[256]);

#define PHASE_NO_OWNER (-1)

/* A persistent K/V cache in logical form: position p of cache row r is data[(r * capacity + p) * row_bytes].
 * With page_size > 0, position p of row r lives in physical page block_table[r * (capacity / page_size)
 * + p / page_size]; the append checks that every written position is mapped to a page of the pool and
 * that no other cache row maps that page. */
struct phase_cache {
  int64_t rows;                 /* cache rows, addressed by cache_row_id */
  int64_t capacity;             /* positions allocated per row (a multiple of page_size when paged) */
  size_t row_bytes;             /* bytes of one position: 8 for a token id, H_kv * d * b for a K row */
  int64_t *len;                 /* [rows] committed length */
  const int64_t *owner;         /* [rows] request id holding the row, or PHASE_NO_OWNER; NULL = untracked */
  unsigned char *data;          /* [rows][capacity][row_bytes] */
  int64_t page_size;            /* 0: contiguous rows */
  const int32_t *block_table;   /* [rows][capacity / page_size] physical page or -1 */
  int64_t num_pages;            /* physical pool size */
};

/* Checks the whole mutation contract of a manifest against the cache without writing anything:
 * phase_manifest_check, then per entry cache_row_out_of_range, cache_row_identity_mismatch (owner is
 * not the request), stale_committed_length (T differs from the row's committed length),
 * cache_capacity_exceeded (T + C > capacity), unmapped_cache_page, shared_cache_page. Returns 0 or -1. */
int phase_append_check(const struct phase_cache *c, const struct phase_request *r, int64_t n, char reason[64],
                       char detail[256]);
/* The append transaction: phase_append_check, then each entry's C staged rows (packed in manifest order:
 * entry b's row i is new_rows[(qo_indptr[b] + i) * row_bytes]) are copied to positions [T, T + C) of its
 * cache row and len becomes T + C. Returns 0, or -1 with the reason and the cache untouched. It works in
 * place: to get the expected post-call cache of a GPU append, run it on a copy of the pre-call cache
 * (a paged GPU cache is compared position by position through its block table). */
int phase_cache_append(struct phase_cache *c, const struct phase_request *r, int64_t n, const void *new_rows,
                       char reason[64], char detail[256]);
/* The invalid order of 0x08I, kept so fixtures can show what it does: entry by entry, the staged rows
 * that fit are written and len is advanced BEFORE that entry's checks run; the first failing check
 * stops. Returns 0 when nothing failed, else -1 with that check's reason; *written counts positions
 * mutated before the failure and *outside positions that had nowhere to go (past capacity, unmapped,
 * or in a nonexistent row). */
int phase_cache_append_unvalidated(struct phase_cache *c, const struct phase_request *r, int64_t n,
                                   const void *new_rows, int64_t *written, int64_t *outside, char reason[64],
                                   char detail[256]);

/* Bytes of key k (0 <= k < T + C) as entry r's queries see it during the call: committed position k of
 * its cache row when k < T, its staged row k - T otherwise (staged = the entry's C new rows). */
const void *phase_key_row(const struct phase_cache *c, const struct phase_request *r, const void *staged, int64_t k);

/* Causal training over a sequence of S rows (0x08E): the visibility algebra of T = 0, C = S, but
 * different owned state. */
struct phase_training {
  int64_t S;                    /* sequence length */
  double dropout_p;             /* dropout probability of the forward pass */
  int backward;                 /* the call produces dQ, dK, dV */
  int saves_lse;                /* LSE (or recompute state) saved for backward */
  int saves_rng_state;          /* dropout RNG state saved (or an equivalent reproducible contract) */
  int writes_serving_cache;     /* the call writes persistent serving-cache rows */
};
/* Returns 0, or -1 with reason training_without_backward, training_missing_lse,
 * training_missing_rng_state (dropout_p > 0) or training_mutates_cache. */
int phase_training_check(const struct phase_training *t, char reason[64], char detail[256]);

#endif
