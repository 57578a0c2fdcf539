/* registry.h - backend admission, selection and plan state (article 0x07).
 * A call is frozen into one immutable dispatch key (0x07A) and checked for meaning first: a malformed
 * call is an error with reasons, never "unsupported". A registry is a table of backends (data): each
 * has a name, a priority, a candidate domain (platforms, phases) and one predicate per admission
 * factor I,E,P,H,D,K,Q,G,L,M,N,C (0x07B) that appends one reason per failed check. dispatch_admit
 * runs the four stages of 0x07C - registry, candidate domain, eligibility (the complete rejection
 * vector of every in-domain candidate, above and below the winner), policy (forced: fail closed with
 * the forced backend's reasons; auto: first eligible by priority) - and admission_to_json turns the
 * result into the level-4 admission record (schemas/admission.schema.json, "dkb.admission/v1").
 * The four teaching backends of 0x07D are one table (registry_teaching.c); dkb's own CUDA backends
 * are another table with their own predicates, run through the same dispatch_admit. */
#ifndef DKB_REGISTRY_H
#define DKB_REGISTRY_H

#include <stddef.h>

#include <jansson.h>

#include "oracles/dtype.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/jread.h"

/* ---- the dispatch key (0x07A) ---------------------------------------------------------------- */

enum dk_device { DK_CPU, DK_CUDA, DK_DEVICE_COUNT };                   /* "cpu", "cuda" */
enum dk_phase {                                                         /* operation O */
  DK_DECODE, DK_PREFILL, DK_APPEND, DK_MIXED, DK_TRAINING_FORWARD, DK_TRAINING_BACKWARD, DK_PHASE_COUNT
};
enum dk_layout {                                                        /* K/V cache representation */
  DK_CONTIGUOUS_NHD, DK_CONTIGUOUS_HND, DK_RAGGED, DK_PAGED_NHD, DK_PAGED_HND, DK_LAYOUT_COUNT
};
enum dk_mask { DK_MASK_NONE, DK_MASK_CAUSAL, DK_MASK_SLIDING_WINDOW, DK_MASK_DENSE_CUSTOM, DK_MASK_FLASHMASK,
               DK_MASK_COUNT };

/* Spellings used in the key JSON ("decode", "paged_nhd", "dense_custom", ...); NULL terminated. */
extern const char *const DK_DEVICE_NAMES[], *const DK_PHASE_NAMES[], *const DK_LAYOUT_NAMES[],
    *const DK_MASK_NAMES[];
int dk_layout_is_paged(enum dk_layout l);

/* Optional integer fields hold DK_ABSENT when the key has no value (JSON null). */
#define DK_ABSENT (-1LL)
#define DK_BACKEND_NAME_MAX 48

struct dispatch_key {
  /* environment E */
  enum dk_device device_type;
  long long device_index;           /* the N of cuda:N; 0 on cpu */
  long long compute_capability;     /* 10*major + minor (90 = sm_90); DK_ABSENT on cpu */
  /* operation O */
  enum dk_phase phase;
  /* tensors T */
  long long batch;                  /* B */
  long long q_len;                  /* S_q, query rows per request */
  long long kv_len;                 /* S_k, visible K/V rows (max over requests) */
  long long num_q_heads;            /* H_q */
  long long num_kv_heads;           /* H_kv; H_q % H_kv == 0 for MHA/MQA/GQA */
  long long head_dim_qk;            /* d_qk */
  long long head_dim_vo;            /* d_v */
  enum dkb_dtype dtype;             /* Q and O storage dtype */
  enum dkb_dtype kv_dtype;          /* K and V storage dtype */
  int last_dim_contiguous;          /* stride(-1) == 1 for Q, K, V, O */
  /* semantics S */
  enum dk_mask mask_kind;
  long long window;                 /* sliding-window width; DK_ABSENT unless mask_kind is sliding_window */
  double dropout_p;                 /* in [0, 1] */
  int training;                     /* forward of a training step (phase training_*) */
  /* runtime controls R */
  char backend_request[DK_BACKEND_NAME_MAX]; /* "auto" or the name of one backend (forced) */
  int requires_deterministic;       /* run-to-run bitwise reproducibility requested */
  int cuda_graph;                   /* the call is captured into / replayed from a CUDA graph */
  enum dk_layout cache_layout;
  long long page_size;              /* tokens per page; DK_ABSENT unless the layout is paged */
  enum dk_device workspace_device_type; /* where the split workspace lives */
  long long workspace_device_index;
  long long workspace_bytes;        /* caller-supplied workspace capacity; DK_ABSENT = not bounded */
};

