/* dkb/backend.h - the backend ABI of dkb, version 1: how any decode-attention kernel (dkb's own, a
 * library's, one an engineer is writing) is admitted, planned, launched and put under dkb's evidence
 * ladder. Plain C (C99 and C++ both include it); nothing here depends on the rest of dkb.
 *
 * A plugin is a shared library that exports one function, DKB_PLUGIN_ENTRY_NAME, returning a table
 * of its backends (struct dkb_plugin). dkb loads it with --plugin PATH or DKB_PLUGIN_PATH, refuses it
 * when the entry point is missing or its abi_version is not DKB_BACKEND_ABI_VERSION, and registers
 * every backend beside its own: one registry, one admission path, one evidence path.
 *
 * One call goes through a backend like this (dkb owns every buffer, the stream and the timing):
 *
 *   admit(self, call)        scalars only: may the backend run this call? every failed check is one
 *                            reason with its factor letter (article 0x07B), none means eligible
 *   plan(self, call, &plan)  host arrays readable: what it will launch (splits, workspaces and their
 *                            kinds, kernels, conventions, a plan document); returns its state. May query
 *                            the device (properties, occupancy) and allocate host memory; must not
 *                            allocate device memory, copy to the device or launch
 *   -- dkb allocates the workspaces, zeroes the zero-on-first-use ones --
 *   setup(state, call, ws)   device pointers valid: upload plan data into persistent workspaces; may
 *                            synchronize; not timed
 *   -- dkb poisons O, LSE and every scratch workspace with NaN --
 *   launch(state, call, ws, stream)   enqueue only (see DKB_LAUNCH_*); called for the traced call,
 *                            every timed sample, the repeat check and the counters pass
 *   release(state)
 *
 * DKB_BACKEND_ABI_VERSION pins the layout of every struct here: a field added or moved is a new ABI
 * version, which dkb refuses to load against this one (the size members catch a mismatched build).
 *
 * Every function returns 0 on success; otherwise it returns DKB_BACKEND_ERROR (or a positive
 * cudaError_t value from a CUDA call) and last_error(state) says why. admit's return value is about
 * the plugin, not the call: a call it refuses is 0 with reasons. A C++ plugin catches every exception
 * at this boundary; one that escapes, or a crash inside a plugin, takes the dkb process down.
 *
 * Tensors (all dense, last dimension contiguous, in dkb's layouts; oracles/kv_address.h has the
 * address formulas):
 *   q      [B][q_len][H_q][d_qk]             dtype
 *   o      [B][q_len][H_q][d_v]              dtype (all-masked rows: see DKB_EMPTY_*)
 *   lse    [B][q_len][H_q] fp32, or NULL when the call returns none (log base: DKB_LSE_*)
 *   k, v   contiguous NHD [cache_rows][T_cap][H_kv][d], HND [cache_rows][H_kv][T_cap][d],
 *          ragged [indptr[B]][H_kv][d], paged NHD [num_pages][P][H_kv][d], paged HND
 *          [num_pages][H_kv][P][d]; request b reads keys [0, kv_len[b]) of its row, pages or range.
 * Query row i of request b sits at key position kv_len[b] - q_len + i (bottom-right aligned). */
#ifndef DKB_BACKEND_H
#define DKB_BACKEND_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DKB_BACKEND_ABI_VERSION 1u
#define DKB_PLUGIN_ENTRY_NAME "dkb_plugin_entry_v1"
#define DKB_BACKEND_ERROR (-1)

/* ---- the call ------------------------------------------------------------------------------------ */

enum dkb_abi_dtype { DKB_ABI_F16 = 0, DKB_ABI_BF16 = 1, DKB_ABI_F32 = 2 };
enum dkb_abi_phase { DKB_ABI_DECODE = 0, DKB_ABI_APPEND = 1 };  /* append: write the q_len new rows first */
enum dkb_abi_layout {
  DKB_ABI_CONTIGUOUS_NHD = 0, DKB_ABI_CONTIGUOUS_HND = 1, DKB_ABI_RAGGED_NHD = 2, DKB_ABI_PAGED_NHD = 3,
  DKB_ABI_PAGED_HND = 4
};
enum dkb_abi_table { DKB_ABI_TABLE_NONE = 0, DKB_ABI_TABLE_DENSE = 1, DKB_ABI_TABLE_CSR = 2 };
enum dkb_abi_mask { DKB_ABI_MASK_NONE = 0, DKB_ABI_MASK_CAUSAL = 1, DKB_ABI_MASK_SLIDING_WINDOW = 2,
                    DKB_ABI_MASK_FLASHMASK = 3 };
