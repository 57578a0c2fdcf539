/* trace_ladder.c - the findings of a dkb.trace/v1 bundle (see trace_ladder.h). Structure errors (a
 * section missing or of the wrong type) make the document malformed; missing or contradicting evidence is
 * always a finding. Each check names its reason id and the JSON Pointer of what it read. */
#include "evidence/trace_ladder.h"
#include "evidence/call_key.h"
#include "lib/cjson.h"
#include "lib/sha256.h"
#include "oracles/stats.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const trace_finding_names[TF_COUNT] = {"loaded", "declared", "executed", "checked", "timed"};

#define U LADDER_UNMET
#define I LADDER_INCONSISTENT
const struct trace_reason trace_reasons[] = {
    {"loaded_no_launch", TF_LOADED, U, "no launch in the range: the loader map is taken at an instance's first launch"},
    {"loaded_map_missing", TF_LOADED, U, "an instance with launches has no loader map"},
    {"loaded_map_incomplete", TF_LOADED, U, "the program could not list every mapped object"},
    {"loaded_object_unhashed", TF_LOADED, U, "a mapped object has no SHA-256 (gone or unreadable when dkb trace hashed it)"},
    {"loaded_object_changed", TF_LOADED, I, "a mapped object's file changed (device, inode, size or mtime) after the program mapped it"},
    {"loaded_module_unhashed", TF_LOADED, U, "a module a kernel ran from has no SHA-256"},
    {"loaded_kernel_module_unbound", TF_LOADED, U, "a kernel's symbol is in no loaded module's symbol table"},
    {"loaded_module_unknown", TF_LOADED, I, "a kernel names a module the bundle does not list"},
    {"loaded_distribution_record_mismatch", TF_LOADED, I, "an installed file's SHA-256 differs from its distribution's RECORD"},
    {"declared_not_a_call_range", TF_DECLARED, U, "the range is not named dkb/call/ + a call key"},
    {"declared_key_unparsable", TF_DECLARED, U, "the range's call key is not a JSON object"},
    {"declared_key_schema", TF_DECLARED, U, "the call key is not a dkb.call-key/v1 document"},
    {"declared_key_field_missing", TF_DECLARED, U, "the call key lacks a required field (article 0x0BE)"},
    {"declared_key_inconsistent", TF_DECLARED, I, "the call key contradicts itself (S_k_per_request length != B, H_q not a multiple of H_kv)"},
    {"declared_key_not_the_range", TF_DECLARED, I, "the bundle's call key is not the one in the range name"},
    {"declared_digest_mismatch", TF_DECLARED, I, "the call-key digest is missing or does not recompute"},
    {"executed_cupti_unavailable", TF_EXECUTED, U, "CUPTI was not dkb's in this process (another subscriber, no GPU, a fork child)"},
    {"executed_no_exit_path", TF_EXECUTED, U, "the process ended without its exit path (killed, os._exit): records after the last flush may be missing"},
    {"executed_not_flushed", TF_EXECUTED, U, "the final forced flush at exit failed or timed out"},
    {"executed_records_truncated", TF_EXECUTED, U, "the record file ends in a cut-off line"},
    {"executed_records_lost", TF_EXECUTED, U, "records could not be built or written, or the line count differs from the end record's"},
    {"executed_records_dropped", TF_EXECUTED, U, "CUPTI dropped activity records"},
    {"executed_range_open", TF_EXECUTED, U, "an instance of the range was never closed"},
    {"executed_no_kernels", TF_EXECUTED, U, "an instance ran no kernel"},
    {"executed_kernel_record_incomplete", TF_EXECUTED, U, "a kernel record has no start or end timestamp"},
    {"executed_launch_without_record", TF_EXECUTED, U, "a launch call that succeeded has no kernel record"},
    {"executed_counts_inconsistent", TF_EXECUTED, I, "the instances' kernel counts differ from the kernels' launch counts"},
    {"checked_not_declared", TF_CHECKED, U, "the call key is not declared, so no dump can be matched to it"},
    {"checked_no_dump", TF_CHECKED, U, "no dump of this call key was found"},
    {"checked_dump_malformed", TF_CHECKED, U, "a dump of this call key could not be read"},
    {"checked_dump_other_call", TF_CHECKED, I, "a dump listed for the range declares another call key"},
    {"checked_failed", TF_CHECKED, I, "a dump of this call key failed dkb check"},
    {"checked_report_inconsistent", TF_CHECKED, I, "a passing check report holds a violation, NaN, or a ratio above 1"},
    {"timed_not_executed", TF_TIMED, U, "executed does not hold: GPU durations of an incomplete trace are not kept"},
    {"timed_not_labelled_tracing", TF_TIMED, I, "timed must say tracing: true (CUPTI durations are taken with tracing on)"},
    {"timed_values_inconsistent", TF_TIMED, I, "the per-instance GPU times differ from the instances'"},
    {"timed_nonpositive", TF_TIMED, U, "an instance's GPU time is not positive"},
    {"timed_summary_mismatch", TF_TIMED, I, "the GPU time summary does not recompute from the per-instance values"},
    {"bundle_claim_unproven", -1, I, "the bundle claims a finding that does not hold"},
    {"bundle_article_level_claimed", -1, I, "a trace bundle claims no level of the article's ladder"},
    {"bundle_records_mismatch", -1, I, "the record file is missing or does not match its SHA-256"},
    {"bundle_split_combine_mismatch", -1, I, "split_combine or a kernel's role does not recompute from the kernel names"},
    {NULL, 0, U, NULL}};
