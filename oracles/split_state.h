/* split_state.h - the split-state algebra of article 0x02 in float64.
 * One K/V split's allowed set A has the canonical summary Sigma(A) = (valid, m, l, u); the merge
 * branches on validity before any exponential, so the empty state is an exact identity. The kernels'
 * combine step, the decode reference and the contract fixtures all use these functions. */
#ifndef DKB_SPLIT_STATE_H
#define DKB_SPLIT_STATE_H

#include <stddef.h>

/* How each operation rounds: exact float64, or the article's float16 model (0x02H) that rounds the
 * result of every arithmetic operation to the nearest float16. */
enum ss_arith { SS_F64, SS_F16_EACH_OP };

struct ss_state {
  int valid;      /* nu: the allowed set is non-empty */
  double m;       /* max logit over the allowed set; -inf when empty */
  double l;       /* sum of exp(s_j - m) over the allowed set; 0 when empty */
  double *u;      /* sum of exp(s_j - m) * v_j, width d, caller-owned; zeros when empty (not / l) */
  size_t count;   /* |A|: test metadata only, a kernel does not need it */
};

/* Normalized form of the same state (0x02F): O = u / l, LSE = m + log l. */
struct ss_lse_state {
  int valid;      /* the allowed set is non-empty */
  double lse;     /* log of the partition mass; -inf when empty */
  double *o;      /* normalized output, width d, caller-owned; zeros when empty */
};

/* The empty identity e = (false, -inf, 0, 0). */
void ss_empty(struct ss_state *s, size_t d);
/* Sigma of {j in [lo, hi) : allowed[j]} (allowed NULL = all); values are row-major [n][d]. */
void ss_summarize(const double *scores, const double *values, const unsigned char *allowed, size_t lo,
                  size_t hi, size_t d, enum ss_arith ar, struct ss_state *out);
/* out = a (+) b, branching on validity first. out may alias a or b (its u buffer is written last). */
void ss_merge(const struct ss_state *a, const struct ss_state *b, size_t d, enum ss_arith ar,
              struct ss_state *out);
/* The invalid implementation of 0x02I: always the non-empty formula, so two empty states give
 * exp(-inf - -inf) = NaN. Exists only so fixtures can show the failure it causes. */
void ss_merge_unguarded(const struct ss_state *a, const struct ss_state *b, size_t d, struct ss_state *out);
/* O = u / l and LSE = m + log l; the declared all-masked policy gives O = 0, LSE = -inf. */
void ss_finalize(const struct ss_state *s, size_t d, double *o, double *lse);

void ss_to_lse(const struct ss_state *s, size_t d, struct ss_lse_state *out);
/* Inverse up to the frame: m = LSE, l = 1, u = O. */
void ss_from_lse(const struct ss_lse_state *s, size_t d, struct ss_state *out);
/* The (LSE, O) merge of 0x02F; out may alias a or b. */
void ss_merge_lse(const struct ss_lse_state *a, const struct ss_lse_state *b, size_t d, struct ss_lse_state *out);

enum ss_tree { SS_SEQUENTIAL, SS_BALANCED };
/* Reduces states[order[0..n)] (order NULL = 0..n-1) with a left fold or a balanced pairwise tree.
 * out->u must hold d doubles; scratch must hold n * d doubles. */
void ss_reduce(const struct ss_state *states, const size_t *order, size_t n, size_t d, enum ss_tree tree,
               enum ss_arith ar, struct ss_state *out, double *scratch);

/* Balanced quotient/remainder bounds of 0x03B: split s of S over [0, T). */
void ss_balanced_bounds(long long T, long long S, long long s, long long *start, long long *end);

#endif