enum dkb_abi_split { DKB_ABI_SPLIT_FIXED = 0, DKB_ABI_SPLIT_AUTO = 1, DKB_ABI_SPLIT_CHUNK = 2 };
/* The most splits a call may ask for: fixed splits and capacity, and auto's max_splits, which defaults
 * to it (no cap but the backend's own). */
#define DKB_ABI_MAX_SPLITS 1024
/* struct dkb_plan's splits when the backend cannot say how many splits its engine runs. */
#define DKB_SPLITS_UNREPORTED 0

/* One frozen decode call. In admit only the scalars are set (every pointer is NULL: admission guards
 * the page-table and mask contracts, it does not enter them, article 0x07B); in plan the host arrays
 * are set too; in setup and launch the device pointers as well. */
struct dkb_call {
  uint32_t size;             /* sizeof(struct dkb_call) of the dkb that filled it */
  uint32_t abi_version;      /* DKB_BACKEND_ABI_VERSION */
  /* environment */
  int32_t device;            /* CUDA device ordinal */
  int32_t compute_capability;/* 10 * major + minor (90 = sm_90); -1 when no device could be probed */
  int32_t sm_count;          /* 0 when unknown */
  /* operation and shapes */
  int32_t phase;             /* enum dkb_abi_phase */
  int32_t B;                 /* active requests */
  int32_t q_len;             /* query rows per request (S_q) */
  int32_t H_q, H_kv;         /* H_q % H_kv == 0 */
  int32_t d_qk, d_v;         /* head widths */
  int32_t dtype, kv_dtype;   /* enum dkb_abi_dtype of Q/O and of K/V */
  double scale;              /* softmax scale applied to q.k */
  int64_t max_kv_len;        /* max over requests of kv_len */
  int64_t total_kv_len;      /* sum over requests */
  /* K/V cache */
  int32_t layout;            /* enum dkb_abi_layout */
  int32_t table;             /* enum dkb_abi_table (paged layouts) */
  int64_t page_size;         /* paged: P */
  int64_t num_pages;         /* paged: pages in the pool */
  int64_t table_width;       /* paged dense: entries per block-table row */
  int64_t n_page_indices;    /* paged CSR: entries of page_indices */
  int64_t T_cap;             /* contiguous: token capacity per cache row */
  int64_t cache_rows;        /* contiguous and paged dense: rows */
  /* mask */
  int32_t mask_kind;         /* enum dkb_abi_mask */
  int64_t window, sink;      /* sliding window: keys in (q - window, q] and keys < sink are visible */
  /* split policy the call asks for */
  int32_t split_policy;      /* enum dkb_abi_split */
  int32_t splits;            /* fixed: S */
  int64_t chunk;             /* chunk: keys per split */
  int32_t max_splits;        /* auto: cap, DKB_ABI_MAX_SPLITS when the call sets none */
  /* lifecycle */
  int32_t return_lse;        /* 0: lse is NULL */
  int32_t graph;             /* the call is captured into and replayed from a CUDA graph */
  /* host arrays (plan, setup, launch) */
  const int64_t *kv_len;         /* [B] keys visible to the call, new rows included */
  const int32_t *cache_batch_idx;/* [B] contiguous and paged dense: cache row of each request */
  const int64_t *indptr;         /* ragged: [B+1] */
  const int32_t *block_table;    /* paged dense: [cache_rows][table_width], -1 = no page */
  const int32_t *page_indptr;    /* paged CSR: [B+1] */
  const int32_t *page_indices;   /* paged CSR: [n_page_indices] */
  const int32_t *last_page_len;  /* paged CSR: [B], rows used in each request's last page, 1..P */
  /* device pointers (setup, launch); the arrays above mirrored on the device */
  const void *q;
  void *o;
  float *lse;
  void *k, *v;                   /* written only by append calls */
  const void *k_new, *v_new;     /* append: [B][q_len][H_kv][d_qk] and [d_v] */
  const int64_t *d_kv_len;
  const int32_t *d_cache_batch_idx;
  const int64_t *d_indptr;
  const int32_t *d_block_table;
  const int32_t *d_page_indptr;
  const int32_t *d_page_indices;
  const int32_t *d_last_page_len;
};

