/* ladder_trace.c - level 5 against the trace artifact (dkb.trace-records/v1 JSON lines, harness/trace.c): the
 * /execution record is a summary of the CUPTI records it holds, so each part is recomputed from them.
 * The range, correlation id, dropped records and profiler version come from the meta record; the kernel
 * records from the kernel records the call launched: those whose launching API call (runtime or driver) began inside the
 * NVTX range's marker and whose external correlation is the call's, one record per symbol in the order
 * of its first launch, with that first launch's geometry. */
#include "evidence/ladder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_kind(const json_t *r, const char *kind) {
  const char *k = json_string_value(json_object_get(r, "record"));
  return k && !strcmp(k, kind);
}

/* The first record of a kind whose member key equals value (as harness/trace.c joins them). */
static const json_t *first_of(const json_t *recs, const char *kind, const char *key, const json_t *value) {
  for (size_t i = 0; i < json_array_size(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    if (is_kind(r, kind) && json_equal(json_object_get(r, key), value)) return r;
  }
  return NULL;
}

static const char *symbol_of(const json_t *k) { return json_string_value(json_object_get(k, "symbol")); }

/* 1 when every kernel record has what the summary is built from. */
static int kernels_readable(const json_t *recs) {
  static const char *const ints[] = {"correlation_id", "registers_per_thread", "static_shared_bytes", "dynamic_shared_bytes", NULL};
  for (size_t i = 0; i < json_array_size(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    if (!is_kind(r, "kernel")) continue;
    if (!json_is_string(json_object_get(r, "name"))) return 0;
    for (int k = 0; ints[k]; k++)
      if (!json_is_integer(json_object_get(r, ints[k]))) return 0;
    if (json_array_size(json_object_get(r, "grid")) != 3 || json_array_size(json_object_get(r, "block")) != 3) return 0;
  }
  return 1;
}

/* 1 when kernel record k was launched by the call: its runtime or driver call began inside the range's marker and
 * its external correlation is the call's id. */
static int launched_by_call(const json_t *recs, const json_t *k, const json_t *marker, const json_t *ext_id) {
  const json_t *corr = json_object_get(k, "correlation_id");
  const json_t *api = first_of(recs, "runtime", "correlation_id", corr);
  if (!api) api = first_of(recs, "driver", "correlation_id", corr);  /* a driver-API launch (cuLaunchKernel) */
  const json_t *x = first_of(recs, "external_correlation", "correlation_id", corr);
  const json_t *a0 = json_object_get(marker, "start_ns"), *a1 = json_object_get(marker, "end_ns");
  const json_t *t = json_object_get(api, "start_ns");
  if (!json_is_integer(a0) || !json_is_integer(a1) || !json_is_integer(t) || !x) return 0;
  return json_integer_value(t) >= json_integer_value(a0) && json_integer_value(t) <= json_integer_value(a1) &&
         json_equal(json_object_get(x, "external_id"), ext_id);
}

/* The /execution/kernels the trace gives (new reference): [{symbol, demangled, launches, grid, block,
 * registers, shared_bytes}]. */
static json_t *kernels_of(const json_t *recs, const json_t *meta) {
  const json_t *marker = first_of(recs, "marker", "name", json_object_get(meta, "range_name"));
  const json_t *ext_id = json_object_get(meta, "external_id");
  json_t *out = json_array(), *seen = json_array();
  for (size_t i = 0; i < json_array_size(recs); i++) {
    const json_t *k = json_array_get(recs, i);
    if (!is_kind(k, "kernel")) continue;
    const json_t *name = json_object_get(k, "name");
    size_t s = 0;
    while (s < json_array_size(seen) && !json_equal(json_object_get(json_array_get(seen, s), "symbol"), name)) s++;
    if (s == json_array_size(seen)) {
      const json_t *dem = json_object_get(k, "demangled");
      json_array_append_new(seen, json_pack("{s:O,s:O,s:i,s:O,s:O,s:O,s:I}", "symbol", name, "demangled", dem ? dem : name,
                                            "launches", 0, "grid", json_object_get(k, "grid"), "block",
                                            json_object_get(k, "block"), "registers", json_object_get(k, "registers_per_thread"),
                                            "shared_bytes",
                                            json_integer_value(json_object_get(k, "static_shared_bytes")) +
                                                json_integer_value(json_object_get(k, "dynamic_shared_bytes"))));
    }
    if (!marker || !launched_by_call(recs, k, marker, ext_id)) continue;
    json_t *rec = json_array_get(seen, s);
    json_object_set_new(rec, "launches", json_integer(json_integer_value(json_object_get(rec, "launches")) + 1));
  }
  for (size_t s = 0; s < json_array_size(seen); s++)
    if (json_integer_value(json_object_get(json_array_get(seen, s), "launches")) > 0)
      json_array_append(out, json_array_get(seen, s));
  json_decref(seen);
  return out;
}

static const json_t *by_symbol(const json_t *kernels, const char *symbol) {
  for (size_t i = 0; i < json_array_size(kernels); i++)
    if (!strcmp(symbol_of(json_array_get(kernels, i)), symbol))
      return json_array_get(kernels, i);
  return NULL;
}

/* Each kernel record is the trace's for its symbol, and each symbol the call launched has a record. */
static void trace_kernels(struct lctx *c, const json_t *ks, const json_t *want, const char *name) {
  static const char *const fields[] = {"demangled", "launches", "grid", "block", "registers", "shared_bytes", NULL};
  for (size_t i = 0; i < json_array_size(ks); i++) {
    const json_t *k = json_array_get(ks, i);
    const char *sym = symbol_of(k);
    char kp[DKB_PTR_MAX], q[DKB_PTR_MAX];
    jr_ptr_idx(kp, "/execution/kernels", i);
    const json_t *w = sym ? by_symbol(want, sym) : NULL;
    if (!w) {
      jr_ptr_key(q, kp, "symbol");
      lad_finding(c, "kernel_record_contradicts_trace", q, "trace '%s' has no launch of '%s' by the call", name, sym ? sym : "");
      continue;
    }
    for (int f = 0; fields[f]; f++) {
      const json_t *got = json_object_get(k, fields[f]);
      if (!got || json_equal(got, json_object_get(w, fields[f]))) continue;
      jr_ptr_key(q, kp, fields[f]);
      char *have = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY), *says = json_dumps(json_object_get(w, fields[f]), JSON_COMPACT | JSON_ENCODE_ANY);
      lad_finding(c, "kernel_record_contradicts_trace", q, "%s is %s, trace '%s' records %s", fields[f], have ? have : "?", name,
                  says ? says : "?");
      free(have);
      free(says);
    }
  }
  for (size_t s = 0; s < json_array_size(want); s++) {
    const json_t *w = json_array_get(want, s);
    const char *sym = symbol_of(w);
    int recorded = 0;
    for (size_t i = 0; i < json_array_size(ks) && !recorded; i++) {
      const char *r = symbol_of(json_array_get(ks, i));
      recorded = r && !strcmp(r, sym);
    }
    if (!recorded)
      lad_finding(c, "kernel_record_contradicts_trace", "/execution/kernels", "trace '%s' saw the call launch '%s' %lld times, no record names it",
                  name, sym, (long long)json_integer_value(json_object_get(w, "launches")));
  }
}

/* One member of /execution against the meta record's. */
static void meta_is(struct lctx *c, const json_t *x, const char *key, const json_t *want, const char *from, const char *name) {
  const json_t *got = json_object_get(x, key);
  if (!got || json_equal(got, want)) return;
  char q[DKB_PTR_MAX];
  jr_ptr_key(q, "/execution", key);
  lad_finding(c, "trace_contradicts_execution", q, "%s differs from the %s of trace '%s'", key, from, name);
}

/* The range, the correlation id, the dropped records and the profiler version are the meta record's. */
static void trace_meta(struct lctx *c, const json_t *x, const json_t *meta, const char *name) {
  meta_is(c, x, "nvtx_range", json_object_get(meta, "range_name"), "range_name", name);
  meta_is(c, x, "external_correlation_id", json_object_get(meta, "external_id"), "external_id", name);
  meta_is(c, x, "dropped_records", json_object_get(meta, "dropped_records"), "dropped_records", name);
  const char *version = json_string_value(json_object_get(json_object_get(x, "profiler"), "version"));
  const json_t *cupti = json_object_get(meta, "cupti_version");
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)json_integer_value(cupti));
  if (version && (!json_is_integer(cupti) || strcmp(version, v)))
    lad_finding(c, "trace_contradicts_execution", "/execution/profiler/version", "profiler version %s, trace '%s' was taken with CUPTI %s",
                version, name, json_is_integer(cupti) ? v : "of no stated version");
}

