/* jread.c - strict JSON reading with JSON Pointer errors (see jread.h). */
#include "lib/jread.h"
#include "lib/fsutil.h"
#include "lib/buf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *parsed_or_error(json_t *doc, const json_error_t *je, const char *name, struct dkb_err *err) {
  if (doc) return doc;
  dkb_err_set(err, DKB_INPUT, name, NULL, "%s", je->text);
  err->line = je->line > 0 ? je->line : 1;
  err->column = je->column > 0 ? je->column : 1;
  return NULL;
}

json_t *jr_load_file(const char *path, struct dkb_err *err) {
  const char *why = NULL;
  FILE *f = dkb_open_regular(path, &why);
  if (!f) {
    dkb_err_set(err, DKB_INPUT, NULL, NULL, "cannot open '%s': %s", path, why);
    return NULL;
  }
  /* The whole file, then one parse from memory: jansson's stream reader takes a locked getc per byte,
   * most of the time `dkb validate` spends on a bundle of raw samples. */
  struct dkb_buf b;
  dkb_buf_init(&b);
  const int bad = dkb_buf_add_file(&b, f);
  fclose(f);
  if (bad) {
    dkb_buf_release(&b);
    dkb_err_set(err, DKB_INPUT, NULL, NULL, "cannot read '%s': %s", path, strerror(bad));
    return NULL;
  }
  json_error_t je;
  json_t *doc = json_loadb(b.p ? b.p : "", b.n, JSON_REJECT_DUPLICATES, &je);
  dkb_buf_release(&b);
  return parsed_or_error(doc, &je, path, err);
}

json_t *jr_load_string(const char *text, const char *name, struct dkb_err *err) {
  json_error_t je;
  return parsed_or_error(json_loads(text, JSON_REJECT_DUPLICATES, &je), &je, name, err);
}

void jr_ptr_key(char out[DKB_PTR_MAX], const char *base, const char *key) {
  size_t n = (size_t)snprintf(out, DKB_PTR_MAX, "%s/", base ? base : "");
  for (const char *k = key; *k && n + 3 < DKB_PTR_MAX; k++) {
    if (*k == '~') { out[n++] = '~'; out[n++] = '0'; }
    else if (*k == '/') { out[n++] = '~'; out[n++] = '1'; }
    else out[n++] = *k;
  }
  out[n < DKB_PTR_MAX ? n : DKB_PTR_MAX - 1] = '\0';
}

void jr_ptr_idx(char out[DKB_PTR_MAX], const char *base, size_t idx) {
  char num[24];
  snprintf(num, sizeof num, "%zu", idx);
  jr_ptr_key(out, base, num);
}

json_t *jr_resolve(const json_t *doc, const char *pointer) {
  if (!pointer || !*pointer) return (json_t *)doc;
  if (*pointer != '/') return NULL;
  const json_t *cur = doc;
  const char *p = pointer;
  char tok[DKB_PTR_MAX];
  while (cur && *p == '/') {
    p++;
    size_t n = 0;
    while (*p && *p != '/' && n + 1 < sizeof tok) {
      if (p[0] == '~' && p[1] == '0') { tok[n++] = '~'; p += 2; }
      else if (p[0] == '~' && p[1] == '1') { tok[n++] = '/'; p += 2; }
      else tok[n++] = *p++;
    }
    tok[n] = '\0';
    if (json_is_object(cur)) cur = json_object_get(cur, tok);
    else if (json_is_array(cur)) {
      char *end;
      if (!n || (tok[0] == '0' && n > 1)) return NULL;
      unsigned long i = strtoul(tok, &end, 10);
      cur = *end ? NULL : json_array_get(cur, i);
    } else return NULL;
  }
  return (json_t *)cur;
}

const char *jr_type_name(const json_t *v) {
  if (!v) return "nothing";
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "object";
  case JSON_ARRAY: return "array";
  case JSON_STRING: return "string";
  case JSON_INTEGER: return "integer";
  case JSON_REAL: return "number";
  case JSON_TRUE: case JSON_FALSE: return "boolean";
  case JSON_NULL: return "null";
  }
  return "?";
}

