/* ladder_call.c - level 4, what the call's record is derived from and must agree with: the fixture file
 * it was read from (re-hashed under --source-root), the plan record the dispatch record's split count and
 * workspace come from, and the logical ledgers (article 0x03F), which recompute from the call key and the
 * plan record alone (evidence/call_key.h: the formulas dkb's writer uses). */
#include "evidence/ladder_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "evidence/call_key.h"
#include "lib/sha256.h"

/* --source-root: the fixture file hashes to /fixture/sha256 (a relative path under the root, an absolute
 * one as it is). */
static void call_fixture(struct lctx *c) {
  if (!c->o || !c->o->source_root) return;
  const json_t *f = json_object_get(c->b, "fixture");
  const char *path = json_string_value(json_object_get(f, "path"));
  const char *sha = json_string_value(json_object_get(f, "sha256"));
  if (!path || !sha) return;
  char full[4096], hex[65];
  if (path[0] == '/') snprintf(full, sizeof full, "%s", path);
  else snprintf(full, sizeof full, "%s/%s", c->o->source_root, path);
  struct dkb_err e;
  if (dkb_sha256_file(full, hex, &e))
    lad_finding(c, "fixture_unreadable", "/fixture/path", "cannot read the fixture '%s': %s", full, e.msg);
  else if (strcmp(hex, sha))
    lad_finding(c, "fixture_sha256_mismatch", "/fixture/sha256", "'%s' hashes to %s under the source root, the bundle says %s",
                path, hex, sha);
}

/* An integer member of the plan record, or -1 when it has none. */
static long long plan_int(const json_t *plan, const char *key) {
  const json_t *v = json_object_get(plan, key);
  return json_is_integer(v) && json_integer_value(v) >= 0 ? (long long)json_integer_value(v) : -1;
}

/* A plan whose combine is "none ..." runs in one pass: "none (direct)", or a backend that ignores the
 * split plan ("none (naive backend, one pass)"). */
static int plan_one_pass(const json_t *plan) {
  const char *combine = json_string_value(json_object_get(plan, "combine"));
  return combine && !strncmp(combine, "none", 4);
}

/* The dispatch record's split_count and workspace_bytes are the plan record's (dkb's planner's fields:
 * a plugin's plan document has its own, and its workspaces are checked against /dispatch/backend). A
 * bundle that records the backend's workspaces takes workspace_bytes from them (ladder_backend.c): what
 * dkb allocates for the launches, where the plan record counts the split states' bytes wherever they live.
 * The two agree when the states live in global memory (workspace_memory "global"); a cluster plan's stay
 * in shared memory, and the naive backend's scores are a workspace its one-pass plan record does not count. */
static void call_plan(struct lctx *c, const json_t *d, const json_t *plan) {
  const long long split = plan_int(d, "split_count"), ws = plan_int(d, "workspace_bytes");
  const long long slots = plan_int(plan, "max_slots_per_request"), pws = plan_int(plan, "workspace_bytes");
  const int one = plan_one_pass(plan), recorded = lad_backend(c) != NULL;
  const char *mem = json_string_value(json_object_get(plan, "workspace_memory"));
  const int global = mem && !strcmp(mem, "global");
  const long long want_split = one ? 1 : slots, want_ws = recorded ? (global && !one ? pws : -1) : one ? 0 : pws;
  if (split >= 0 && want_split >= 0 && split != want_split)
    lad_finding(c, "dispatch_contradicts_plan", "/dispatch/split_count", "split_count %lld, the plan record gives %lld (%s)",
                split, want_split, one ? "its combine is none: one pass" : "max_slots_per_request");
  if (json_is_null(json_object_get(d, "split_count")) && want_split >= 0)  /* dkb's planner always knows its split */
    lad_finding(c, "dispatch_contradicts_plan", "/dispatch/split_count", "split_count null (unreported), the plan record gives %lld (%s)",
                want_split, one ? "its combine is none: one pass" : "max_slots_per_request");
  if (ws >= 0 && want_ws >= 0 && ws != want_ws)
    lad_finding(c, "dispatch_contradicts_plan", "/dispatch/workspace_bytes", "workspace_bytes %lld, the plan record gives %lld (%s)",
                ws, want_ws, one ? "its combine is none: no workspace" : "/dispatch/plan/workspace_bytes");
}