/* Defaults of the optional fields: batch 1, cuda:0, workspace on the call's device, no window, no
 * page size, unbounded workspace, "auto". The required fields are zeroed (a malformed call). */
void dispatch_key_init(struct dispatch_key *k);

/* Semantic validation (0x07A), before any backend is asked: appends one reason per violated rule
 * ("q_len=0 must be > 0", "num_q_heads=30 is not a multiple of num_kv_heads=8", ...) and returns
 * how many it appended; 0 means the call is well formed. */
struct admit_reasons;
size_t dispatch_key_check(const struct dispatch_key *k, struct admit_reasons *why);

/* The readable key as JSON. DK_TEACHING is exactly the twenty fields of 0x07A whose canonical digest
 * the article prints; DK_FULL adds batch, device_index, window, workspace_device, workspace_bytes. */
enum dk_form { DK_TEACHING, DK_FULL };
json_t *dispatch_key_to_json(const struct dispatch_key *k, enum dk_form form);
/* SHA-256 of the canonical form (lib/cjson.h). The base call of 0x07D gives
 * f4813d5b08179c23e85c587f0da636b380caeb8338e74c0c4a5faa87cd66d2eb in DK_TEACHING form. */
int dispatch_key_digest(const struct dispatch_key *k, enum dk_form form, char hex[65], struct dkb_err *err);
/* Reads a key object (the twenty teaching fields required, the DK_FULL extras optional). Types and
 * spellings are checked here (a document error with its JSON Pointer); values are not, so a
 * malformed call still reaches dispatch_key_check and becomes a malformed_call_error. */
int dispatch_key_read(struct jr *r, const json_t *obj, const char *ptr, struct dispatch_key *k);
/* The JSON name of the i-th of the twenty teaching fields (DK_TEACHING, in the reader's order), NULL
 * past the last. */
const char *dispatch_key_teaching_field(size_t i);

/* ---- reasons and backends (0x07B) ------------------------------------------------------------ */

enum admit_factor { ADMIT_I, ADMIT_E, ADMIT_P, ADMIT_H, ADMIT_D, ADMIT_K, ADMIT_Q, ADMIT_G, ADMIT_L, ADMIT_M,
                    ADMIT_N, ADMIT_C, ADMIT_NFACTORS };
/* "IEPHDKQGLMNC": the letter of each factor, in evaluation order. */
extern const char ADMIT_FACTOR_LETTERS[ADMIT_NFACTORS + 1];