#undef U
#undef I

struct tctx {
  struct jr r;
  struct trace_grade *g;
  const json_t *doc;
};

static const struct trace_reason *reason_of(const char *id) {
  for (const struct trace_reason *t = trace_reasons; t->id; t++)
    if (!strcmp(t->id, id)) return t;
  return NULL;
}

static void item(struct tctx *c, const char *id, const char *ptr, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void item(struct tctx *c, const char *id, const char *ptr, const char *fmt, ...) {
  const struct trace_reason *t = reason_of(id);
  if (!t) DKB_BUG("unknown trace reason '%s'", id);
  struct trace_grade *g = c->g;
  if (g->n == g->cap) g->items = DKB_REALLOC(g->items, (g->cap = g->cap ? 2 * g->cap : 16) * sizeof *g->items);
  struct trace_item *it = &g->items[g->n++];
  it->finding = t->finding;
  it->kind = t->kind;
  it->reason = t->id;
  snprintf(it->pointer, sizeof it->pointer, "%s", ptr);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it->detail, sizeof it->detail, fmt, ap);
  va_end(ap);
  if (t->finding >= 0) g->holds[t->finding] = 0;
}

/* Structure: a member of the given type or the document is malformed. */
static const json_t *need(struct tctx *c, const json_t *o, const char *ptr, const char *key, int type) {
  return jr_get(&c->r, o, ptr, key, 1, type);
}
static long long inum(const json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }
static int has_int(struct tctx *c, const json_t *o, const char *ptr, const char *key, long long *out) {
  return jr_int(&c->r, o, ptr, key, 1, -((long long)1 << 62), (long long)1 << 62, out) == 0;
}

const char TRACE_SPLIT_RULE[] =
    "by kernel name only (a heuristic over demangled names, case-insensitive): combine = combine, merge, "
    "lean_reduction (cuDNN's lean attention); split = splitkv, split_kv, flash_decoding, flashdecoding, "
    "flex_decoding, partition, paged_attention_v2; a combine seen means a split ran, whatever its kernel's "
    "name; a split or combine under another name, or inside one fused kernel, is not seen";

int trace_kernel_role(const char *demangled) {
  char low[512];
  size_t n = 0;
  for (; demangled && demangled[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)demangled[n]);
  low[n] = '\0';
  static const char *const COMBINE[] = {"combine", "merge", "lean_reduction", NULL};
  static const char *const SPLIT[] = {"splitkv", "split_kv", "flash_decoding", "flashdecoding", "flex_decoding",
                                      "partition", "paged_attention_v2", NULL};
  for (int i = 0; COMBINE[i]; i++)
    if (strstr(low, COMBINE[i])) return 1;
  for (int i = 0; SPLIT[i]; i++)
    if (strstr(low, SPLIT[i])) return 2;
  return 0;
}