void lad_level5_trace(struct lctx *c, const json_t *x, const struct art *tr) {
  /* the range dkb opens around a call is named by the call's key digest */
  const char *range = json_string_value(json_object_get(x, "nvtx_range"));
  const char *digest = json_string_value(json_object_get(json_object_get(c->b, "dispatch"), "call_key_sha256"));
  char want[128];
  snprintf(want, sizeof want, "dkb/call/%s", digest ? digest : "");
  if (range && digest && strcmp(range, want))
    lad_finding(c, "nvtx_range_contradicts_call_key", "/execution/nvtx_range", "range '%s', the call key's is '%s'", range, want);
  if (c->bad || !tr || !tr->have_file) return;
  json_t *recs = lad_art_lines(c, tr);
  const json_t *meta = json_array_get(recs, 0), *schema = json_object_get(meta, "schema");
  if (!recs || !is_kind(meta, "meta") || !json_is_string(schema) || strcmp(json_string_value(schema), TRACE_RECORDS_SCHEMA_ID) ||
      !kernels_readable(recs)) {
    lad_finding(c, "trace_unreadable", "/execution/trace", "artifact '%s' is not %s JSON lines opening with its meta record",
                tr->name, TRACE_RECORDS_SCHEMA_ID);
    json_decref(recs);
    return;
  }
  trace_meta(c, x, meta, tr->name);
  json_t *want_k = kernels_of(recs, meta);
  trace_kernels(c, json_object_get(x, "kernels"), want_k, tr->name);
  json_decref(want_k);
  json_decref(recs);
}
