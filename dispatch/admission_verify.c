/* admission_verify.c - a recorded admission record checked against its recomputation, the level-4 check
 * of 0x07J (see registry.h, admission_verify): the named failures first, then any member that differs. */
#include "dispatch/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vreject(char reason[64], char *detail, size_t n, const char *why, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int vreject(char reason[64], char *detail, size_t n, const char *why, const char *fmt, ...) {
  snprintf(reason, 64, "%s", why);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, n, fmt, ap);
  va_end(ap);
  return 1;
}

static int cand_index(const struct admission *a, const char *name) {
  for (size_t i = 0; i < a->n; i++)
    if (!strcmp(a->cand[i].backend->name, name)) return (int)i;
  return -1;
}

/* The K factor refused a paged cache: the backend has no address program for it (0x07C). */
static int rejects_paged_cache(const struct admission *a, int i) {
  const struct admit_reasons *r = &a->cand[i].reasons;
  if (!dk_layout_is_paged(a->key.cache_layout)) return 0;
  for (size_t k = 0; k < r->n; k++)
    if (r->factor[k] == 'K' && !strncmp(r->text[k], "cache_layout=", 13)) return 1;
  return 0;
}

/* Out of domain by phase (0x07C: "a prefill-only CUDA kernel reported as a decode fallback"). */
static const char *domain_reason_id(const struct admission *a, int i) {
  return a->cand[i].backend->phases & (1u << a->key.phase) ? "wrong_platform_candidate" : "wrong_phase_fallback";
}

static int string_list(struct jr *r, const json_t *arr, const char *ptr, size_t *n) {
  if (!json_is_array(arr)) return jr_fail(r, ptr, NULL, "must be an array (got %s)", jr_type_name(arr));
  for (size_t i = 0; i < json_array_size(arr); i++)
    if (!json_is_string(json_array_get(arr, i))) {
      char p[DKB_PTR_MAX];
      jr_ptr_idx(p, ptr, i);
      return jr_fail(r, p, NULL, "must be a string");
    }
  *n = json_array_size(arr);
  return 0;
}

/* 1 when every claimed string is a reason of `have`; *subset set when claimed lists fewer. */
static int reasons_cover(const json_t *claimed, const struct admit_reasons *have, int *equal) {
  size_t n = json_array_size(claimed);
  for (size_t i = 0; i < n; i++) {
    const char *s = json_string_value(json_array_get(claimed, i));
    int hit = 0;
    for (size_t k = 0; k < have->n && !hit; k++) hit = !strcmp(have->text[k], s);
    if (!hit) return 0;
  }
  *equal = n == have->n;
  return 1;
}

static int verify_key(struct jr *r, const json_t *ck, const char *ptr, const struct admission *a, char reason[64],
                      char *detail, size_t dn) {
  if (!json_is_object(ck)) return jr_fail(r, ptr, NULL, "must be an object (got %s)", jr_type_name(ck));
  json_t *ours = dispatch_key_to_json(&a->key, DK_FULL);
  int rc = 0;
  const char *field;
  for (size_t i = 0; (field = dispatch_key_teaching_field(i)) && !rc; i++) {
    if (json_object_get(ck, field)) continue;
    rc = !strcmp(field, "requires_deterministic")
             ? vreject(reason, detail, dn, "determinism_missing_from_key",
                       "the recorded key omits requires_deterministic: backends with different reduction orders "
                       "would share one evidence row (0x07G)")
             : vreject(reason, detail, dn, "key_mismatch", "the recorded key omits %s", field);
  }
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)ck, name, v) {
    if (rc) break;
    json_t *o = json_object_get(ours, name);
    if (!o) rc = vreject(reason, detail, dn, "key_mismatch", "the recorded key has an unknown field %s", name);
    else if (!json_equal(o, v)) rc = vreject(reason, detail, dn, "key_mismatch", "the recorded key's %s differs", name);
  }
  json_decref(ours);
  return rc;
}

/* Every member the claim holds must equal the recomputed one; the named checks ran first. */
static int same_members(const json_t *claimed, const json_t *ours, const char *what, char reason[64], char *detail,
                        size_t dn) {
  const char *m;
  json_t *v;
  json_object_foreach((json_t *)claimed, m, v) {
    if (!json_equal(v, json_object_get(ours, m)))
      return vreject(reason, detail, dn, "record_mismatch", "%s%s does not match the recomputation", what, m);
  }
  return 0;
}