/* ---- admission ----------------------------------------------------------------------------------- */

#define DKB_REASON_TEXT_MAX 112
/* One failed admission check: the factor letter of article 0x07B and a short text in dkb's style,
 * "page_size=1 unsupported" (lower case, no full stop). Factors, in evaluation order:
 *   I installed, E enabled, P phase, H hardware, D query/output dtype, K K/V dtype and cache
 *   representation, Q query length and head dims, G head grouping, L layout/strides/page size,
 *   M mask and position semantics, N numerics and determinism, C graph, workspace and lifecycle
 *   (a split policy the backend cannot honour is C). */
struct dkb_reason {
  char factor;
  char text[DKB_REASON_TEXT_MAX];
};
#define DKB_MAX_REASONS 24

/* Appends one reason to r[0..cap) when fewer than cap are held; *n counts them, the text is cut to the
 * field. Every admit (dkb's, the plugins') writes its reasons through these two, so a refusal reads the
 * same whoever refuses. */
static inline void dkb_reason_vadd(struct dkb_reason *r, int cap, int *n, char factor, const char *fmt, va_list ap) {
  if (*n >= cap) return;
  r[*n].factor = factor;
  vsnprintf(r[*n].text, sizeof r[*n].text, fmt, ap);
  (*n)++;
}
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static inline void dkb_reason_add(struct dkb_reason *r, int cap, int *n, char factor, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dkb_reason_vadd(r, cap, n, factor, fmt, ap);
  va_end(ap);
}

/* ---- the plan ------------------------------------------------------------------------------------ */

/* What dkb does with a workspace region around launches. */
enum dkb_ws_kind {
  DKB_WS_SCRATCH = 1,        /* written before read in every launch: dkb fills it with NaN before each checked launch */
  DKB_WS_ZERO_FIRST = 2,     /* must be zero before the first launch; the backend keeps it valid afterwards */
  DKB_WS_PERSISTENT = 3      /* written by setup, read by launches: dkb never touches it */
};
#define DKB_MAX_WORKSPACES 8
struct dkb_workspace {
  char name[32];             /* "float_workspace", "plan_indices", ... */
  uint64_t bytes;
  int32_t kind;              /* enum dkb_ws_kind */
  uint32_t alignment;        /* bytes; 0 = 256 */
};

/* How a backend's LSE is written; dkb converts to the natural log on the host and records it. */
enum dkb_lse_base { DKB_LSE_NATURAL = 1, DKB_LSE_BASE2 = 2 };
/* What a backend writes for a row with no visible key; dkb's contract is O = 0, LSE = -inf (0x02C). */
enum dkb_empty_row { DKB_EMPTY_ZERO_NEGINF = 1, DKB_EMPTY_ZERO_POSINF = 2, DKB_EMPTY_NAN = 3 };

/* What the launch reads or does beyond enqueueing device work on the given stream. */
enum dkb_launch_flags {
  DKB_LAUNCH_READS_HOST = 1u,  /* reads host memory that a replay would not refresh: no graph mode */
  DKB_LAUNCH_SYNCS = 2u,       /* synchronizes the stream or device: no graph mode, no stream-holding timing */
  /* its reduction order may differ from call to call (an accuracy contract, article 0x02H, 0x07G): the call
   * after the timed samples is held to the float64 oracle under the call's tolerances, not to the checked
   * call's bits. Without it a backend's repeat call must reproduce the checked output bit for bit. */
  DKB_LAUNCH_NONDETERMINISTIC = 4u
};

/* A kernel the launch runs, by how CUPTI will name it. */
enum dkb_kernel_role { DKB_KERNEL_PRODUCER = 0, DKB_KERNEL_COMBINE = 1, DKB_KERNEL_FUSED = 2, DKB_KERNEL_APPEND = 3,
                       DKB_KERNEL_OTHER = 4 };