/* ---- loaded ---- */

static int grade_loaded(struct tctx *c, const json_t *instances, const json_t *kernels) {
  const json_t *loaded = need(c, c->doc, "", "loaded", JSON_OBJECT);
  const json_t *maps = loaded ? need(c, loaded, "/loaded", "maps", JSON_ARRAY) : NULL;
  const json_t *mods = loaded ? need(c, loaded, "/loaded", "modules", JSON_ARRAY) : NULL;
  if (!maps || !mods) return -1;
  char p[DKB_PTR_MAX], q[DKB_PTR_MAX];
  size_t launched = 0;
  for (size_t i = 0; i < json_array_size(instances); i++) {
    const json_t *in = json_array_get(instances, i), *m = json_object_get(in, "loader_map");
    jr_ptr_idx(p, "/range/instances", i);
    if (inum(in, "launch_calls") == 0) continue;
    launched++;
    if (json_is_null(m)) { jr_ptr_key(q, p, "loader_map"); item(c, "loaded_map_missing", q, "instance %zu launched but has no loader map", i); }
    else if (!json_is_integer(m) || json_integer_value(m) < 0 || (size_t)json_integer_value(m) >= json_array_size(maps))
      return jr_fail(&c->r, p, "loader_map", "must be null or an index into /loaded/maps");
  }
  if (!launched) item(c, "loaded_no_launch", "/range/instances", "no instance made a launch call");
  for (size_t m = 0; m < json_array_size(maps); m++) {
    jr_ptr_idx(p, "/loaded/maps", m);
    const json_t *map = json_array_get(maps, m), *objs = need(c, map, p, "objects", JSON_ARRAY);
    if (!objs) return -1;
    if (json_is_false(json_object_get(map, "complete"))) item(c, "loaded_map_incomplete", p, "the program could not list every object");
    for (size_t i = 0; i < json_array_size(objs); i++) {
      const json_t *o = json_array_get(objs, i);
      jr_ptr_key(q, p, "objects");
      jr_ptr_idx(q, q, i);
      const char *path = json_string_value(json_object_get(o, "path")), *id = json_string_value(json_object_get(o, "identity"));
      if (!path || !id) return jr_fail(&c->r, q, NULL, "an object needs a path and an identity");
      if (!json_is_string(json_object_get(o, "sha256")))
        item(c, "loaded_object_unhashed", q, "%s: %s", path,
             json_string_value(json_object_get(o, "hash_error")) ? json_string_value(json_object_get(o, "hash_error")) : "no hash");
      if (strcmp(id, "unchanged")) item(c, "loaded_object_changed", q, "%s: %s since the program mapped it", path, id);
      const json_t *d = json_object_get(o, "distribution");
      if (json_is_object(d) && json_is_false(json_object_get(d, "record_match")))
        item(c, "loaded_distribution_record_mismatch", q, "%s: %s %s's RECORD says %s", path,
             json_string_value(json_object_get(d, "name")), json_string_value(json_object_get(d, "version")),
             json_string_value(json_object_get(d, "record_hash")));
    }
  }
  for (size_t i = 0; i < json_array_size(mods); i++)
    if (!json_is_string(json_object_get(json_array_get(mods, i), "sha256"))) {
      jr_ptr_idx(p, "/loaded/modules", i);
      item(c, "loaded_module_unhashed", p, "module %lld has no hash", inum(json_array_get(mods, i), "id"));
    }
  for (size_t k = 0; k < json_array_size(kernels); k++) {
    const json_t *kr = json_array_get(kernels, k), *km = json_object_get(kr, "modules");
    jr_ptr_idx(p, "/kernels", k);
    if (!json_is_array(km)) return jr_fail(&c->r, p, "modules", "must be an array of module ids");
    if (json_array_size(km) == 0)
      item(c, "loaded_kernel_module_unbound", p, "%s is in no module's symbol table", json_string_value(json_object_get(kr, "symbol")));
    for (size_t j = 0; j < json_array_size(km); j++) {
      int found = 0;
      for (size_t i = 0; i < json_array_size(mods) && !found; i++)
        found = json_integer_value(json_object_get(json_array_get(mods, i), "id")) == json_integer_value(json_array_get(km, j));
      if (!found) item(c, "loaded_module_unknown", p, "module %lld is not in /loaded/modules", (long long)json_integer_value(json_array_get(km, j)));
    }
  }
  return 0;
}

