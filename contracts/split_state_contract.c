/* split_state_contract.c - contract kinds "split_state" and "split_state_laws" (article 0x02):
 * fixture input -> split_state.h calls -> report. The failure table of 0x02I is enforced here:
 * each invalid implementation is executed or checked, and the input is rejected with its reason. */
#include "contracts/contract.h"
#include "oracles/rng.h"
#include "oracles/split_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const ARITH[] = {"float64", "float16_round_each_op", NULL};
static const char *const MERGE[] = {"branch_on_validity", "unguarded", NULL};
static const char *const REDUCTION[] = {"exact_state", "average_outputs", NULL};
static const char *const DETERMINISM[] = {"tolerance", "bitwise", NULL};
static const char *const POLICY[] = {"zero_output_neg_inf_lse", NULL};
static const char *const TREE[] = {"sequential", "balanced", "permuted", NULL};

struct row {                 /* one query row split into states */
  size_t n, d, nsplit;
  double *scores, *values;   /* [n], [n][d] */
  unsigned char *allowed;    /* [n] */
  long long (*ranges)[2];    /* [nsplit] half-open */
};

static void row_release(struct row *w) {
  free(w->scores); free(w->values); free(w->allowed); free(w->ranges);
  memset(w, 0, sizeof *w);
}

static double max_abs_diff(const double *a, const double *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i] == b[i]) continue;           /* equal infinities included */
    double d = fabs(a[i] - b[i]);
    if (!(d <= m)) m = d;                 /* NaN propagates as NaN */
  }
  return m;
}

static json_t *state_json(const struct ss_state *s, size_t d) {
  return json_pack("{s:b,s:o,s:o,s:o,s:I}", "valid", s->valid, "m", oracle_num(s->m), "l", oracle_num(s->l), "u",
                   oracle_num_array(s->u, d), "count", (json_int_t)s->count);
}

static int read_row(struct jr *r, const json_t *in, const char *ptr, struct row *w) {
  size_t n = 0, nv = 0;
  if (jr_num_array(r, in, ptr, "scores", 1, -INFINITY, INFINITY, -1, &w->scores, &n)) return -1;
  w->n = n;
  if (n == 0) return jr_fail(r, ptr, "scores", "must not be empty");
  const json_t *vals = jr_get(r, in, ptr, "values", 1, JSON_ARRAY);
  if (!vals) return -1;
  if (json_array_size(vals) != n)
    return jr_fail(r, ptr, "values", "must have one entry per score (%zu, got %zu)", n, json_array_size(vals));
  char vp[DKB_PTR_MAX], ep[DKB_PTR_MAX];
  jr_ptr_key(vp, ptr, "values");
  const json_t *v0 = json_array_get(vals, 0);
  w->d = json_is_array(v0) ? json_array_size(v0) : 1;
  if (w->d == 0) return jr_fail(r, vp, "0", "must not be empty");
  w->values = DKB_CALLOC(n * w->d, sizeof *w->values);
  for (size_t j = 0; j < n; j++) {
    const json_t *v = json_array_get(vals, j);
    jr_ptr_idx(ep, vp, j);
    if (json_is_array(v) != json_is_array(v0)) return jr_fail(r, ep, NULL, "every value must be a number or every value an array");
    if (json_is_array(v)) {
      if (json_array_size(v) != w->d) return jr_fail(r, ep, NULL, "must have %zu elements (got %zu)", w->d, json_array_size(v));
      for (size_t x = 0; x < w->d; x++) {
        char xp[DKB_PTR_MAX];
        jr_ptr_idx(xp, ep, x);
        if (jr_extended_num(r, json_array_get(v, x), xp, &w->values[j * w->d + x])) return -1;
      }
    } else if (jr_extended_num(r, v, ep, &w->values[j])) return -1;
  }
  (void)nv;
  w->allowed = DKB_MALLOC(n);
  memset(w->allowed, 1, n);
  const json_t *al = json_object_get(in, "allowed");
  if (al) {
    jr_ptr_key(vp, ptr, "allowed");
    if (!json_is_array(al) || json_array_size(al) != n)
      return jr_fail(r, ptr, "allowed", "must be an array of %zu booleans", n);
    for (size_t j = 0; j < n; j++) {
      jr_ptr_idx(ep, vp, j);
      if (!json_is_boolean(json_array_get(al, j))) return jr_fail(r, ep, NULL, "must be a boolean");
      w->allowed[j] = json_is_true(json_array_get(al, j));
    }
  }
  const json_t *sp = jr_get(r, in, ptr, "splits", 1, JSON_ARRAY);
  if (!sp) return -1;
  w->nsplit = json_array_size(sp);
  if (w->nsplit == 0) return jr_fail(r, ptr, "splits", "must not be empty");
  w->ranges = DKB_CALLOC(w->nsplit, sizeof *w->ranges);
  jr_ptr_key(vp, ptr, "splits");
  for (size_t c = 0; c < w->nsplit; c++) {
    const json_t *rg = json_array_get(sp, c);
    jr_ptr_idx(ep, vp, c);
    if (!json_is_array(rg) || json_array_size(rg) != 2 || !json_is_integer(json_array_get(rg, 0)) ||
        !json_is_integer(json_array_get(rg, 1)))
      return jr_fail(r, ep, NULL, "must be a half-open range [start, end] of two integers");
    long long a = json_integer_value(json_array_get(rg, 0)), e = json_integer_value(json_array_get(rg, 1));
    if (a < 0 || e < a || e > (long long)n)
      return jr_fail(r, ep, NULL, "must satisfy 0 <= start <= end <= %zu (got [%lld, %lld])", n, a, e);
    w->ranges[c][0] = a;
    w->ranges[c][1] = e;
  }
  return 0;
}

