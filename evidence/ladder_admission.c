/* ladder_admission.c - the admission record (dkb.admission/v1, schemas/admission.schema.json) that the
 * dispatch diagnostic artifact holds. The bundle's /dispatch request, candidates, outcome and selection
 * are a summary of it, and its key names the compute capability the admission was computed for: each is
 * recomputed from the hashed record and must agree (level 4; the device, level 3). */
#include "evidence/ladder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_str_list(const json_t *a) {
  if (!json_is_array(a)) return 0;
  for (size_t i = 0; i < json_array_size(a); i++)
    if (!json_is_string(json_array_get(a, i))) return 0;
  return 1;
}

/* 1 when doc has what the checks below read. */
static int admission_readable(const json_t *doc) {
  const json_t *s = json_object_get(doc, "schema"), *cands = json_object_get(doc, "candidates");
  const json_t *sel = json_object_get(doc, "selected");
  if (!json_is_string(s) || strcmp(json_string_value(s), "dkb.admission/v1") || !json_is_object(json_object_get(doc, "key")) ||
      !json_is_string(json_object_get(doc, "requested_backend")) || !json_is_string(json_object_get(doc, "outcome")) ||
      !(json_is_string(sel) || json_is_null(sel)) || !json_is_array(cands))
    return 0;
  for (size_t i = 0; i < json_array_size(cands); i++) {
    const json_t *ca = json_array_get(cands, i);
    if (!json_is_string(json_object_get(ca, "backend")) || !json_is_integer(json_object_get(ca, "priority")) ||
        !json_is_boolean(json_object_get(ca, "in_domain")) || !json_is_boolean(json_object_get(ca, "eligible")) ||
        !is_str_list(json_object_get(ca, "reasons")) || !is_str_list(json_object_get(ca, "domain_reasons")))
      return 0;
  }
  return 1;
}

/* The dispatch record's outcome for an admission outcome (harness/runner.c writes the one from the other). */
static const char *outcome_of(const char *admission_outcome) {
  if (!strcmp(admission_outcome, "selected") || !strcmp(admission_outcome, "selected_after_backend_fallback")) return "selected";
  return !strcmp(admission_outcome, "forced_error") ? "rejected" : "no_eligible";
}

/* The bundle's candidate as the admission record gives it: an out-of-domain candidate's reasons are why
 * it left the domain. */
static json_t *candidate_of(const json_t *ca) {
  const int in_domain = json_is_true(json_object_get(ca, "in_domain"));
  return json_pack("{s:O,s:O,s:O,s:O,s:O}", "backend", json_object_get(ca, "backend"), "priority",
                   json_object_get(ca, "priority"), "in_domain", json_object_get(ca, "in_domain"), "eligible",
                   json_object_get(ca, "eligible"), "reasons", json_object_get(ca, in_domain ? "reasons" : "domain_reasons"));
}

/* The bundle's reasons are the record's, which may end with one more entry counting the reasons past
 * ADMIT_MAX_REASONS ("3 more reasons dropped"): the dispatch record lists only the kept ones. */
static int reasons_agree(const json_t *got, const json_t *want) {
  if (json_equal(got, want)) return 1;
  const size_t n = json_array_size(got);
  if (json_array_size(want) != n + 1) return 0;
  for (size_t i = 0; i < n; i++)
    if (!json_equal(json_array_get(got, i), json_array_get(want, i))) return 0;
  const char *last = json_string_value(json_array_get(want, n)), *tail = last ? strchr(last, ' ') : NULL;
  return tail && tail > last && lad_digits(last, (size_t)(tail - last)) && !strcmp(tail, " more reasons dropped");
}