/* ---- declared ---- */

static int grade_declared(struct tctx *c, const char *name) {
  const json_t *d = need(c, c->doc, "", "declared", JSON_OBJECT);
  if (!d) return -1;
  if (strncmp(name, "dkb/call/", 9)) {
    item(c, "declared_not_a_call_range", "/range/name", "'%.200s' does not start with dkb/call/", name);
    return 0;
  }
  const json_t *key = json_object_get(d, "call_key");
  if (!json_is_object(key)) {
    const char *why = json_string_value(json_object_get(d, "parse_error"));
    item(c, "declared_key_unparsable", "/declared/call_key", "%s", why ? why : "no call key");
    return 0;
  }
  const char *schema = json_string_value(json_object_get(key, "schema"));
  if (!schema || strcmp(schema, "dkb.call-key/v1"))
    item(c, "declared_key_schema", "/declared/call_key/schema", "must be \"dkb.call-key/v1\" (got %s)", schema ? schema : "none");
  char p[DKB_PTR_MAX];
  for (size_t i = 0; i < call_key_nfields; i++) {  /* the required fields are members of the key itself */
    const char *name = call_key_fields[i].pointer + 1;
    if (call_key_fields[i].need != CK_REQUIRED || strchr(name, '/') || json_object_get(key, name)) continue;
    jr_ptr_key(p, "/declared/call_key", name);
    item(c, "declared_key_field_missing", p, "the call key has no %s", name);
  }
  if (!json_object_get(key, "tolerances")) item(c, "declared_key_field_missing", "/declared/call_key/tolerances", "the call key has no tolerances");
  const json_t *B = json_object_get(key, "B"), *lens = json_object_get(key, "S_k_per_request");
  if (json_is_integer(B) && json_is_array(lens) && (long long)json_array_size(lens) != json_integer_value(B))
    item(c, "declared_key_inconsistent", "/declared/call_key/S_k_per_request", "%zu lengths for B = %lld", json_array_size(lens),
         (long long)json_integer_value(B));
  const json_t *hq = json_object_get(key, "H_q"), *hkv = json_object_get(key, "H_kv");
  if (json_is_integer(hq) && json_is_integer(hkv) && (json_integer_value(hkv) <= 0 || json_integer_value(hq) % json_integer_value(hkv)))
    item(c, "declared_key_inconsistent", "/declared/call_key/H_kv", "H_q = %lld is not a multiple of H_kv = %lld",
         (long long)json_integer_value(hq), (long long)json_integer_value(hkv));
  struct dkb_err e;
  json_t *from_name = jr_load_string(name + 9, "range name", &e);
  if (!from_name || !json_equal(from_name, key))
    item(c, "declared_key_not_the_range", "/declared/call_key", "differs from the JSON in /range/name");
  json_decref(from_name);
  char sha[65];
  const char *stated = json_string_value(json_object_get(d, "call_key_sha256"));
  if (cjson_digest(key, sha, &e) || !stated || strcmp(sha, stated))
    item(c, "declared_digest_mismatch", "/declared/call_key_sha256", "recomputed %s, stated %s", sha, stated ? stated : "none");
  return 0;
}

/* ---- executed ---- */

