/* ladder_util.c - reading a bundle for the ladder, and recording what it finds (see ladder_internal.h).
 * A member of the wrong type makes the document "not a bundle" (the first such error is kept); an absent
 * member is missing evidence, which the level that needs it turns into a finding. */
#include "evidence/ladder_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lad_ty_name(enum ty t) {
  static const char *n[] = {"an object", "an array", "a string", "an integer", "a number", "a boolean",
                            "a string or null"};
  return n[t];
}

int lad_ty_ok(const json_t *v, enum ty t) {
  switch (t) {
  case TY_OBJ: return json_is_object(v);
  case TY_ARR: return json_is_array(v);
  case TY_STR: return json_is_string(v);
  case TY_INT: return json_is_integer(v);
  case TY_NUM: return json_is_number(v);
  case TY_BOOL: return json_is_boolean(v);
  case TY_STR_NULL: return json_is_string(v) || json_is_null(v);
  }
  return 0;
}

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

void lad_finding(struct lctx *c, int level, const char *reason, const char *ptr, const char *fmt, ...) {
  if (c->bad) return;
  const struct ladder_reason *r = ladder_reason_find(reason);
  if (!r) DKB_BUG("unknown ladder reason '%s'", reason);
  struct ladder_result *res = c->res;
  if (res->n == res->cap) {
    res->cap = res->cap ? 2 * res->cap : 32;
    res->findings = DKB_REALLOC(res->findings, res->cap * sizeof *res->findings);
  }
  struct ladder_finding *f = &res->findings[res->n++];
  memset(f, 0, sizeof *f);
  f->level = level;
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

/* The member `key` of o if present and of type t; NULL when absent, or (c->bad set) of another type. */
const json_t *lad_get(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t) {
  if (c->bad || !o) return NULL;
  const json_t *v = json_object_get(o, key);
  if (!v) return NULL;
  if (!lad_ty_ok(v, t)) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    lad_malformed(c, p, "must be %s (got %s)", lad_ty_name(t), jr_type_name(v));
    return NULL;
  }
  return v;
}

/* A string member; NULL when absent or (evidence strings) empty. Identity strings must not be empty. */
const char *lad_str(struct lctx *c, const json_t *o, const char *ptr, const char *key, int identity) {
  const json_t *v = lad_get(c, o, ptr, key, TY_STR);
  if (!v) return NULL;
  const char *s = json_string_value(v);
  if (!*s && identity) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    lad_malformed(c, p, "must not be empty");
    return NULL;
  }
  return *s ? s : NULL;
}

/* An integer member >= lo: 1 with *out set when present, 0 when absent (or malformed). */
int lad_int(struct lctx *c, const json_t *o, const char *ptr, const char *key, long long lo, long long *out) {
  const json_t *v = lad_get(c, o, ptr, key, TY_INT);
  if (!v) return 0;
  long long x = json_integer_value(v);
  if (x < lo) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    lad_malformed(c, p, "must be >= %lld (got %lld)", lo, x);
    return 0;
  }
  *out = x;
  return 1;
}

/* A number member >= lo: 1 with *out set when present. */
int lad_num(struct lctx *c, const json_t *o, const char *ptr, const char *key, double lo, double *out) {
  const json_t *v = lad_get(c, o, ptr, key, TY_NUM);
  if (!v) return 0;
  double x = json_number_value(v);
  if (x < lo) {
    char p[DKB_PTR_MAX];
    jr_ptr_key(p, ptr, key);
    lad_malformed(c, p, "must be >= %g (got %.17g)", lo, x);
    return 0;
  }
  *out = x;
  return 1;
}

/* Every element of an array must have type t (identity strings non-empty). Returns the array or NULL. */
const json_t *lad_arr_of(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t) {
  const json_t *a = lad_get(c, o, ptr, key, TY_ARR);
  if (!a) return NULL;
  char base[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(base, ptr, key);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    jr_ptr_idx(p, base, i);
    if (!lad_ty_ok(v, t)) { lad_malformed(c, p, "must be %s (got %s)", lad_ty_name(t), jr_type_name(v)); return NULL; }
    if (t == TY_STR && !*json_string_value(v)) { lad_malformed(c, p, "must not be empty"); return NULL; }
  }
  return a;
}

/* An enum member; the index into choices, -1 when absent. */
int lad_enum(struct lctx *c, const json_t *o, const char *ptr, const char *key, const char *const *choices) {
  const json_t *v = lad_get(c, o, ptr, key, TY_STR);
  if (!v) return -1;
  for (int i = 0; choices[i]; i++)
    if (!strcmp(choices[i], json_string_value(v))) return i;
  char list[512] = "", p[DKB_PTR_MAX];
  size_t n = 0;
  for (int i = 0; choices[i] && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
  jr_ptr_key(p, ptr, key);
  lad_malformed(c, p, "must be one of: %s (got '%s')", list, json_string_value(v));
  return -1;
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

