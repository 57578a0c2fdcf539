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
  int level;                /* the level being graded (0: bundle-wide): where artifact reasons are reported */
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

/* ---- reading (ladder_util.c): one adapter over lib/jread.h ------------------------------------ */
/* jread's getters check a member's type, range or spelling and name its JSON Pointer when it is wrong.
 * The ladder reads them with two differences, and only these. An absent member is evidence that is
 * missing, which the level that needs it turns into a finding: every read is optional. And once the
 * document is not a bundle (a wrong type, an unknown key: c->bad), nothing more is read, so c->r.err
 * keeps that first error and the levels after it record nothing.
 * LAD_READ(c, jr_getter, o, ptr, key, args...) calls jr_getter(&c->r, o, ptr, key, 0, args...) when o holds
 * key and nothing went wrong before: 1 when it read the member, 0 when it is absent or malformed. */
#define LAD_READ(c, getter, o, ptr, key, ...) \
  lad_took((c), lad_present((c), (o), (key)) ? getter(&(c)->r, (o), (ptr), (key), 0, __VA_ARGS__) : 1)
/* 1 when o holds key and the bundle is still being read. */
int lad_present(struct lctx *c, const json_t *o, const char *key);
/* jread's verdict rc: 1 when it is 0 (read); -1 makes the document not a bundle (c->bad); 1 (not read,
 * absent) gives 0. */
int lad_took(struct lctx *c, int rc);
/* jr_get(): the member of JSON type `type` (JSON_TRUE for a boolean), NULL when absent or malformed. */
const json_t *lad_member(struct lctx *c, const json_t *o, const char *ptr, const char *key, int type);
/* A string member; NULL when absent or, for evidence strings, empty (an empty name identifies nothing).
 * An identity string (a name, a path, an id) must not be empty: the document is not a bundle. */
const char *lad_str(struct lctx *c, const json_t *o, const char *ptr, const char *key, int identity);

/* The document is not a bundle: the first such error is kept in c->r.err, and nothing more is read. */
void lad_malformed(struct lctx *c, const char *ptr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a finding of reason, an id of ladder_reasons, at the reason's level (an artifact reason, level
 * -1 in the table, at c->level: the level whose section refers to the artifact). */
void lad_finding(struct lctx *c, const char *reason, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* jr_keys(); -1 (and c->bad) when o is not an object with exactly those keys. */
int lad_keys(struct lctx *c, const json_t *o, const char *ptr, const char *const *req, const char *const *opt);

/* 1 when s is exactly len lower-case hex digits. */
int lad_is_hex(const char *s, size_t len);
/* 1 when the n characters of s are decimal digits. */
int lad_digits(const char *s, size_t n);
/* The unqualified part of a symbol name: after the last "::". */
const char *lad_unqualified(const char *s);

/* ---- artifacts (ladder_artifacts.c) -------------------------------------------------------------- */

/* Reads /artifacts and, with opts->bundle_dir, checks each file's size and SHA-256. */
void lad_read_artifacts(struct lctx *c);
/* Checks the {artifact, sha256} reference sec[key] of level c->level. Returns the artifact when the
 * reference holds, NULL otherwise (with a finding; absent: missing_reason). */
struct art *lad_ref(struct lctx *c, const json_t *sec, const char *ptr, const char *key, const char *missing_reason,
                    const char *what);
/* Parses an artifact that holds JSON; NULL when it is not available or not JSON. */
json_t *lad_art_json(struct lctx *c, const struct art *a);
/* Parses an artifact of JSON lines (one object per line) into an array; NULL when it is not available or
 * not JSON lines. */
json_t *lad_art_lines(struct lctx *c, const struct art *a);

/* ---- the header and the levels ------------------------------------------------------------------ */

/* status.terminal's states, NULL-terminated (ladder.c). */
extern const char *const lad_terminals[];

void lad_read_header(struct lctx *c);                  /* ladder_header.c */
const json_t *lad_read_status(struct lctx *c);
void lad_level1_source(struct lctx *c);                /* ladder_source.c */
void lad_level2_chain(struct lctx *c);
void lad_level3_loaded(struct lctx *c);                /* ladder_loaded.c */
void lad_level4_dispatch(struct lctx *c);              /* ladder_dispatch.c */
/* The checks of what the dispatch record d derives from: fixture, plan record, ledgers (ladder_call.c);
 * the admission record the diagnostic artifact holds, and the device it was computed for
 * (ladder_admission.c). */
void lad_level4_call(struct lctx *c, const json_t *d);
void lad_level4_admission(struct lctx *c, const json_t *d, const struct art *diag);
void lad_level5_execution(struct lctx *c);             /* ladder_execution.c */
/* /execution x recomputed from the trace artifact tr (ladder_trace.c). */
void lad_level5_trace(struct lctx *c, const json_t *x, const struct art *tr);
void lad_level6_measurement(struct lctx *c);           /* ladder_measurement.c */

/* ---- the backend that ran the call (ladder_backend.c) --------------------------------------------- */
/* /dispatch/backend, or NULL. */
const json_t *lad_backend(const struct lctx *c);
/* Level 3: the plugin's library in the loader map (map may be NULL), its manifest and build report; every
 * closed-source library the chain names loaded with its listed hash. */
void lad_level3_backend(struct lctx *c, const json_t *ld, const json_t *map);
/* Level 4: /dispatch/backend against the dispatch record d. */
void lad_level4_backend(struct lctx *c, const json_t *d);
/* 1 when the declared kernel decl ({name, match}) is the kernel of this symbol and base function name. */
int lad_kernel_declared_match(const json_t *decl, const char *symbol, const char *base);
/* Level 6: the conversion of a backend's LSE base and empty rows, in the correctness record cr. */
void lad_level6_conversion(struct lctx *c, const json_t *cr);

#endif