static int grade_executed(struct tctx *c, const json_t *instances, const json_t *kernels) {
  const json_t *pr = need(c, c->doc, "", "process", JSON_OBJECT);
  const json_t *cupti = pr ? need(c, pr, "/process", "cupti", JSON_OBJECT) : NULL;
  const json_t *rec = pr ? need(c, pr, "/process", "records", JSON_OBJECT) : NULL;
  if (!cupti || !rec) return -1;
  const char *status = json_string_value(json_object_get(cupti, "status"));
  if (!status) return jr_fail(&c->r, "/process/cupti", "status", "must be a string");
  if (strcmp(status, "subscribed")) {
    const char *why = json_string_value(json_object_get(json_object_get(cupti, "subscribe"), "text"));
    item(c, "executed_cupti_unavailable", "/process/cupti/status", "%s%s%s", status, why ? ": " : "", why ? why : "");
  }
  int has_end = json_is_true(json_object_get(pr, "end_record"));
  if (!has_end) item(c, "executed_no_exit_path", "/process/end_record", "pid %lld left no end record", inum(pr, "pid"));
  if (json_is_true(json_object_get(rec, "truncated"))) item(c, "executed_records_truncated", "/process/records/truncated", "the last line is cut off");
  const json_t *end = json_object_get(pr, "end");
  if (has_end) {
    if (!json_is_object(end)) return jr_fail(&c->r, "/process", "end", "must be an object when end_record is true");
    if (inum(end, "lines_stated") != inum(end, "lines_read") || inum(end, "lost") || inum(end, "write_errors"))
      item(c, "executed_records_lost", "/process/end", "%lld lines stated, %lld read, %lld lost, %lld write errors",
           inum(end, "lines_stated"), inum(end, "lines_read"), inum(end, "lost"), inum(end, "write_errors"));
    const char *fl = json_string_value(json_object_get(pr, "exit_flush"));
    if (!strcmp(status, "subscribed") && (!fl || strcmp(fl, "done")))
      item(c, "executed_not_flushed", "/process/exit_flush", "%s", fl ? fl : "no flush at exit");
  }
  if (inum(pr, "dropped_records")) item(c, "executed_records_dropped", "/process/dropped_records", "%lld records dropped", inum(pr, "dropped_records"));
  char p[DKB_PTR_MAX];
  long long total = 0, launches = 0;
  for (size_t i = 0; i < json_array_size(instances); i++) {
    const json_t *in = json_array_get(instances, i);
    jr_ptr_idx(p, "/range/instances", i);
    long long k = 0, inc = 0, miss = 0;
    if (!has_int(c, in, p, "kernels", &k) || !has_int(c, in, p, "incomplete_kernel_records", &inc) ||
        !has_int(c, in, p, "launches_without_record", &miss))
      return -1;
    total += k;
    if (!json_is_true(json_object_get(in, "closed"))) item(c, "executed_range_open", p, "instance %zu (thread %lld) was never popped", i, inum(in, "thread_id"));
    if (k == 0) item(c, "executed_no_kernels", p, "instance %zu ran no kernel", i);
    if (inc) item(c, "executed_kernel_record_incomplete", p, "%lld kernel records without timestamps", inc);
    if (miss) item(c, "executed_launch_without_record", p, "%lld launch calls have no kernel record", miss);
  }
  for (size_t i = 0; i < json_array_size(kernels); i++) {
    jr_ptr_idx(p, "/kernels", i);
    long long l = 0;
    if (!has_int(c, json_array_get(kernels, i), p, "launches", &l)) return -1;
    launches += l;
  }
  if (total != launches) item(c, "executed_counts_inconsistent", "/kernels", "instances count %lld kernels, the kernels %lld launches", total, launches);
  return 0;
}

/* ---- checked ---- */