/* Disjoint ownership and exact coverage of the allowed set (0x02E). */
static int check_partition(const struct row *w, struct oracle_reject *rej) {
  int *owner = DKB_MALLOC(w->n * sizeof *owner);
  int rc = 0;
  for (size_t j = 0; j < w->n; j++) owner[j] = -1;
  for (size_t c = 0; c < w->nsplit && !rc; c++)
    for (long long j = w->ranges[c][0]; j < w->ranges[c][1] && !rc; j++) {
      if (owner[j] >= 0)
        rc = oracle_reject(rej, "overlapping_splits", "position %lld is owned by splits %d and %zu: its mass would count twice",
                           j, owner[j], c);
      owner[j] = (int)c;
    }
  for (size_t j = 0; j < w->n && !rc; j++)
    if (owner[j] < 0 && w->allowed[j])
      rc = oracle_reject(rej, "missing_visible_position", "allowed position %zu is in no split: its probability mass is lost", j);
  free(owner);
  return rc;
}

int oracle_eval_split_state(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  static const char *const req[] = {"scores", "values", "splits", NULL};
  static const char *const opt[] = {"allowed", "arithmetic", "merge", "reduction", "determinism", "all_masked_policy",
                                    "trees", NULL};
  if (jr_keys(r, in, ptr, req, opt)) return -1;
  struct row w = {0};
  int ar = 0, merge = 0, reduction = 0, determinism = 0, policy = -1, rc = -1;
  struct ss_state *st = NULL;
  double *ubuf = NULL, *trees_o = NULL, *scratch = NULL;
  size_t ntree = 0;
  int tree_kind[16];
  size_t *tree_order[16] = {0};
  if (read_row(r, in, ptr, &w) || jr_enum(r, in, ptr, "arithmetic", 0, ARITH, &ar) ||
      jr_enum(r, in, ptr, "merge", 0, MERGE, &merge) || jr_enum(r, in, ptr, "reduction", 0, REDUCTION, &reduction) ||
      jr_enum(r, in, ptr, "determinism", 0, DETERMINISM, &determinism) ||
      jr_enum(r, in, ptr, "all_masked_policy", 0, POLICY, &policy))
    goto cleanup;
  const json_t *trees = jr_get(r, in, ptr, "trees", 0, JSON_ARRAY);
  if (!trees && json_object_get(in, "trees")) goto cleanup;
  char tp[DKB_PTR_MAX], ep[DKB_PTR_MAX];
  jr_ptr_key(tp, ptr, "trees");
  if (trees) {
    ntree = json_array_size(trees);
    if (ntree == 0 || ntree > 16) { jr_fail(r, ptr, "trees", "must have 1 to 16 entries"); goto cleanup; }
    for (size_t t = 0; t < ntree; t++) {
      const json_t *tj = json_array_get(trees, t);
      jr_ptr_idx(ep, tp, t);
      static const char *const treq[] = {"kind", NULL}, *const topt[] = {"order", NULL};
      if (jr_keys(r, tj, ep, treq, topt) || jr_enum(r, tj, ep, "kind", 1, TREE, &tree_kind[t])) goto cleanup;
      long long *ord = NULL;
      size_t nord = 0;
      if (jr_int_array(r, tj, ep, "order", tree_kind[t] == 2, 0, (long long)w.nsplit - 1, (long)w.nsplit, &ord, &nord))
        goto cleanup;
      if (ord) {
        tree_order[t] = DKB_CALLOC(w.nsplit, sizeof(size_t));
        unsigned char *seen = DKB_CALLOC(w.nsplit, 1);
        int dup = 0;
        for (size_t i = 0; i < w.nsplit; i++) { dup |= seen[ord[i]]; seen[ord[i]] = 1; tree_order[t][i] = (size_t)ord[i]; }
        free(seen);
        free(ord);
        if (dup) { jr_fail(r, ep, "order", "must be a permutation of the %zu split ids", w.nsplit); goto cleanup; }
      }
    }
  } else {
    ntree = 2;
    tree_kind[0] = 0;
    tree_kind[1] = 1;
  }

  if ((rc = check_partition(&w, rej))) goto cleanup;
  size_t d = w.d, S = w.nsplit;
  enum ss_arith arith = ar ? SS_F16_EACH_OP : SS_F64;
  st = DKB_CALLOC(S + 2, sizeof *st);
  ubuf = DKB_CALLOC((S + 2) * d, sizeof *ubuf);
  scratch = DKB_CALLOC(S * d, sizeof *scratch);
  trees_o = DKB_CALLOC(ntree * (d + 1), sizeof *trees_o);
  for (size_t c = 0; c < S + 2; c++) st[c].u = ubuf + c * d;
  for (size_t c = 0; c < S; c++)
    ss_summarize(w.scores, w.values, w.allowed, (size_t)w.ranges[c][0], (size_t)w.ranges[c][1], d, arith, &st[c]);
  struct ss_state *merged = &st[S], *tmp = &st[S + 1];

  int any_valid = 0;
  for (size_t c = 0; c < S; c++) any_valid |= st[c].valid;
  if (!any_valid && policy < 0) {
    rc = oracle_reject(rej, "unspecified_all_masked_policy",
                       "every split is empty, so O = u / l is 0 / 0; the fixture must declare an all-masked policy");
    goto cleanup;
  }
  if (merge == 1) {                       /* run the unguarded merge and look at what it produced */
    memcpy(tmp->u, st[0].u, d * sizeof *tmp->u);
    tmp->valid = st[0].valid; tmp->m = st[0].m; tmp->l = st[0].l;
    for (size_t c = 1; c < S; c++) ss_merge_unguarded(tmp, &st[c], d, tmp);
    int nan = isnan(tmp->m) || isnan(tmp->l);
    for (size_t x = 0; x < d; x++) nan |= isnan(tmp->u[x]);
    if (nan) {
      rc = oracle_reject(rej, "empty_state_arithmetic",
                         "the unguarded merge evaluated exp(-inf - -inf) on an empty split and produced a NaN state");
      goto cleanup;
    }
  }

  double *O = DKB_CALLOC(d, sizeof *O), lse;
  ss_reduce(st, NULL, S, d, SS_SEQUENTIAL, arith, merged, scratch);
  ss_finalize(merged, d, O, &lse);

  /* Averaging the normalized outputs of the valid splits: the failure of 0x02F. */
  double *naive = DKB_CALLOC(d, sizeof *naive), *oc = DKB_CALLOC(d, sizeof *oc), lc;
  size_t nvalid = 0;
  for (size_t c = 0; c < S; c++) {
    if (!st[c].valid) continue;
    ss_finalize(&st[c], d, oc, &lc);
    for (size_t x = 0; x < d; x++) naive[x] += oc[x];
    nvalid++;
  }
  for (size_t x = 0; x < d; x++) naive[x] = nvalid ? naive[x] / (double)nvalid : 0.0;
  if (reduction == 1) {
    double diff = max_abs_diff(naive, O, d);
    rc = oracle_reject(rej, "averaging_without_lse",
                       "averaging normalized split outputs drops each split's mass: naive O[0] = %.10g, exact O[0] = %.10g "
                       "(max |diff| %.3g); carry (m,l,u) or (LSE,O)", naive[0], O[0], diff);
    free(O); free(naive); free(oc);
    goto cleanup;
  }

  /* The (LSE, O) ABI through its own merge. */
  struct ss_lse_state *ls = DKB_CALLOC(S + 1, sizeof *ls);
  double *lbuf = DKB_CALLOC((S + 1) * d, sizeof *lbuf);
  for (size_t c = 0; c <= S; c++) ls[c].o = lbuf + c * d;
  for (size_t c = 0; c < S; c++) ss_to_lse(&st[c], d, &ls[c]);
  ls[S].valid = 0; ls[S].lse = -INFINITY;
  for (size_t c = 0; c < S; c++) ss_merge_lse(&ls[S], &ls[c], d, &ls[S]);
  double lse_abi_lse = ls[S].valid ? ls[S].lse : -INFINITY;
  double abi_diff = fmax(max_abs_diff(ls[S].o, O, d), max_abs_diff(&lse_abi_lse, &lse, 1));
  json_t *lse_abi = json_pack("{s:o,s:o,s:o}", "O", oracle_num_array(ls[S].o, d), "LSE", oracle_num(lse_abi_lse),
                              "max_abs_diff_vs_mlu", oracle_num(abi_diff));
  free(ls); free(lbuf);

  /* Dense, unsplit reference over the whole row. */
  double *dO = DKB_CALLOC(d, sizeof *dO), dlse;
  ss_summarize(w.scores, w.values, w.allowed, 0, w.n, d, SS_F64, tmp);
  ss_finalize(tmp, d, dO, &dlse);
  double dense_err = fmax(max_abs_diff(dO, O, d), max_abs_diff(&dlse, &lse, 1));

  /* Reduction trees: every one targets the same row; their spread is the rounding of the tree. */
  json_t *tj = json_array();
  double spread = 0;
  int bitwise_same = 1;
  for (size_t t = 0; t < ntree; t++) {
    double *to = trees_o + t * (d + 1);
    ss_reduce(st, tree_order[t], S, d, tree_kind[t] == 1 ? SS_BALANCED : SS_SEQUENTIAL, arith, tmp, scratch);
    ss_finalize(tmp, d, to, &to[d]);
    json_t *row = json_pack("{s:s,s:o,s:o}", "kind", TREE[tree_kind[t]], "O", oracle_num_array(to, d), "LSE", oracle_num(to[d]));
    if (tree_order[t]) {
      json_t *o = json_array();
      for (size_t i = 0; i < S; i++) json_array_append_new(o, json_integer((json_int_t)tree_order[t][i]));
      json_object_set_new(row, "order", o);
    }
    json_array_append_new(tj, row);
    for (size_t q = 0; q < t; q++) {
      double sd = max_abs_diff(to, trees_o + q * (d + 1), d + 1);
      if (sd > spread || isnan(sd)) spread = sd;
      if (memcmp(to, trees_o + q * (d + 1), (d + 1) * sizeof *to)) bitwise_same = 0;
    }
  }

  json_t *splits = json_array();
  size_t merges = 0;
  for (size_t c = 0; c < S; c++) {
    json_t *sj = state_json(&st[c], d);
    json_object_set_new(sj, "range", json_pack("[I,I]", (json_int_t)w.ranges[c][0], (json_int_t)w.ranges[c][1]));
    json_array_append_new(splits, sj);
    merges += st[c].valid;
  }
  *report = json_pack("{s:I,s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:o,s:o,s:I}", "n", (json_int_t)w.n,
                      "d", (json_int_t)d, "arithmetic", ARITH[ar], "splits", splits, "merged", state_json(merged, d),
                      "O", oracle_num_array(O, d), "LSE", oracle_num(lse), "naive_average_O",
                      oracle_num_array(naive, d), "lse_abi", lse_abi, "dense", "O", oracle_num_array(dO, d), "LSE",
                      oracle_num(dlse), "max_abs_err", oracle_num(dense_err), "trees", tj, "tree_spread",
                      oracle_num(spread), "nonempty_merges", (json_int_t)(merges ? merges - 1 : 0));
  free(O); free(naive); free(oc); free(dO);
  rc = 0;
  if (determinism == 1 && !bitwise_same) {
    json_decref(*report);
    *report = NULL;
    rc = oracle_reject(rej, "tree_not_bitwise",
                       "the fixture commits every reduction tree to one bitwise result, but the trees differ by up to %.3g; "
                       "declare a tolerance or freeze one tree", spread);
  }

cleanup:
  for (size_t t = 0; t < 16; t++) free(tree_order[t]);
  free(st); free(ubuf); free(scratch); free(trees_o);
  row_release(&w);
  return rc;
}

