/* ladder_internal.h - what the files of the ladder share (evidence/ladder*.c; the API is ladder.h).
 * ladder.c drives one grading: it reads the header and the artifacts list, runs each level's check
 * (one file per level or pair of levels) and derives L* from the findings. The checks read the bundle
 * through the reading helpers below, record findings with lad_finding() and share facts through the
 * context (struct lctx); artifacts are looked up and parsed with ladder_artifacts.c. */
#ifndef DKB_LADDER_INTERNAL_H
#define DKB_LADDER_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

#include "evidence/ladder.h"
#include "lib/jread.h"

/* One /artifacts entry and what checking it found. */
struct art {
  const char *name, *sha;   /* from /artifacts */
  long long bytes;
  size_t index;             /* position in /artifacts */
  const char *reason;       /* first problem with the entry or its file, NULL if none */
  char pointer[DKB_PTR_MAX];
  char detail[256];
  int referenced;
  int have_file;            /* the file was found beside the bundle and matches */
};

/* One grading: the reader, the result being filled and the facts one level leaves for the next. */
struct lctx {
  struct jr r;
  int bad;                  /* not a bundle: r.err holds why; everything after is skipped */
  struct ladder_result *res;
  const struct ladder_opts *o;
  const json_t *b;
  struct art *arts;
  size_t narts;
  /* facts shared between levels */
  const char *meta_commit;
  int meta_dirty;
  const char *source_commit;
  const json_t *call_key;
  const char *outcome;        /* dispatch outcome, NULL if absent */
  long long split_count;      /* 0 if unknown */
  int loaded_present, has_cupti;
};

/* ---- reading (ladder_util.c): a wrong type means "not a bundle", absent evidence is a finding ---- */

enum ty { TY_OBJ, TY_ARR, TY_STR, TY_INT, TY_NUM, TY_BOOL, TY_STR_NULL };
/* "an object", "an integer", ... for messages; 1 when v has type t. */
const char *lad_ty_name(enum ty t);
int lad_ty_ok(const json_t *v, enum ty t);

/* The document is not a bundle: the first such error is kept in c->r.err, and nothing more is read. */
void lad_malformed(struct lctx *c, const char *ptr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a finding of reason (an id of ladder_reasons) at level. */
void lad_finding(struct lctx *c, int level, const char *reason, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* jr_keys(); -1 (and c->bad) when o is not an object with exactly those keys. */
int lad_keys(struct lctx *c, const json_t *o, const char *ptr, const char *const *req, const char *const *opt);
/* The member `key` of o if present and of type t; NULL when absent, or (c->bad set) of another type. */
const json_t *lad_get(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t);
/* A string member; NULL when absent or (evidence strings) empty. Identity strings must not be empty. */
const char *lad_str(struct lctx *c, const json_t *o, const char *ptr, const char *key, int identity);
/* An integer member >= lo: 1 with *out set when present, 0 when absent (or malformed). */
int lad_int(struct lctx *c, const json_t *o, const char *ptr, const char *key, long long lo, long long *out);
/* A number member >= lo: 1 with *out set when present. */
int lad_num(struct lctx *c, const json_t *o, const char *ptr, const char *key, double lo, double *out);
/* Every element of an array must have type t (identity strings non-empty). Returns the array or NULL. */
const json_t *lad_arr_of(struct lctx *c, const json_t *o, const char *ptr, const char *key, enum ty t);
/* An enum member; the index into choices, -1 when absent. */
int lad_enum(struct lctx *c, const json_t *o, const char *ptr, const char *key, const char *const *choices);

/* 1 when s is exactly len lower-case hex digits. */
int lad_is_hex(const char *s, size_t len);
/* 1 when the n characters of s are decimal digits. */
int lad_digits(const char *s, size_t n);
/* The unqualified part of a symbol name: after the last "::". */
const char *lad_unqualified(const char *s);

/* ---- artifacts (ladder_artifacts.c) -------------------------------------------------------------- */

/* Reads /artifacts and, with opts->bundle_dir, checks each file's size and SHA-256. */
void lad_read_artifacts(struct lctx *c);
/* Checks the {artifact, sha256} reference sec[key] for `level`. Returns the artifact when the reference
 * holds, NULL otherwise (with a finding; absent: missing_reason). */
struct art *lad_ref(struct lctx *c, int level, const json_t *sec, const char *ptr, const char *key,
                    const char *missing_reason, const char *what);
/* Parses an artifact that holds JSON; NULL when it is not available or not JSON. */
json_t *lad_art_json(struct lctx *c, const struct art *a);

/* ---- the header and the levels ------------------------------------------------------------------ */

/* status.terminal's states, NULL-terminated (ladder.c). */
extern const char *const lad_terminals[];

void lad_read_header(struct lctx *c);                  /* ladder_header.c */
const json_t *lad_read_status(struct lctx *c);
void lad_level1_source(struct lctx *c);                /* ladder_source.c */
void lad_level2_chain(struct lctx *c);
void lad_level3_loaded(struct lctx *c);                /* ladder_loaded.c */
void lad_level4_dispatch(struct lctx *c);              /* ladder_dispatch.c */
void lad_level5_execution(struct lctx *c);             /* ladder_execution.c */
void lad_level6_measurement(struct lctx *c);           /* ladder_measurement.c */

#endif