static int grade_checked(struct tctx *c) {
  const json_t *ch = need(c, c->doc, "", "checked", JSON_OBJECT);
  const json_t *dumps = ch ? need(c, ch, "/checked", "dumps", JSON_ARRAY) : NULL;
  if (!dumps) return -1;
  if (!c->g->holds[TF_DECLARED]) item(c, "checked_not_declared", "/declared", "declared does not hold");
  if (json_array_size(dumps) == 0) item(c, "checked_no_dump", "/checked/dumps", "no dump declares this call key");
  const char *sha = json_string_value(json_object_get(json_object_get(c->doc, "declared"), "call_key_sha256"));
  char p[DKB_PTR_MAX];
  for (size_t i = 0; i < json_array_size(dumps); i++) {
    const json_t *d = json_array_get(dumps, i);
    jr_ptr_idx(p, "/checked/dumps", i);
    if (json_object_get(d, "error")) { item(c, "checked_dump_malformed", p, "%s", json_string_value(json_object_get(d, "error"))); continue; }
    const char *dsha = json_string_value(json_object_get(d, "call_key_sha256"));
    const json_t *rep = json_object_get(d, "report"), *corr = json_object_get(rep, "correctness");
    if (!dsha || !sha || strcmp(dsha, sha)) item(c, "checked_dump_other_call", p, "the dump declares %s", dsha ? dsha : "no call key");
    if (!json_is_true(json_object_get(d, "passed"))) { item(c, "checked_failed", p, "%s failed dkb check", json_string_value(json_object_get(d, "dir"))); continue; }
    int bad = !json_is_true(json_object_get(rep, "passed")) || !json_is_true(json_object_get(corr, "passed")) ||
              !dsha || strcmp(dsha, json_string_value(json_object_get(rep, "call_key_sha256")) ? json_string_value(json_object_get(rep, "call_key_sha256")) : "");
    const char *const parts[] = {"output", "lse", "cache"};
    for (int k = 0; k < 3 && !bad; k++) {
      const json_t *cmp = json_object_get(corr, parts[k]);
      if (!json_is_object(cmp)) continue;
      bad = inum(cmp, "violations") || inum(cmp, "nan") || json_number_value(json_object_get(cmp, "max_ratio")) > 1.0;
    }
    if (bad) item(c, "checked_report_inconsistent", p, "a passing dump whose report holds a violation or says otherwise");
  }
  return 0;
}

/* ---- timed ---- */

static int grade_timed(struct tctx *c, const json_t *instances) {
  const json_t *t = need(c, c->doc, "", "timed", JSON_OBJECT);
  const json_t *vals = t ? need(c, t, "/timed", "per_instance_gpu_ns", JSON_ARRAY) : NULL;
  if (!vals) return -1;
  if (!c->g->holds[TF_EXECUTED]) item(c, "timed_not_executed", "/timed", "executed does not hold");
  if (!json_is_true(json_object_get(t, "tracing"))) item(c, "timed_not_labelled_tracing", "/timed/tracing", "must be true");
  size_t n = json_array_size(vals);
  if (n != json_array_size(instances))
    item(c, "timed_values_inconsistent", "/timed/per_instance_gpu_ns", "%zu values for %zu instances", n, json_array_size(instances));
  double *v = DKB_MALLOC((n ? n : 1) * sizeof *v);
  char p[DKB_PTR_MAX];
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(vals, i);
    jr_ptr_idx(p, "/timed/per_instance_gpu_ns", i);
    if (!json_is_integer(x)) { free(v); return jr_fail(&c->r, p, NULL, "must be an integer"); }
    v[i] = (double)json_integer_value(x);
    if (json_integer_value(x) <= 0) item(c, "timed_nonpositive", p, "instance %zu: %lld ns", i, (long long)json_integer_value(x));
    if (i < json_array_size(instances) && json_integer_value(x) != inum(json_array_get(instances, i), "gpu_ns"))
      item(c, "timed_values_inconsistent", p, "differs from /range/instances/%zu/gpu_ns", i);
  }
  struct dkb_stats st;
  dkb_stats_compute(v, n, &st);
  free(v);
  const json_t *s = json_object_get(t, "summary");
  if (n && !json_is_object(s)) item(c, "timed_summary_mismatch", "/timed/summary", "no summary of %zu values", n);
  if (json_is_object(s)) {
    const char *const keys[] = {"min", "median", "max"};
    const double want[] = {st.min, st.median, st.max};
    int ok = inum(s, "count") == (long long)st.count;
    for (int k = 0; k < 3; k++) ok &= fabs(json_number_value(json_object_get(s, keys[k])) - want[k]) <= 1e-9 * fabs(want[k]) + 1e-9;
    if (!ok) item(c, "timed_summary_mismatch", "/timed/summary", "recomputed count %zu, min %.17g, median %.17g, max %.17g", st.count, st.min, st.median, st.max);
  }
  return 0;
}