/* Each candidate, member by member (reasons absent in the bundle: none). */
static void admission_candidates(struct lctx *c, const json_t *cands, const json_t *adm, const char *name) {
  static const char *const fields[] = {"backend", "priority", "in_domain", "eligible", "reasons", NULL};
  const size_t n = json_array_size(cands), na = json_array_size(adm);
  if (n != na) {
    lad_finding(c, "dispatch_contradicts_diagnostic", "/dispatch/candidates", "%zu candidates, admission record '%s' lists %zu",
                n, name, na);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *want = candidate_of(json_array_get(adm, i));
    const json_t *got = json_array_get(cands, i);
    json_t *none = json_array();
    for (int f = 0; fields[f]; f++) {
      const json_t *g = json_object_get(got, fields[f]), *w = json_object_get(want, fields[f]);
      if (!strcmp(fields[f], "reasons") ? reasons_agree(g ? g : none, w) : json_equal(g, w)) continue;
      char cp[DKB_PTR_MAX], q[DKB_PTR_MAX];
      jr_ptr_idx(cp, "/dispatch/candidates", i);
      jr_ptr_key(q, cp, fields[f]);
      lad_finding(c, "dispatch_contradicts_diagnostic", q, "candidate %zu's %s differs from admission record '%s'", i,
                  fields[f], name);
    }
    json_decref(none);
    json_decref(want);
  }
}

/* The request, outcome and selection. */
static void admission_choice(struct lctx *c, const json_t *d, const json_t *doc, const char *name) {
  const char *req = json_string_value(json_object_get(d, "request"));
  const char *want_req = json_string_value(json_object_get(doc, "requested_backend"));
  if (req && strcmp(req, want_req))
    lad_finding(c, "dispatch_contradicts_diagnostic", "/dispatch/request", "request '%s', admission record '%s' says '%s'", req,
                name, want_req);
  const char *want_out = outcome_of(json_string_value(json_object_get(doc, "outcome")));
  if (c->outcome && strcmp(c->outcome, want_out))
    lad_finding(c, "dispatch_contradicts_diagnostic", "/dispatch/outcome", "outcome %s, admission record '%s' gives %s",
                c->outcome, name, want_out);
  const json_t *sel = json_object_get(d, "selected"), *want_sel = json_object_get(doc, "selected");
  if (sel && !json_equal(sel, want_sel))
    lad_finding(c, "dispatch_contradicts_diagnostic", "/dispatch/selected", "selected %s, admission record '%s' selected %s",
                json_is_string(sel) ? json_string_value(sel) : "none", name,
                json_is_string(want_sel) ? json_string_value(want_sel) : "none");
}

/* The device the bundle names has the compute capability the admission was computed for ("9.0" is 90;
 * null: no device was observed). */
static void admission_device(struct lctx *c, const json_t *doc, const char *name) {
  const char *cc = json_string_value(json_object_get(json_object_get(json_object_get(c->b, "loaded"), "device"), "compute_capability"));
  const json_t *kcc = json_object_get(json_object_get(doc, "key"), "compute_capability");
  const char *dot = cc ? strchr(cc, '.') : NULL;
  if (!dot || !lad_digits(cc, (size_t)(dot - cc)) || dot == cc || !dot[1] || !lad_digits(dot + 1, strlen(dot + 1)))
    return;  /* no device, or not a capability: level 3's own findings */
  const long long have = strtoll(cc, NULL, 10) * 10 + strtoll(dot + 1, NULL, 10);
  if (!json_is_integer(kcc))
    lad_finding(c, "device_contradicts_admission", "/loaded/device/compute_capability",
                "a device of compute capability %s, but admission record '%s' was computed without one", cc, name);
  else if (json_integer_value(kcc) != have)
    lad_finding(c, "device_contradicts_admission", "/loaded/device/compute_capability",
                "compute capability %s, admission record '%s' was computed for %lld", cc, name, (long long)json_integer_value(kcc));
}

void lad_level4_admission(struct lctx *c, const json_t *d, const struct art *diag) {
  if (c->bad || !diag || !diag->have_file) return;
  json_t *doc = lad_art_json(c, diag);
  if (!admission_readable(doc))
    lad_finding(c, "diagnostic_unreadable", "/dispatch/diagnostic", "artifact '%s' is not a dkb.admission/v1 record", diag->name);
  else {
    const json_t *cands = json_object_get(d, "candidates");
    if (cands) admission_candidates(c, cands, json_object_get(doc, "candidates"), diag->name);
    admission_choice(c, d, doc, diag->name);
    admission_device(c, doc, diag->name);
  }
  json_decref(doc);
}
