/* ladder_util.c - reading a bundle for the ladder through lib/jread.h, and recording what it finds (see
 * ladder_internal.h). A member of the wrong type makes the document "not a bundle" (the first such error
 * is kept); an absent member is missing evidence, which the level that needs it turns into a finding. */
#include "evidence/ladder_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lad_malformed(struct lctx *c, const char *ptr, const char *fmt, ...) {
  if (c->bad) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jr_fail(&c->r, ptr, NULL, "%s", msg);
  c->bad = 1;
}

void lad_finding(struct lctx *c, const char *reason, const char *ptr, const char *fmt, ...) {
  if (c->bad) return;
  const struct ladder_reason *r = ladder_reason_find(reason);
  if (!r || r->kind == LADDER_NOT_RECOMPUTABLE) DKB_BUG("'%s' is not a reason a finding can have", reason);
  struct ladder_result *res = c->res;
  if (res->n == res->cap) {
    res->cap = res->cap ? 2 * res->cap : 32;
    res->findings = DKB_REALLOC(res->findings, res->cap * sizeof *res->findings);
  }
  struct ladder_finding *f = &res->findings[res->n++];
  memset(f, 0, sizeof *f);
  f->level = r->level >= 0 ? r->level : c->level;
  f->kind = r->kind;
  f->reason = r->id;
  snprintf(f->pointer, sizeof f->pointer, "%s", ptr);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->detail, sizeof f->detail, fmt, ap);
  va_end(ap);
}

int lad_keys(struct lctx *c, const json_t *o, const char *ptr, const char *const *req, const char *const *opt) {
  if (c->bad) return -1;
  if (jr_keys(&c->r, o, ptr, req, opt)) { c->bad = 1; return -1; }
  return 0;
}

int lad_present(struct lctx *c, const json_t *o, const char *key) { return !c->bad && o && json_object_get(o, key); }

int lad_took(struct lctx *c, int rc) {
  if (rc < 0) c->bad = 1;
  return rc == 0;
}

const json_t *lad_member(struct lctx *c, const json_t *o, const char *ptr, const char *key, int type) {
  if (!lad_present(c, o, key)) return NULL;
  const json_t *v = jr_get(&c->r, o, ptr, key, 0, type);
  lad_took(c, v ? 0 : -1);
  return v;
}

const char *lad_str(struct lctx *c, const json_t *o, const char *ptr, const char *key, int identity) {
  const char *s = NULL;
  if (!LAD_READ(c, jr_str, o, ptr, key, &s)) return NULL;
  if (!*s && identity) lad_took(c, jr_fail(&c->r, ptr, key, "must not be empty"));
  return *s ? s : NULL;
}

int lad_is_hex(const char *s, size_t len) {
  if (!s || strlen(s) != len) return 0;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

int lad_digits(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}


/* The unqualified part of a symbol name: after the last "::". */
const char *lad_unqualified(const char *s) {
  const char *u = s;
  for (const char *p = s; (p = strstr(p, "::")); p += 2) u = p + 2;
  return u;
}