static int verify_candidates(struct jr *r, const json_t *cl, const char *ptr, const struct admission *a,
                             const json_t *ours_json, char reason[64], char *detail, size_t dn) {
  if (!json_is_array(cl)) return jr_fail(r, ptr, NULL, "must be an array (got %s)", jr_type_name(cl));
  unsigned char seen[DISPATCH_MAX_BACKENDS] = {0};
  for (size_t i = 0; i < json_array_size(cl); i++) {
    const json_t *c = json_array_get(cl, i);
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, ptr, i);
    static const char *const req[] = {"backend", NULL};
    static const char *const opt[] = {"priority", "in_domain", "domain_reasons", "eligible", "reasons", "failed_factors",
                                      NULL};
    const char *name = NULL;
    int in_domain = -1, eligible = -1;
    if (jr_keys(r, c, p, req, opt) || jr_str(r, c, p, "backend", 1, &name) ||
        jr_bool(r, c, p, "in_domain", 0, &in_domain) || jr_bool(r, c, p, "eligible", 0, &eligible))
      return -1;
    int k = cand_index(a, name);
    if (k < 0) return vreject(reason, detail, dn, "key_mismatch", "backend %s is not in registry %s", name, a->registry->name);
    seen[k] = 1;
    const struct admission_candidate *ours = &a->cand[k];
    if (in_domain == 1 && !ours->in_domain)
      return vreject(reason, detail, dn, domain_reason_id(a, k), "%s is recorded as a candidate but %s", name,
                     ours->domain.text[0]);
    if (eligible == 1 && !ours->eligible) {
      if (rejects_paged_cache(a, k))
        return vreject(reason, detail, dn, "paged_cache_without_address_contract",
                       "%s is recorded as eligible for %s, but it has no paged-cache address program", name,
                       DK_LAYOUT_NAMES[a->key.cache_layout]);
      return vreject(reason, detail, dn, "eligibility_mismatch", "%s is recorded as eligible but %s", name,
                     ours->in_domain ? ours->reasons.text[0] : ours->domain.text[0]);
    }
    const json_t *rs = json_object_get(c, "reasons");
    size_t nr;
    if (rs) {
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, p, "reasons");
      if (string_list(r, rs, q, &nr)) return -1;
      int equal = 0;
      if (!reasons_cover(rs, &ours->reasons, &equal))
        return vreject(reason, detail, dn, "rejection_vector_mismatch", "%s's recorded reasons are not the ones its predicates give",
                       name);
      if (!equal)
        return vreject(reason, detail, dn, "truncated_rejection_vector",
                       "%s's recorded rejection vector keeps %zu of %zu reasons (missing e.g. '%s')", name, nr,
                       ours->reasons.n, ours->reasons.text[nr < ours->reasons.n ? nr : 0]);
    }
    char what[96];
    snprintf(what, sizeof what, "candidate %s: ", name);
    if (same_members(c, json_array_get(json_object_get(ours_json, "candidates"), (size_t)k), what, reason, detail, dn))
      return 1;
  }
  for (size_t k = 0; k < a->n; k++) {
    if (seen[k] || !a->cand[k].in_domain) continue;
    if (a->selected >= 0 && (int)k > a->selected)
      return vreject(reason, detail, dn, "rejection_vector_stops_at_winner",
                     "in-domain candidate %s ranks below the winner %s and is missing from the record",
                     a->cand[k].backend->name, a->cand[a->selected].backend->name);
    return vreject(reason, detail, dn, "candidate_missing", "in-domain candidate %s is missing from the record",
                   a->cand[k].backend->name);
  }
  return 0;
}