/* ---- the bundle ---- */

/* Each kernel's role, split_combine's flags and lists, and its rule, recomputed from the kernel names. */
static int grade_split_combine(struct tctx *c, const json_t *kernels) {
  const json_t *sc = need(c, c->doc, "", "split_combine", JSON_OBJECT);
  const json_t *sk = sc ? need(c, sc, "/split_combine", "split_kernels", JSON_ARRAY) : NULL;
  const json_t *ck = sc ? need(c, sc, "/split_combine", "combine_kernels", JSON_ARRAY) : NULL;
  const char *rule = NULL;
  if (!sk || !ck || jr_str(&c->r, sc, "/split_combine", "rule", 1, &rule)) return -1;
  if (strcmp(rule, TRACE_SPLIT_RULE)) item(c, "bundle_split_combine_mismatch", "/split_combine/rule", "is not this dkb's rule");
  size_t nsplit = 0, ncombine = 0;
  char p[DKB_PTR_MAX];
  for (size_t k = 0; k < json_array_size(kernels); k++) {
    const json_t *kr = json_array_get(kernels, k), *role = json_object_get(kr, "role");
    const char *dem = NULL;
    jr_ptr_idx(p, "/kernels", k);
    if (jr_str(&c->r, kr, p, "demangled", 1, &dem)) return -1;
    int r = trace_kernel_role(dem);
    const char *want = r == 1 ? "combine" : r == 2 ? "split" : NULL, *got = json_string_value(role);
    nsplit += r == 2;
    ncombine += r == 1;
    if (want ? !got || strcmp(got, want) : !json_is_null(role))
      item(c, "bundle_split_combine_mismatch", p, "role is %s, the rule gives %s", got ? got : "null", want ? want : "null");
  }
  int split = json_is_true(json_object_get(sc, "split")), combine = json_is_true(json_object_get(sc, "combine"));
  if (split != (nsplit + ncombine > 0) || combine != (ncombine > 0) || json_array_size(sk) != nsplit ||
      json_array_size(ck) != ncombine)
    item(c, "bundle_split_combine_mismatch", "/split_combine",
         "says split %s, combine %s with %zu and %zu kernels; the kernels give %s, %s with %zu and %zu", split ? "yes" : "no",
         combine ? "yes" : "no", json_array_size(sk), json_array_size(ck), nsplit + ncombine ? "yes" : "no",
         ncombine ? "yes" : "no", nsplit, ncombine);
  return 0;
}

static int grade_bundle(struct tctx *c, const char *bundle_dir) {
  const char *al = json_string_value(json_object_get(c->doc, "article_levels"));
  if (!al || strcmp(al, "not_claimed") || json_object_get(c->doc, "claimed_level"))
    item(c, "bundle_article_level_claimed", "/article_levels", "must be \"not_claimed\" (got %s)", al ? al : "something else");
  const json_t *claims = json_object_get(c->doc, "claims");
  if (claims && !json_is_array(claims)) return jr_fail(&c->r, "", "claims", "must be an array of finding names");
  for (size_t i = 0; i < json_array_size(claims); i++) {
    const char *nm = json_string_value(json_array_get(claims, i));
    int f = -1;
    for (int k = 0; nm && k < TF_COUNT; k++)
      if (!strcmp(nm, trace_finding_names[k])) f = k;
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/claims", i);
    if (f < 0) return jr_fail(&c->r, p, NULL, "must be one of loaded, declared, executed, checked, timed");
    c->g->claimed[f] = 1;
    if (!c->g->holds[f]) item(c, "bundle_claim_unproven", p, "claims %s, which does not hold", nm);
  }
  if (bundle_dir) {
    const json_t *rec = json_object_get(json_object_get(c->doc, "process"), "records");
    const char *file = json_string_value(json_object_get(rec, "file")), *sha = json_string_value(json_object_get(rec, "sha256"));
    char path[8400], got[65];
    struct dkb_err e;
    /* bundles lie in calls/, the record files in records/ beside it */
    snprintf(path, sizeof path, "%s/../%s", bundle_dir, file ? file : "");
    if (!file || !sha || dkb_sha256_file(path, got, &e) || strcmp(got, sha))
      item(c, "bundle_records_mismatch", "/process/records", "%s: %s", path, file && sha ? "missing or its SHA-256 differs" : "no file or hash named");
  }
  return 0;
}

