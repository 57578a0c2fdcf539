/* ledger.h - launch and storage ledgers of article 0x03 in plain C (exact integer byte counts).
 * A ragged GQA split-KV decode call (per-request T_b, H_q/H_kv, d_qk/d_v, split policy, capacity,
 * dtypes) becomes: per-request split bounds, producer/reducer owner counts, workspace bytes of one
 * workspace ABI ((m,l,u) or (LSE,O), field by field), the reduction-path round trip and the logical
 * Q and K/V ledgers. The decode planner sizes its workspace with these functions, the bundle writer
 * records their ledgers, and the "launch_storage" contract fixtures check them against 0x03.
 * Every number here is a LOGICAL ledger: none of them is measured DRAM traffic (0x03F). */
#ifndef DKB_LEDGER_H
#define DKB_LEDGER_H

#include <stdint.h>

#include "oracles/dtype.h"

/* How each request's [0, T_b) is cut into splits (0x03B). */
enum ledger_split_policy {
  LEDGER_SPLIT_BALANCED,     /* S splits per request, quotient/remainder: lengths differ by at most one */
  LEDGER_SPLIT_FIXED_CHUNK,  /* chunks of width `chunk`: ceil(T_b / chunk) splits, the last one shorter */
};

/* The slots each reducer (b, h_q) consumes (0x03I: producer and reducer contracts must agree). */
enum ledger_reduce_slots {
  LEDGER_REDUCE_CAPACITY,    /* split ids [0, S_capacity): the graph-stable envelope */
  LEDGER_REDUCE_CONFIGURED,  /* split ids [0, S) */
};

/* The slots each producer owner writes a state to. */
enum ledger_writes {
  LEDGER_WRITE_EVERY_SLOT,   /* every launched slot: a summary or the identity (article pseudocode) */
  LEDGER_WRITE_CONFIGURED,   /* slots [0, S), empty splits included; inactive ids s >= S exit */
  LEDGER_WRITE_NONEMPTY,     /* only splits with keys; empty and inactive owners exit without a write */
};

enum ledger_abi { LEDGER_ABI_MLU, LEDGER_ABI_LSE_O };

#define LEDGER_NO_FIELD (-1)   /* a workspace field that is not stored (0 bytes), e.g. no validity tensor */

/* One workspace ABI with the dtype of every stored field (0x03D, 0x03H). */
struct ledger_ws_abi {
  enum ledger_abi kind;
  enum dkb_dtype vec;        /* partial_u (MLU) or partial_O (LSE_O): d_v lanes per state */
  enum dkb_dtype state;      /* partial_m (MLU) or partial_LSE (LSE_O): one scalar per state */
  int state2;                /* partial_l (MLU): a dkb_dtype; LSE_O: LEDGER_NO_FIELD */
  int valid;                 /* partial_valid: a dkb_dtype, or LEDGER_NO_FIELD when emptiness is a sentinel */
};

/* One decode call as the planner freezes it. Requests are active-batch rows b = 0..B-1. */
struct ledger_call {
  int64_t B, H_q, H_kv;      /* GQA: g = H_q / H_kv, kv_head(h_q) = h_q / g */
  int64_t d_qk, d_v;         /* head width of Q/K and of V/O */
  const int64_t *T;          /* [B] visible context length of each request, >= 0 */
  enum ledger_split_policy policy;
  int64_t S;                 /* BALANCED: configured split count >= 1 */
  int64_t chunk;             /* FIXED_CHUNK: chunk width >= 1; S = max(1, max_b ceil(T_b / chunk)) */
  int64_t S_capacity;        /* launched split slots per (b, h_q), >= S; 0 means S (no envelope) */
  int64_t vec_align;         /* d_v_padded = round_up(d_v, vec_align); 0 or 1 means no padding */
  enum dkb_dtype q, k, v;    /* stored Q, K cache and V cache */
  enum dkb_dtype o, lse;     /* final output O and final LSE */
  int write_lse;             /* the reducer writes final LSE */
  enum ledger_reduce_slots reduce;
  enum ledger_writes writes;
};

/* Checks the call's shape: B, heads, widths >= 1, H_q % H_kv == 0, T_b >= 0, the policy's S or chunk
 * >= 1, S_capacity >= S, vec_align >= 0. Returns 0, or -1 with field naming the offending member by its
 * fixture key ("B", "H_kv", "T/1", "S", "chunk", "S_capacity", "vector_alignment") and msg filled
 * (lower case, no full stop). Every other ledger function assumes a call that passed this check. */
int ledger_call_check(const struct ledger_call *c, char field[32], char msg[256]);

int64_t ledger_splits(const struct ledger_call *c);       /* configured S */
int64_t ledger_capacity(const struct ledger_call *c);     /* launched S_capacity */
int64_t ledger_d_v_padded(const struct ledger_call *c);   /* round_up(d_v, vec_align) */

/* Split slot s of request b: returns 1 with its half-open [start, end) (possibly empty) when s < S,
 * 0 for an inactive capacity slot S <= s < S_capacity (start = end = T_b). */
int ledger_split_bounds(const struct ledger_call *c, int64_t b, int64_t s, int64_t *start, int64_t *end);

