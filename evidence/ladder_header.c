/* ladder_header.c - the top of a bundle (see ladder_internal.h): schema id, meta, claimed level, fixture
 * identity and status. Everything here is structure: a violation makes the document "not a bundle". */
#include "evidence/ladder_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/sha256.h"

/* RFC 3339 UTC as dkb writes it: YYYY-MM-DDTHH:MM:SS[.fraction]Z. */
static int is_utc_timestamp(const char *s) {
  size_t n = strlen(s);
  if (n < 20 || s[n - 1] != 'Z') return 0;
  if (!(lad_digits(s, 4) && s[4] == '-' && lad_digits(s + 5, 2) && s[7] == '-' && lad_digits(s + 8, 2) && s[10] == 'T' &&
        lad_digits(s + 11, 2) && s[13] == ':' && lad_digits(s + 14, 2) && s[16] == ':' && lad_digits(s + 17, 2)))
    return 0;
  if (n == 20) return 1;
  return s[19] == '.' && n > 21 && lad_digits(s + 20, n - 21);
}

void lad_read_header(struct lctx *c) {
  static const char *const top_req[] = {"schema", "meta", "synthetic", "claimed_level", "status", "fixture",
                                        "artifacts", NULL};
  static const char *const top_opt[] = {"source", "chain", "loaded", "dispatch", "execution", "measurement", "ledgers",
                                        "dump", NULL};
  static const char *const meta_req[] = {"tool", "version", "commit", "dirty", "argv", "created", "host", NULL};
  static const char *const fix_req[] = {"path", "name", "sha256", NULL};
  const json_t *b = c->b;
  if (!json_is_object(b)) { lad_malformed(c, "/", "must be an object (got %s)", jr_type_name(b)); return; }
  const json_t *s = json_object_get(b, "schema");
  if (!json_is_string(s) || strcmp(json_string_value(s), BUNDLE_SCHEMA_ID)) {
    if (!s) lad_malformed(c, "/", "missing required key 'schema' (not a dkb bundle)");
    else if (!json_is_string(s)) lad_malformed(c, "/schema", "must be '%s' (got %s)", BUNDLE_SCHEMA_ID, jr_type_name(s));
    else lad_malformed(c, "/schema", "must be '%s' (got '%s')", BUNDLE_SCHEMA_ID, json_string_value(s));
    return;
  }
  if (lad_keys(c, b, "", top_req, top_opt)) return;
  const json_t *m = lad_member(c, b, "", "meta", JSON_OBJECT);
  if (lad_keys(c, m, "/meta", meta_req, NULL)) return;
  const char *tool = lad_str(c, m, "/meta", "tool", 1);
  if (tool && strcmp(tool, "dkb")) lad_malformed(c, "/meta/tool", "must be 'dkb' (got '%s')", tool);
  lad_str(c, m, "/meta", "version", 1);
  c->meta_commit = lad_str(c, m, "/meta", "commit", 1);
  if (c->meta_commit && !lad_is_hex(c->meta_commit, 40))
    lad_malformed(c, "/meta/commit", "must be 40 lower-case hex digits (got '%s')", c->meta_commit);
  c->meta_dirty = json_is_true(lad_member(c, m, "/meta", "dirty", JSON_TRUE));
  const json_t *argv = NULL;
  if (LAD_READ(c, jr_str_array, m, "/meta", "argv", 0, &argv) && !json_array_size(argv))
    lad_malformed(c, "/meta/argv", "must not be empty");
  const char *created = lad_str(c, m, "/meta", "created", 1);
  if (created && !is_utc_timestamp(created))
    lad_malformed(c, "/meta/created", "must be an RFC 3339 UTC time like 2026-11-30T12:00:00Z (got '%s')", created);
  lad_str(c, m, "/meta", "host", 1);
  c->res->synthetic = json_is_true(lad_member(c, b, "", "synthetic", JSON_TRUE));
  long long claimed = 0;
  LAD_READ(c, jr_int, b, "", "claimed_level", 0, LADDER_MAX_LEVEL, &claimed);
  c->res->claimed = (int)claimed;
  const json_t *f = lad_member(c, b, "", "fixture", JSON_OBJECT);
  if (lad_keys(c, f, "/fixture", fix_req, NULL)) return;
  lad_str(c, f, "/fixture", "path", 1);
  lad_str(c, f, "/fixture", "name", 1);
  const char *fsha = json_string_value(lad_member(c, f, "/fixture", "sha256", JSON_STRING));
  if (fsha && !dkb_is_sha256_hex(fsha)) lad_malformed(c, "/fixture/sha256", "must be 64 lower-case hex digits (got '%s')", fsha);
}

const json_t *lad_read_status(struct lctx *c) {
  static const char *const req[] = {"terminal", "reasons", NULL};
  static const char *const rreq[] = {"id", "detail", NULL};
  const json_t *s = lad_member(c, c->b, "", "status", JSON_OBJECT);
  if (lad_keys(c, s, "/status", req, NULL)) return NULL;
  int t = -1;
  LAD_READ(c, jr_enum, s, "/status", "terminal", lad_terminals, &t);
  if (t >= 0) snprintf(c->res->terminal, sizeof c->res->terminal, "%s", lad_terminals[t]);
  const json_t *rs = lad_member(c, s, "/status", "reasons", JSON_ARRAY);
  for (size_t i = 0; rs && i < json_array_size(rs) && !c->bad; i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/status/reasons", i);
    const json_t *r = json_array_get(rs, i);
    if (lad_keys(c, r, p, rreq, NULL)) break;
    const char *id = lad_str(c, r, p, "id", 1);
    lad_member(c, r, p, "detail", JSON_STRING);
    int ok = id && (*id >= 'a' && *id <= 'z');
    for (const char *q = id; ok && *q; q++) ok = (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_';
    if (id && !ok) {
      char q[DKB_PTR_MAX];
      jr_ptr_key(q, p, "id");
      lad_malformed(c, q, "must be a snake_case id (got '%s')", id);
    }
  }
  return s;
}