void trace_grade_init(struct trace_grade *g) { memset(g, 0, sizeof *g); }
void trace_grade_release(struct trace_grade *g) { free(g->items); memset(g, 0, sizeof *g); }

int trace_ladder_evaluate(const json_t *doc, const char *file, const char *bundle_dir, struct trace_grade *g,
                          struct dkb_err *err) {
  trace_grade_release(g);
  for (int f = 0; f < TF_COUNT; f++) g->holds[f] = 1;
  struct tctx c = {.r = {.file = file, .err = err, .code = DKB_INPUT}, .g = g, .doc = doc};
  static const char *const req[] = {"schema", "meta", "article_levels", "program", "process", "range", "declared", "kernels",
                                    "split_combine", "loaded", "checked", "timed", NULL};
  static const char *const opt[] = {"findings", "claims", NULL};
  const char *schema = NULL;
  if (jr_keys(&c.r, doc, "", req, opt) || jr_str(&c.r, doc, "", "schema", 1, &schema)) return -1;
  if (strcmp(schema, TRACE_SCHEMA_ID)) return jr_fail(&c.r, "", "schema", "must be \"%s\" (got \"%s\")", TRACE_SCHEMA_ID, schema);
  const json_t *range = need(&c, doc, "", "range", JSON_OBJECT);
  const json_t *instances = range ? need(&c, range, "/range", "instances", JSON_ARRAY) : NULL;
  const json_t *kernels = need(&c, doc, "", "kernels", JSON_ARRAY);
  const char *name = NULL;
  if (!instances || !kernels || jr_str(&c.r, range, "/range", "name", 1, &name)) return -1;
  if (json_array_size(instances) == 0) return jr_fail(&c.r, "/range", "instances", "a trace bundle has at least one instance of its range");
  for (size_t i = 0; i < json_array_size(instances); i++)
    if (!json_is_object(json_array_get(instances, i))) return jr_fail(&c.r, "/range/instances", NULL, "must hold objects");
  if (grade_loaded(&c, instances, kernels) || grade_declared(&c, name) || grade_executed(&c, instances, kernels) ||
      grade_checked(&c) || grade_timed(&c, instances) || grade_split_combine(&c, kernels) || grade_bundle(&c, bundle_dir))
    return -1;
  return 0;
}

int trace_grade_honest(const struct trace_grade *g) {
  for (size_t i = 0; i < g->n; i++)
    if (g->items[i].finding < 0) return 0;
  return 1;
}

static const char *kind_name(enum ladder_kind k) { return k == LADDER_UNMET ? "unmet" : "inconsistent"; }

json_t *trace_grade_json(const struct trace_grade *g) {
  json_t *out = json_object(), *bundle = json_array();
  for (int f = 0; f < TF_COUNT; f++) json_object_set_new(out, trace_finding_names[f], json_pack("{s:b,s:[]}", "holds", g->holds[f], "reasons"));
  for (size_t i = 0; i < g->n; i++) {
    const struct trace_item *it = &g->items[i];
    json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "reason", it->reason, "kind", kind_name(it->kind), "pointer", it->pointer, "detail", it->detail);
    if (it->finding < 0) json_array_append_new(bundle, r);
    else json_array_append_new(json_object_get(json_object_get(out, trace_finding_names[it->finding]), "reasons"), r);
  }
  json_object_set_new(out, "bundle", bundle);
  return out;
}

json_t *trace_grade_claims(const struct trace_grade *g) {
  json_t *a = json_array();
  for (int f = 0; f < TF_COUNT; f++)
    if (g->holds[f]) json_array_append_new(a, json_string(trace_finding_names[f]));
  return a;
}