int jr_fail(struct jr *r, const char *ptr, const char *key, const char *fmt, ...) {
  char p[DKB_PTR_MAX];
  if (key) jr_ptr_key(p, ptr, key);
  else snprintf(p, sizeof p, "%s", ptr && *ptr ? ptr : "/");
  va_list ap;
  va_start(ap, fmt);
  dkb_err_vset(r->err, r->code ? r->code : DKB_INPUT, r->file, p, fmt, ap);
  va_end(ap);
  return -1;
}

static int in_list(const char *const *list, const char *k) {
  for (; list && *list; list++)
    if (!strcmp(*list, k)) return 1;
  return 0;
}

int jr_keys(struct jr *r, const json_t *obj, const char *ptr, const char *const *required,
            const char *const *optional) {
  if (!json_is_object(obj)) return jr_fail(r, ptr, NULL, "must be an object (got %s)", jr_type_name(obj));
  for (const char *const *k = required; k && *k; k++)
    if (!json_object_get(obj, *k)) return jr_fail(r, ptr, NULL, "missing required key '%s'", *k);
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    if (!in_list(required, key) && !in_list(optional, key)) return jr_fail(r, ptr, key, "unknown key");
  }
  return 0;
}

json_t *jr_get(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int type) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required) jr_fail(r, ptr, NULL, "missing required key '%s'", key);
    return NULL;
  }
  if (type >= 0 && (int)json_typeof(v) != type && !(type == JSON_TRUE && json_is_boolean(v))) {
    const char *want = type == JSON_OBJECT ? "an object" : type == JSON_ARRAY ? "an array"
                       : type == JSON_STRING ? "a string" : type == JSON_TRUE ? "a boolean" : "a value";
    jr_fail(r, ptr, key, "must be %s (got %s)", want, jr_type_name(v));
    return NULL;
  }
  return v;
}

static int absent(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                  json_t **v) {
  *v = json_object_get(obj, key);
  if (*v) return 0;
  if (required) return jr_fail(r, ptr, NULL, "missing required key '%s'", key);
  return 1;
}

static int int_in(struct jr *r, const json_t *v, const char *p, long long lo, long long hi, long long *out) {
  if (!json_is_integer(v)) return jr_fail(r, p, NULL, "must be an integer (got %s)", jr_type_name(v));
  long long x = json_integer_value(v);
  if (x < lo) return jr_fail(r, p, NULL, "must be >= %lld (got %lld)", lo, x);
  if (x > hi) return jr_fail(r, p, NULL, "must be <= %lld (got %lld)", hi, x);
  *out = x;
  return 0;
}

static int num_in(struct jr *r, const json_t *v, const char *p, double lo, double hi, double *out) {
  if (!json_is_number(v)) return jr_fail(r, p, NULL, "must be a number (got %s)", jr_type_name(v));
  double x = json_number_value(v);
  if (x < lo) return jr_fail(r, p, NULL, "must be >= %.17g (got %.17g)", lo, x);
  if (x > hi) return jr_fail(r, p, NULL, "must be <= %.17g (got %.17g)", hi, x);
  *out = x;
  return 0;
}

int jr_int(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, long long lo,
           long long hi, long long *out) {
  json_t *v;
  int a = absent(r, obj, ptr, key, required, &v);
  if (a) return a < 0 ? -1 : 0;
  char p[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, key);
  return int_in(r, v, p, lo, hi, out);
}

int jr_num(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, double lo,
           double hi, double *out) {
  json_t *v;
  int a = absent(r, obj, ptr, key, required, &v);
  if (a) return a < 0 ? -1 : 0;
  char p[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, key);
  return num_in(r, v, p, lo, hi, out);
}

int jr_bool(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int *out) {
  json_t *v;
  int a = absent(r, obj, ptr, key, required, &v);
  if (a) return a < 0 ? -1 : 0;
  if (!json_is_boolean(v)) return jr_fail(r, ptr, key, "must be a boolean (got %s)", jr_type_name(v));
  *out = json_is_true(v);
  return 0;
}