/* Random rows and partitions: identity, commutativity, associativity and partition invariance. */
int oracle_eval_split_state_laws(struct jr *r, const json_t *in, const char *ptr, json_t **report, struct oracle_reject *rej) {
  (void)rej;
  static const char *const req[] = {"seed", "trials", NULL};
  static const char *const opt[] = {"n_max", "d", "mask_probability", "max_splits", "score_scale", NULL};
  long long seed = 0, trials = 0, n_max = 64, d = 3, max_splits = 8;
  double pmask = 0.3, scale = 8.0;
  if (jr_keys(r, in, ptr, req, opt) || jr_int(r, in, ptr, "seed", 1, 0, INT64_MAX, &seed) ||
      jr_int(r, in, ptr, "trials", 1, 1, 100000, &trials) || jr_int(r, in, ptr, "n_max", 0, 1, 4096, &n_max) ||
      jr_int(r, in, ptr, "d", 0, 1, 256, &d) || jr_int(r, in, ptr, "max_splits", 0, 1, 64, &max_splits) ||
      jr_num(r, in, ptr, "mask_probability", 0, 0, 1, &pmask) || jr_num(r, in, ptr, "score_scale", 0, 0, 1e6, &scale))
    return -1;
  struct dkb_rng g;
  dkb_rng_seed(&g, (uint64_t)seed);
  size_t D = (size_t)d, NM = (size_t)n_max;
  double *scores = DKB_MALLOC(NM * sizeof *scores), *values = DKB_MALLOC(NM * D * sizeof *values);
  unsigned char *allowed = DKB_MALLOC(NM);
  double *buf = DKB_CALLOC(16 * D + (size_t)max_splits * D * 2, sizeof *buf);
  struct ss_state s[6], *parts = DKB_CALLOC((size_t)max_splits, sizeof *parts);
  for (int i = 0; i < 6; i++) s[i].u = buf + (size_t)i * D;
  for (long long i = 0; i < max_splits; i++) parts[i].u = buf + 16 * D + (size_t)i * D;
  double *scratch = buf + 16 * D + (size_t)max_splits * D;
  double e_id = 0, e_comm = 0, e_assoc = 0, e_part = 0;
  long long empties = 0, all_masked = 0;
  double o1[256], o2[256], l1, l2;
  for (long long t = 0; t < trials; t++) {
    size_t n = 3 + dkb_rng_below(&g, NM > 3 ? NM - 2 : 1);
    if (n > NM) n = NM;
    int any = 0;
    for (size_t j = 0; j < n; j++) {
      scores[j] = dkb_rng_uniform(&g, -scale, scale);
      allowed[j] = dkb_rng_unit(&g) >= pmask;
      any |= allowed[j];
      for (size_t x = 0; x < D; x++) values[j * D + x] = dkb_rng_uniform(&g, -4, 4);
    }
    all_masked += !any;
    /* A, B, C: three disjoint consecutive pieces. */
    size_t a = dkb_rng_below(&g, n + 1), b = a + dkb_rng_below(&g, n - a + 1);
    ss_summarize(scores, values, allowed, 0, a, D, SS_F64, &s[0]);
    ss_summarize(scores, values, allowed, a, b, D, SS_F64, &s[1]);
    ss_summarize(scores, values, allowed, b, n, D, SS_F64, &s[2]);
    /* identity: e (+) A == A and A (+) e == A, exactly */
    ss_empty(&s[3], D);
    ss_merge(&s[3], &s[0], D, SS_F64, &s[4]);
    ss_finalize(&s[4], D, o1, &l1);
    ss_finalize(&s[0], D, o2, &l2);
    e_id = fmax(e_id, fmax(max_abs_diff(o1, o2, D), max_abs_diff(&l1, &l2, 1)));
    ss_merge(&s[0], &s[3], D, SS_F64, &s[4]);
    ss_finalize(&s[4], D, o1, &l1);
    e_id = fmax(e_id, fmax(max_abs_diff(o1, o2, D), max_abs_diff(&l1, &l2, 1)));
    /* commutativity */
    ss_merge(&s[0], &s[1], D, SS_F64, &s[3]);
    ss_merge(&s[1], &s[0], D, SS_F64, &s[4]);
    ss_finalize(&s[3], D, o1, &l1);
    ss_finalize(&s[4], D, o2, &l2);
    e_comm = fmax(e_comm, fmax(max_abs_diff(o1, o2, D), max_abs_diff(&l1, &l2, 1)));
    /* associativity: (A+B)+C vs A+(B+C) */
    ss_merge(&s[3], &s[2], D, SS_F64, &s[3]);
    ss_merge(&s[1], &s[2], D, SS_F64, &s[4]);
    ss_merge(&s[0], &s[4], D, SS_F64, &s[4]);
    ss_finalize(&s[3], D, o1, &l1);
    ss_finalize(&s[4], D, o2, &l2);
    e_assoc = fmax(e_assoc, fmax(max_abs_diff(o1, o2, D), max_abs_diff(&l1, &l2, 1)));
    /* partition invariance: random cut points versus the unsplit summary */
    size_t k = 1 + dkb_rng_below(&g, (uint64_t)max_splits);
    size_t cuts[65];
    cuts[0] = 0;
    cuts[k] = n;
    for (size_t c = 1; c < k; c++) cuts[c] = dkb_rng_below(&g, n + 1);
    for (size_t c = 1; c < k; c++)   /* insertion sort keeps cuts monotone; equal cuts give empty splits */
      for (size_t q = c; q > 1 && cuts[q - 1] > cuts[q]; q--) { size_t z = cuts[q]; cuts[q] = cuts[q - 1]; cuts[q - 1] = z; }
    for (size_t c = 0; c < k; c++) {
      ss_summarize(scores, values, allowed, cuts[c], cuts[c + 1], D, SS_F64, &parts[c]);
      empties += !parts[c].valid;
    }
    ss_reduce(parts, NULL, k, D, (t & 1) ? SS_BALANCED : SS_SEQUENTIAL, SS_F64, &s[5], scratch);
    ss_summarize(scores, values, allowed, 0, n, D, SS_F64, &s[4]);
    ss_finalize(&s[5], D, o1, &l1);
    ss_finalize(&s[4], D, o2, &l2);
    e_part = fmax(e_part, fmax(max_abs_diff(o1, o2, D), max_abs_diff(&l1, &l2, 1)));
  }
  *report = json_pack("{s:I,s:o,s:o,s:o,s:o,s:I,s:I}", "trials", (json_int_t)trials, "identity_max_err", oracle_num(e_id),
                      "commutativity_max_err", oracle_num(e_comm), "associativity_max_err", oracle_num(e_assoc),
                      "partition_max_err", oracle_num(e_part), "empty_splits_seen", (json_int_t)empties,
                      "all_masked_rows_seen", (json_int_t)all_masked);
  free(scores); free(values); free(allowed); free(buf); free(parts);
  return 0;
}