#define ADMIT_MAX_REASONS 24
#define ADMIT_REASON_MAX 112
/* An ordered reason vector. Overflow past ADMIT_MAX_REASONS is counted in `dropped`, never silent. */
struct admit_reasons {
  size_t n;
  size_t dropped;
  char factor[ADMIT_MAX_REASONS];                 /* factor letter, or 0 for semantic/domain reasons */
  char text[ADMIT_MAX_REASONS][ADMIT_REASON_MAX]; /* "head_dim_qk=80 unsupported" */
};
void admit_reasons_clear(struct admit_reasons *r);
/* Appends one reason; the factor letter is stamped by dispatch_admit. */
void admit_fail(struct admit_reasons *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct dispatch_backend;
/* One admission factor of one backend: append a reason for every failed check, nothing when it holds.
 * A predicate reads only the key and b->caps; it must not look at page tables or mask programs
 * (0x07B: admission guards those contracts, it does not enter them). */
typedef void (*admit_predicate)(const struct dispatch_backend *b, const struct dispatch_key *k,
                                struct admit_reasons *out);

struct dispatch_backend {
  const char *name;                     /* unique in its registry; what backend_request names */
  int priority;                         /* lower is preferred by the auto policy; unique */
  unsigned platforms;                   /* candidate domain: bit (1u << enum dk_device) */
  unsigned phases;                      /* candidate domain: bit (1u << enum dk_phase) */
  admit_predicate admit[ADMIT_NFACTORS]; /* indexed by enum admit_factor; NULL = the factor holds */
  const void *caps;                     /* backend-specific data its predicates read */
  const char *role;                     /* one line for people */
};

#define DISPATCH_MAX_BACKENDS 32
struct dispatch_registry {
  const char *name;                     /* "teaching", "dkb_cuda", ... recorded in the admission record */
  const struct dispatch_backend *backends;
  size_t n;                             /* <= DISPATCH_MAX_BACKENDS */
};

/* 0 when names and priorities are unique, n is in range and every backend has a non-empty domain;
 * otherwise -1 with why filled (a programmer error: tables are code). */
int dispatch_registry_check(const struct dispatch_registry *reg, char *why, size_t n);

/* The four teaching backends of 0x07D (registry_teaching.c). */
extern const struct dispatch_registry dispatch_teaching_registry;
/* Registries a document may name ("teaching"); NULL when unknown. */
const struct dispatch_registry *dispatch_registry_find(const char *name);

/* ---- admission and selection (0x07C) --------------------------------------------------------- */

enum admission_outcome {
  ADM_SELECTED,                  /* the first in-domain candidate by priority was eligible */
  ADM_SELECTED_AFTER_FALLBACK,   /* a higher-priority in-domain candidate was rejected (backend fallback) */
  ADM_FORCED_ERROR,              /* the forced backend is absent, out of domain or rejected: its reasons */
  ADM_NO_ELIGIBLE,               /* auto policy, every in-domain candidate rejected (or none in domain) */
  ADM_MALFORMED_CALL,            /* dispatch_key_check failed: no backend was asked */
};
/* "selected", "selected_after_backend_fallback", "forced_error", "no_eligible_error",
 * "malformed_call_error". */
const char *admission_outcome_name(enum admission_outcome o);

struct admission_candidate {
  const struct dispatch_backend *backend;
  int in_domain;                 /* platform and phase match */
  int eligible;                  /* in domain and every factor holds */
  struct admit_reasons domain;   /* why it left the candidate domain ("phase=decode not in domain") */
  struct admit_reasons reasons;  /* complete rejection vector, factor order (in-domain candidates only) */
};

/* About 180 KB (every candidate keeps two reason vectors): keep it static or on the heap in deep or
 * threaded call stacks. */
struct admission {
  const struct dispatch_registry *registry;
  struct dispatch_key key;
  enum admission_outcome outcome;
  int forced;                    /* backend_request names a backend */
  int selected;                  /* index into cand, -1 when nothing was selected */
  size_t n;                      /* every registered backend, priority order (0 for a malformed call) */
  struct admission_candidate cand[DISPATCH_MAX_BACKENDS];
  struct admit_reasons malformed; /* the semantic reasons of a malformed call */
  struct admit_reasons error;     /* what a forced error returns: the forced backend's reasons */
};

/* 1 when a backend request is "auto" or names a backend of reg. Else 0, with why appended: "'x' is not
 * a backend of registry R (known: auto, a, b)". A request nothing could satisfy is the caller's input
 * error, not an admission outcome (the admission oracle still records it as forced_error for contract
 * fixtures). */
int dispatch_request_known(const struct dispatch_registry *reg, const char *request, struct dkb_buf *why);
/* Appends one line for people: why admission selected nothing (a forced backend's reasons, every
 * in-domain candidate's reasons, or the malformed call's). Nothing when a backend was selected. */
void admission_why_none(const struct admission *a, struct dkb_buf *out);

/* order[0..n) = the indices of priority[0..n), lowest (most preferred) first, ties in index order: the
 * order in which the auto policy considers backends. */
void dispatch_priority_order(const int *priority, size_t n, size_t *order);

/* Runs every stage for key k against reg; returns the selected backend, or NULL with a->outcome
 * saying why. Never falls back from a forced request. */
const struct dispatch_backend *dispatch_admit(const struct dispatch_registry *reg, const struct dispatch_key *k,
                                              struct admission *a);
/* 1 for ADM_SELECTED_AFTER_FALLBACK: a rejected in-domain backend ranks above the winner. */
int admission_backend_fallback(const struct admission *a);

#define ADMISSION_CLAIM_CEILING "backend_selection_only_not_kernel_execution_or_performance"

/* The admission record, schema "dkb.admission/v1" (schemas/admission.schema.json):
 *   registry, key (DK_FULL), key_digest (of key), teaching_key_digest (DK_TEACHING form),
 *   plan_key, plan_key_digest (the 0x07F projection), policy ("auto"|"forced"), requested_backend,
 *   malformed_reasons, candidate_order (all backends by priority), candidate_domain, eligible,
 *   candidates [{backend, priority, in_domain, domain_reasons, eligible, reasons, failed_factors}],
 *   outcome, selected (name|null), backend_fallback, fallback_from, error_reasons, claim_ceiling.
 * A malformed call lists no candidates: no backend was asked. NULL only on a digest failure. */
json_t *admission_to_json(const struct admission *a, struct dkb_err *err);

/* Checks a recorded (claimed) admission record - possibly partial: only the members present are
 * checked - against the recomputation `a` (the level-4 check: digests recompute, the selection is
 * eligible, a forced request never falls back). Returns 0 when consistent, or 1 with a snake_case
 * reason, the named 0x07J failures first: selection_is_not_execution, determinism_missing_from_key,
 * key_mismatch, key_digest_mismatch, malformed_call_admitted, malformed_call_reported_unsupported,
 * forced_backend_fallback, wrong_phase_fallback, wrong_platform_candidate,
 * paged_cache_without_address_contract, truncated_rejection_vector, rejection_vector_stops_at_winner,
 * candidate_missing, rejection_vector_mismatch, eligibility_mismatch, fallback_mismatch,
 * ineligible_backend_selected, selection_mismatch, outcome_mismatch; then record_mismatch for any other
 * member that differs. -1 when the claim is not well formed (r->err). */
int admission_verify(struct jr *r, const json_t *claimed, const char *ptr, const struct admission *a,
                     char reason[64], char *detail, size_t detail_n);

/* ---- plan state (0x07F) ---------------------------------------------------------------------- */

/* The static projection P the teaching plan()/run() wrapper freezes. K/V lengths, batch and page-list
 * contents are dynamic only under the declared pre-bound-buffer update protocol, so they are absent. */
struct plan_key {
  enum dk_device device_type;
  long long device_index;
  enum dk_device workspace_device_type;
  long long workspace_device_index;
  enum dk_layout kv_layout;
  long long page_size;              /* DK_ABSENT when not paged */
  long long num_q_heads, num_kv_heads, head_dim_qk, head_dim_vo;
  enum dkb_dtype q_dtype, kv_dtype;
  int cuda_graph;
};
void plan_key_project(const struct dispatch_key *k, struct plan_key *p);
/* {cuda_graph, device, head_dim_qk, head_dim_vo, kv_dtype, kv_layout, num_kv_heads, num_q_heads,
 *  page_size, q_dtype, workspace_device}; the base call of 0x07D digests to
 * 2a378ec0dc32475c6b2cf67212cd405d9184e23d54d27eeb1c57471ad470c3a8. */
json_t *plan_key_to_json(const struct plan_key *p);
int plan_key_digest(const struct plan_key *p, char hex[65], struct dkb_err *err);
/* The JSON names of the fields that differ, in name order, into changed[0..max); returns how many
 * differ. 0 means the plan may be reused for this run; anything else requires a new plan(). */
size_t plan_key_diff(const struct plan_key *planned, const struct plan_key *run, const char **changed, size_t max);

#endif