int jr_str(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
           const char **out) {
  json_t *v;
  int a = absent(r, obj, ptr, key, required, &v);
  if (a) return a < 0 ? -1 : 0;
  if (!json_is_string(v)) return jr_fail(r, ptr, key, "must be a string (got %s)", jr_type_name(v));
  *out = json_string_value(v);
  return 0;
}

int jr_enum(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
            const char *const *choices, int *out) {
  const char *s = NULL;
  if (jr_str(r, obj, ptr, key, required, &s)) return -1;
  if (!s) return 0;
  for (int i = 0; choices[i]; i++)
    if (!strcmp(choices[i], s)) { *out = i; return 0; }
  char list[512] = "";
  size_t n = 0;
  for (int i = 0; choices[i] && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
  return jr_fail(r, ptr, key, "must be one of: %s (got '%s')", list, s);
}

static json_t *array_of(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                        long len, int *missing) {
  json_t *v;
  int a = absent(r, obj, ptr, key, required, &v);
  *missing = a;
  if (a) return NULL;
  if (!json_is_array(v)) {
    jr_fail(r, ptr, key, "must be an array (got %s)", jr_type_name(v));
    *missing = -1;
    return NULL;
  }
  if (len >= 0 && json_array_size(v) != (size_t)len) {
    jr_fail(r, ptr, key, "must have %ld elements (got %zu)", len, json_array_size(v));
    *missing = -1;
    return NULL;
  }
  return v;
}

int jr_int_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                 long long lo, long long hi, long len, long long **out, size_t *n) {
  int missing;
  json_t *a = array_of(r, obj, ptr, key, required, len, &missing);
  if (!a) return missing < 0 ? -1 : 0;
  size_t k = json_array_size(a);
  long long *x = DKB_MALLOC(k * sizeof *x);
  char base[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(base, ptr, key);
  for (size_t i = 0; i < k; i++) {
    jr_ptr_idx(p, base, i);
    if (int_in(r, json_array_get(a, i), p, lo, hi, &x[i])) { free(x); return -1; }
  }
  *out = x;
  *n = k;
  return 0;
}

int jr_str_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int nonempty,
                 const json_t **out) {
  int missing;
  json_t *a = array_of(r, obj, ptr, key, required, -1, &missing);
  if (!a) return missing < 0 ? -1 : 0;
  char base[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(base, ptr, key);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    jr_ptr_idx(p, base, i);
    if (!json_is_string(v)) return jr_fail(r, p, NULL, "must be a string (got %s)", jr_type_name(v));
    if (nonempty && !*json_string_value(v)) return jr_fail(r, p, NULL, "must not be empty");
  }
  *out = a;
  return 0;
}

int jr_extended_num(struct jr *r, const json_t *v, const char *ptr, double *out) {
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "inf")) { *out = INFINITY; return 0; }
    if (!strcmp(s, "-inf")) { *out = -INFINITY; return 0; }
    return jr_fail(r, ptr, NULL, "must be a number, \"inf\" or \"-inf\" (got '%s')", s);
  }
  return num_in(r, v, ptr, -INFINITY, INFINITY, out);
}

int jr_num_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                 double lo, double hi, long len, double **out, size_t *n) {
  int missing;
  json_t *a = array_of(r, obj, ptr, key, required, len, &missing);
  if (!a) return missing < 0 ? -1 : 0;
  size_t k = json_array_size(a);
  double *x = DKB_MALLOC(k * sizeof *x);
  char base[DKB_PTR_MAX], p[DKB_PTR_MAX];
  jr_ptr_key(base, ptr, key);
  for (size_t i = 0; i < k; i++) {
    jr_ptr_idx(p, base, i);
    if (num_in(r, json_array_get(a, i), p, lo, hi, &x[i])) { free(x); return -1; }
  }
  *out = x;
  *n = k;
  return 0;
}