/* One ledger against its recomputation. */
static void ledger_is(struct lctx *c, const json_t *ledgers, const char *key, int64_t want, const char *from) {
  char q[DKB_PTR_MAX];
  jr_ptr_key(q, "/ledgers", key);
  const json_t *v = json_object_get(ledgers, key);
  if (!json_is_integer(v))
    lad_finding(c, "ledgers_mismatch", q, "no %s; %s gives %" PRId64, key, from, want);
  else if ((int64_t)json_integer_value(v) != want)
    lad_finding(c, "ledgers_mismatch", q, "%s is %" PRId64 ", %s gives %" PRId64, key, (int64_t)json_integer_value(v), from, want);
}

/* The ledgers recompute from the call key (unique K/V, Q/O) and the plan record (visible K/V, the
 * workspace round trip: written and read back once, none for a direct plan). */
static void call_ledgers(struct lctx *c, const json_t *ck, const json_t *plan) {
  const json_t *ledgers = lad_member(c, c->b, "", "ledgers", JSON_OBJECT);
  if (c->bad) return;
  if (!ledgers) {
    lad_finding(c, "ledgers_missing", "/ledgers", "no logical ledgers of the call");
    return;
  }
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)ledgers, name, v) {
    if (json_is_integer(v) || json_is_string(v)) continue;
    char q[DKB_PTR_MAX];
    jr_ptr_key(q, "/ledgers", name);
    lad_malformed(c, q, "must be an integer or a string (got %s)", jr_type_name(v));
    return;
  }
  struct call_key_sizes z;
  char why[128];
  if (!ck || call_key_sizes_read(ck, &z, why)) return;  /* the call key's own findings say why */
  const char *key = "/dispatch/call_key";
  ledger_is(c, ledgers, "unique_kv_bytes", call_key_kv_bytes(z.keys, z.h_kv, z.d_qk, z.d_v, z.e_kv), key);
  ledger_is(c, ledgers, "q_o_bytes", call_key_qo_bytes(z.b, z.s_q, z.h_q, z.d_qk, z.d_v, z.e_q, z.e_o), key);
  if (!plan) return;  /* dkb records the plan of a selected backend only */
  const long long visible = plan_int(plan, "visible_keys"), ws = plan_int(plan, "workspace_bytes");
  const json_t *direct = json_object_get(plan, "direct");
  if (visible >= 0)
    ledger_is(c, ledgers, "visible_kv_bytes", call_key_kv_bytes(visible, z.h_kv, z.d_qk, z.d_v, z.e_kv),
              "/dispatch/plan/visible_keys");
  const json_t *dws = json_object_get(json_object_get(c->b, "dispatch"), "workspace_bytes");
  if (lad_backend(c) && json_is_integer(dws))  /* what the backend's launches write and read back once */
    ledger_is(c, ledgers, "workspace_round_trip_bytes", 2 * (int64_t)json_integer_value(dws), "/dispatch/workspace_bytes");
  else if (ws >= 0 && json_is_boolean(direct))
    ledger_is(c, ledgers, "workspace_round_trip_bytes", json_is_true(direct) ? 0 : 2 * (int64_t)ws, "/dispatch/plan/workspace_bytes");
}

void lad_level4_call(struct lctx *c, const json_t *d) {
  const json_t *plan = lad_member(c, d, "/dispatch", "plan", JSON_OBJECT);
  if (c->bad) return;
  call_fixture(c);
  if (plan && c->outcome && !strcmp(c->outcome, "selected")) call_plan(c, d, plan);
  call_ledgers(c, json_object_get(d, "call_key"), plan);
}