/* Owner counts of the teaching launch model (0x03C, 0x03G). */
struct ledger_owners {
  int64_t S, S_capacity;     /* configured and launched splits per (b, h_q) */
  int64_t producer;          /* B * H_q * S_capacity conceptual producer owners */
  int64_t active;            /* producer owners with a non-empty range */
  int64_t empty;             /* owners s < S whose range is empty */
  int64_t inactive;          /* owners S <= s < S_capacity */
  int64_t identity;          /* empty + inactive: owners that bypass to the identity state */
  int64_t reducer;           /* B * H_q */
  int64_t nonempty_merges;   /* sum over reducers of max(non-empty splits - 1, 0) */
  int64_t consumed;          /* slots the reducers read: B * H_q * (S_capacity or S) */
  int64_t unwritten_consumed;/* consumed slots no producer writes under c->writes: must be 0 */
};
void ledger_owners(const struct ledger_call *c, struct ledger_owners *out);

/* Workspace and reduction-path bytes of one ABI (0x03E, 0x03F). */
struct ledger_workspace {
  int64_t state_bytes;       /* one logical state: d_v * b_vec + scalar fields + validity */
  int64_t state_bytes_padded;/* one capacity state: d_v_padded * b_vec + scalar fields + validity */
  int64_t logical;           /* N_cfg * state_bytes, N_cfg = B * H_q * S */
  int64_t capacity;          /* N_cap * state_bytes_padded, N_cap = B * H_q * S_capacity */
  int64_t vec_bytes;         /* N_cfg * d_v * b_vec: the partial_u / partial_O tensor alone */
  int64_t state_field_bytes; /* N_cfg * b_state: one scalar tensor (partial_m or partial_LSE) */
  int64_t state2_field_bytes;/* N_cfg * b_state2: partial_l (0 for LSE_O) */
  int64_t valid_field_bytes; /* N_cfg * b_valid (0 without a validity tensor) */
  int64_t output_write;      /* B * H_q * d_v * b_O */
  int64_t lse_write;         /* write_lse ? B * H_q * b_LSE : 0 */
  int64_t reduction_path;    /* 2 * logical + output_write + lse_write */
};
void ledger_workspace(const struct ledger_call *c, const struct ledger_ws_abi *abi, struct ledger_workspace *out);

/* Logical Q and K/V ledgers (0x03F). */
struct ledger_traffic {
  int64_t q_unique;          /* B * H_q * d_qk * b_Q */
  int64_t q_demand;          /* active producer owners * d_qk * b_Q: every split with keys loads its Q row */
  int64_t kv_unique;         /* sum_b T_b * H_kv * (d_qk b_K + d_v b_V): payload by K/V head */
  int64_t kv_qhead_demand;   /* sum_b T_b * H_q * (d_qk b_K + d_v b_V): per-query-head load demand */
};
void ledger_traffic(const struct ledger_call *c, struct ledger_traffic *out);
/* q_demand + kv_qhead_demand + reduction_path: the full two-launch logical demand of one ABI. */
int64_t ledger_full_demand(const struct ledger_traffic *t, const struct ledger_workspace *w);

/* What a plan, an allocation or an evidence record declares about the call; ledger_check binds each
 * declared item to the ledger. Leave an item at its "not declared" value to skip it. */
struct ledger_claims {
  const int64_t *bounds;     /* [B][S][2] the plan's [start, end) per (request, configured split); NULL */
  int64_t alloc_splits;      /* workspace allocation's split dimension; 0 = not declared */
  int64_t alloc_width;       /* workspace allocation's vector width; 0 = not declared */
  const struct ledger_ws_abi *abi; /* the ABI the run used; NULL = no ABI-dependent item is checked */
  int64_t ws_bytes;          /* claimed workspace bytes of abi; -1 = not declared */
  int ws_capacity;           /* ws_bytes claims the capacity envelope (1) or the logical payload (0) */
  int64_t kv_demand;         /* claimed per-query-head K/V demand; -1 = not declared */
  int64_t dram_bytes;        /* claimed measured DRAM bytes; -1 = not declared */
  const char *dram_counter;  /* profiler counter the DRAM bytes were read from; NULL = none */
  int64_t output_width;      /* width of the exposed output O; -1 = not declared */
};
/* Sets every item to "not declared". */
void ledger_claims_init(struct ledger_claims *k);

/* Binds the launch, the allocation and the claims to the ledger (the failure table of 0x03J).
 * Returns 0, or -1 with reason (snake_case) and detail:
 *   split_bounds_not_per_request   a declared split reads past its request's T_b (e.g. batch-max T)
 *   split_bounds_not_partition     declared splits overlap or leave part of [0, T_b) uncovered
 *   split_bounds_policy_mismatch   a disjoint cover, but not the one the declared policy derives
 *   launch_allocation_mismatch     the allocation's split or vector dimension differs from the launch
 *   reducer_reads_unwritten_slot   a reducer consumes a slot no producer writes
 *   ledger_omits_state_fields      claimed workspace bytes leave out scalar/validity fields
 *   workspace_bytes_mismatch       claimed workspace bytes differ from the ledger otherwise
 *   unique_kv_as_qhead_demand      the unique K/V payload reported as per-query-head demand
 *   kv_demand_mismatch             claimed K/V demand differs from the ledger otherwise
 *   logical_bytes_as_dram_bytes    a DRAM claim without a profiler counter equal to a logical ledger
 *   dram_bytes_without_counter     any other DRAM claim without a profiler counter
 *   padded_width_as_output_width   the output exposes d_v_padded lanes instead of d_v
 *   output_width_mismatch          the output width differs from d_v otherwise
 * The call must have passed ledger_call_check. */
int ledger_check(const struct ledger_call *c, const struct ledger_claims *k, char reason[64], char detail[256]);

#endif