int admission_verify(struct jr *r, const json_t *cl, const char *ptr, const struct admission *a, char reason[64],
                     char *detail, size_t dn) {
  static const char *const opt[] = {"schema", "registry", "key", "key_digest", "teaching_key_digest", "plan_key",
                                    "plan_key_digest", "policy", "requested_backend", "malformed_reasons",
                                    "candidate_order", "candidate_domain", "eligible", "candidates", "outcome",
                                    "selected", "backend_fallback", "fallback_from", "error_reasons", "claim_ceiling",
                                    NULL};
  if (jr_keys(r, cl, ptr, NULL, opt)) return -1;
  json_t *ours = admission_to_json(a, r->err);
  if (!ours) return -1;
  const char *s = NULL, *outcome = NULL, *selected = NULL;
  int fallback = -1, rc = 0;
  char p[DKB_PTR_MAX];
  const json_t *sel = json_object_get(cl, "selected");
  if (jr_str(r, cl, ptr, "claim_ceiling", 0, &s) || jr_str(r, cl, ptr, "outcome", 0, &outcome) ||
      jr_bool(r, cl, ptr, "backend_fallback", 0, &fallback) ||
      (sel && !json_is_null(sel) && jr_str(r, cl, ptr, "selected", 1, &selected))) {
    rc = -1;
    goto cleanup;
  }
  if (outcome) {
    int known = 0;
    for (int o = ADM_SELECTED; o <= ADM_MALFORMED_CALL; o++) known |= !strcmp(outcome, admission_outcome_name(o));
    if (!known) { rc = jr_fail(r, ptr, "outcome", "unknown outcome '%s'", outcome); goto cleanup; }
  }
  if (s && strcmp(s, ADMISSION_CLAIM_CEILING)) {
    rc = vreject(reason, detail, dn, "selection_is_not_execution",
                 "an admission record proves selection only; '%s' needs a profiler trace with kernel symbols (0x07H)", s);
    goto cleanup;
  }
  const json_t *ck = json_object_get(cl, "key");
  jr_ptr_key(p, ptr, "key");
  if (ck && (rc = verify_key(r, ck, p, a, reason, detail, dn))) goto cleanup;
  static const char *const digests[] = {"key_digest", "teaching_key_digest", "plan_key_digest", NULL};
  for (int i = 0; digests[i]; i++) {
    const char *d = NULL;
    if (jr_str(r, cl, ptr, digests[i], 0, &d)) { rc = -1; goto cleanup; }
    const char *want = json_string_value(json_object_get(ours, digests[i]));
    if (d && strcmp(d, want)) {
      rc = vreject(reason, detail, dn, "key_digest_mismatch", "recorded %s %.12s... does not recompute (%.12s...)",
                   digests[i], d, want);
      goto cleanup;
    }
  }
  if (a->outcome == ADM_MALFORMED_CALL) {
    if (selected || (outcome && !strncmp(outcome, "selected", 8))) {
      rc = vreject(reason, detail, dn, "malformed_call_admitted", "a malformed call (%s) was recorded as selecting %s",
                   a->malformed.text[0], selected ? selected : "a backend");
      goto cleanup;
    }
    const json_t *cands = json_object_get(cl, "candidates");
    if ((outcome && strcmp(outcome, "malformed_call_error")) || (json_is_array(cands) && json_array_size(cands))) {
      rc = vreject(reason, detail, dn, "malformed_call_reported_unsupported",
                   "%s is a malformed call, not a capability gap: it must fail before the capability matrix",
                   a->malformed.text[0]);
      goto cleanup;
    }
  }
  if (a->forced && ((selected && strcmp(selected, a->key.backend_request)) ||
                    (outcome && !strcmp(outcome, "selected_after_backend_fallback")) || fallback == 1)) {
    rc = vreject(reason, detail, dn, "forced_backend_fallback",
                 "backend_request=%s must fail closed with its reasons (%s), never fall back to %s", a->key.backend_request,
                 a->error.n ? a->error.text[0] : "none", selected ? selected : "another backend");
    goto cleanup;
  }
  const json_t *cands = json_object_get(cl, "candidates");
  jr_ptr_key(p, ptr, "candidates");
  if (cands && (rc = verify_candidates(r, cands, p, a, ours, reason, detail, dn))) goto cleanup;
  static const char *const lists[] = {"fallback_from", "candidate_domain", "eligible", NULL};
  for (int l = 0; lists[l]; l++) {
    const json_t *arr = json_object_get(cl, lists[l]);
    size_t n = 0;
    jr_ptr_key(p, ptr, lists[l]);
    if (!arr) continue;
    if (string_list(r, arr, p, &n)) { rc = -1; goto cleanup; }
    for (size_t i = 0; i < n; i++) {
      const char *name = json_string_value(json_array_get(arr, i));
      int k = cand_index(a, name);
      if (k < 0) { rc = vreject(reason, detail, dn, "key_mismatch", "backend %s is not registered", name); goto cleanup; }
      if (l < 2 && !a->cand[k].in_domain) {
        rc = vreject(reason, detail, dn, domain_reason_id(a, k), "%s is listed in %s but %s", name, lists[l],
                     a->cand[k].domain.text[0]);
        goto cleanup;
      }
      if (l == 2 && !a->cand[k].eligible) {
        rc = rejects_paged_cache(a, k)
                 ? vreject(reason, detail, dn, "paged_cache_without_address_contract",
                           "%s is listed as eligible for %s without a paged-cache address program", name,
                           DK_LAYOUT_NAMES[a->key.cache_layout])
                 : vreject(reason, detail, dn, "eligibility_mismatch", "%s is listed as eligible but rejected", name);
        goto cleanup;
      }
    }
  }
  if (fallback == 1 && !admission_backend_fallback(a)) {
    int k = -1;
    for (int i = 0; i < (a->selected >= 0 ? a->selected : (int)a->n) && k < 0; i++)
      if (!a->cand[i].in_domain) k = i;
    rc = k >= 0 ? vreject(reason, detail, dn, domain_reason_id(a, k),
                          "no in-domain candidate ranks above the winner; %s is outside the domain (%s), so no backend "
                          "fallback occurred", a->cand[k].backend->name, a->cand[k].domain.text[0])
                : vreject(reason, detail, dn, "fallback_mismatch", "the record claims a backend fallback that did not occur");
    goto cleanup;
  }
  const char *our_sel = a->selected >= 0 ? a->cand[a->selected].backend->name : NULL;
  if (sel && (selected ? !our_sel || strcmp(selected, our_sel) : our_sel != NULL)) {
    int k = selected ? cand_index(a, selected) : -1;
    if (k >= 0 && rejects_paged_cache(a, k))
      rc = vreject(reason, detail, dn, "paged_cache_without_address_contract",
                   "%s was recorded as selected for %s, but it has no paged-cache address program (%s)", selected,
                   DK_LAYOUT_NAMES[a->key.cache_layout], a->cand[k].reasons.text[0]);
    else if (k >= 0 && !a->cand[k].eligible)
      rc = vreject(reason, detail, dn, "ineligible_backend_selected", "%s was recorded as selected but %s", selected,
                   a->cand[k].in_domain ? a->cand[k].reasons.text[0] : a->cand[k].domain.text[0]);
    else
      rc = vreject(reason, detail, dn, "selection_mismatch", "recorded selection %s, recomputed %s",
                   selected ? selected : "none", our_sel ? our_sel : "none");
    goto cleanup;
  }
  if (fallback == 0 && admission_backend_fallback(a)) {
    rc = vreject(reason, detail, dn, "fallback_mismatch", "the record hides the backend fallback from %s",
                 a->cand[0].backend->name);
    goto cleanup;
  }
  if (outcome && strcmp(outcome, admission_outcome_name(a->outcome))) {
    rc = vreject(reason, detail, dn, "outcome_mismatch", "recorded outcome %s, recomputed %s", outcome,
                 admission_outcome_name(a->outcome));
    goto cleanup;
  }
  const json_t *er = json_object_get(cl, "error_reasons");
  if (er) {
    size_t n;
    int equal = 0;
    jr_ptr_key(p, ptr, "error_reasons");
    if (string_list(r, er, p, &n)) { rc = -1; goto cleanup; }
    if (!reasons_cover(er, &a->error, &equal))
      rc = vreject(reason, detail, dn, "rejection_vector_mismatch", "recorded error reasons are not the recomputed ones");
    else if (!equal)
      rc = vreject(reason, detail, dn, "truncated_rejection_vector", "recorded error keeps %zu of %zu reasons", n,
                   a->error.n);
    if (rc) goto cleanup;
  }
  /* whatever else the record holds (schema, registry, policy, candidate_order, plan_key, ...) */
  json_t *rest = json_deep_copy(cl);
  json_object_del(rest, "candidates");
  json_object_del(rest, "key");
  rc = same_members(rest, ours, "", reason, detail, dn);
  json_decref(rest);
cleanup:
  json_decref(ours);
  return rc;
}
