/* jread.h - strict reading of JSON documents with path-qualified errors.
 * Parsing rejects duplicate keys and reports file:line:column. Typed getters check presence, type and
 * range, and name the JSON Pointer of what is wrong ("fixtures/x.json: /B: must be >= 1 (got 0)").
 * A reader first declares an object's keys with jr_keys(), so unknown keys are rejected up front. */
#ifndef DKB_JREAD_H
#define DKB_JREAD_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"

struct jr {
  const char *file;     /* document name used in messages */
  struct dkb_err *err;  /* filled on the first error */
  int code;             /* exit code for meaning errors: DKB_INPUT for fixtures and bundles */
};

/* Reads and parses a whole file; NULL with err set (DKB_INPUT) when it cannot. */
json_t *jr_load_file(const char *path, struct dkb_err *err);
json_t *jr_load_string(const char *text, const char *name, struct dkb_err *err);

/* Pointer composition with RFC 6901 escaping (~0, ~1). out needs DKB_PTR_MAX bytes. */
#define DKB_PTR_MAX 512
void jr_ptr_key(char out[DKB_PTR_MAX], const char *base, const char *key);
void jr_ptr_idx(char out[DKB_PTR_MAX], const char *base, size_t idx);
/* Resolves an RFC 6901 pointer; NULL when it names nothing. */
json_t *jr_resolve(const json_t *doc, const char *pointer);

/* Fails with the path of the object when it is not an object, a required key is missing, or a key
 * is in neither list. Lists end with NULL; optional may be NULL. */
int jr_keys(struct jr *r, const json_t *obj, const char *ptr, const char *const *required,
            const char *const *optional);
/* Meaning error at ptr/key (key may be NULL for ptr itself). Always returns -1. */
int jr_fail(struct jr *r, const char *ptr, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Getters: `required` 0 means absent is fine and *out keeps its value (callers set the default,
 * which the schema documents). Each returns 0, or -1 with the error set. */
int jr_int(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, long long lo,
           long long hi, long long *out);
int jr_num(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, double lo,
           double hi, double *out);
int jr_bool(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int *out);
int jr_str(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
           const char **out);
/* *out = index of the matching choice; choices end with NULL. */
int jr_enum(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
            const char *const *choices, int *out);
/* Returns the member (any type) or NULL; with required, a missing key is an error. type < 0: any. */
json_t *jr_get(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int type);
/* Arrays of numbers: malloc'ed copy in *out (caller frees), length in *n; each element range-checked.
 * len >= 0 demands that exact length. */
int jr_int_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                 long long lo, long long hi, long len, long long **out, size_t *n);
int jr_num_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required,
                 double lo, double hi, long len, double **out, size_t *n);
/* An array of strings: *out is the array itself (borrowed). nonempty: no element may be "". */
int jr_str_array(struct jr *r, const json_t *obj, const char *ptr, const char *key, int required, int nonempty,
                 const json_t **out);
/* A number that may be written as a JSON number or as one of "inf", "-inf" (JSON has no infinity). */
int jr_extended_num(struct jr *r, const json_t *v, const char *ptr, double *out);
/* jansson type name for messages ("object", "array", "string", "integer", "real", ...). */
const char *jr_type_name(const json_t *v);

#endif