enum dkb_kernel_match {
  DKB_MATCH_SYMBOL = 0,      /* the exact (mangled) symbol */
  DKB_MATCH_FUNCTION = 1,    /* the demangled function name without template arguments or parameters,
                              * "flashinfer::BatchDecodeWithPagedKVCacheKernel" */
  DKB_MATCH_PREFIX = 2       /* a prefix of the symbol, for generated kernel families */
};
#define DKB_MAX_KERNELS 8
#define DKB_KERNEL_NAME_MAX 256
struct dkb_kernel_decl {
  char name[DKB_KERNEL_NAME_MAX];
  int32_t role;              /* enum dkb_kernel_role */
  int32_t match;             /* enum dkb_kernel_match */
  int32_t required;          /* 1: must run in every launch; 0: may run */
};

struct dkb_plan {
  uint32_t size;             /* sizeof(struct dkb_plan) of the dkb that passed it */
  int32_t splits;            /* the most K/V splits of any request (1: no request is split; a backend may
                              * still run a merge kernel, as FlashInfer's graph-mode plan does), or
                              * DKB_SPLITS_UNREPORTED: the backend's engine picks its split and does not
                              * expose it (article 0x0BE records a split count "when exposed"); the bundle
                              * then records none, and only the launched kernels show whether it split */
  int32_t work_items;        /* producer work items (CTAs of one head group), for the record */
  int32_t n_workspaces;
  struct dkb_workspace ws[DKB_MAX_WORKSPACES];
  int32_t n_kernels;
  struct dkb_kernel_decl kernels[DKB_MAX_KERNELS];
  int32_t lse_base;          /* enum dkb_lse_base */
  int32_t empty_row;         /* enum dkb_empty_row */
  uint32_t launch_flags;     /* enum dkb_launch_flags */
  const char *plan_json;     /* a JSON object describing the plan (owned by the state, valid until release);
                              * dkb canonicalizes and digests it into the bundle's plan record */
};

/* ---- the table ----------------------------------------------------------------------------------- */

struct dkb_backend {
  const char *name;          /* unique across every loaded backend; [a-z0-9_]+, at most 47 characters */
  const char *version;       /* the backend's own version, e.g. the upstream package version */
  int32_t priority;          /* lower is preferred by auto selection; unique among loaded backends */
  const char *role;          /* one line for people */
  void *user;                /* the backend's own data (self->user in admit and plan); dkb never reads it */
  /* reasons[0..*n) receives one entry per failed check, at most cap (DKB_MAX_REASONS) */
  int (*admit)(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_reason *reasons, int cap,
               int *n);
  /* *state: the backend's per-call state, passed to everything below */
  int (*plan)(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_plan *plan, void **state);
  int (*setup)(void *state, const struct dkb_call *call, void *const *ws, void *stream);
  int (*launch)(void *state, const struct dkb_call *call, void *const *ws, void *stream);
  void (*release)(void *state);
  /* Why the last failing call failed: for state NULL, admit or plan (the plugin keeps it per thread). */
  const char *(*last_error)(void *state);
  const char *admits;        /* one line for `dkb backends`: what it admits ("paged NHD/HND, fp16/bf16, ..."); may be NULL */
};

struct dkb_plugin {
  uint32_t abi_version;      /* DKB_BACKEND_ABI_VERSION */
  uint32_t size;             /* sizeof(struct dkb_plugin) */
  const char *name;          /* "flashinfer" */
  const char *version;       /* the plugin's version */
  int32_t n_backends;
  const struct dkb_backend *backends;
  /* dkb.source-manifest/v1 of what the plugin compiled: its adapter and the upstream files, each with
   * path, SHA-256 and symbol spans, the chain from the adapter's entry to the kernel templates, and
   * for upstream files the wheel RECORD hash (schemas/source-manifest.schema.json). */
  const char *source_manifest_json;
  /* dkb.build-report/v1: compiler, flags, upstream package name, version and archive SHA-256. */
  const char *build_report_json;
};

typedef const struct dkb_plugin *(*dkb_plugin_entry_fn)(void);

#ifdef __cplusplus
}

/* For a C++ plugin's admit: one admission's reasons as one object, so each check reads
 * r.add('L', "page_size=%d unsupported", ps); the first cap are kept, through dkb_reason_vadd. */
struct dkb_reasons {
  struct dkb_reason *out;
  int cap, n;
#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4)))
#endif
  void add(char factor, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dkb_reason_vadd(out, cap, &n, factor, fmt, ap);
    va_end(ap);
  }
};
#endif

#endif
