/* bundle.h - writing evidence bundles (schema dkb.bundle/v1, schemas/bundle.schema.json).
 * A bundle is one folder: bundle.json plus its artifacts (loader map, build report, dispatch
 * diagnostic, profiler trace), each named by its content hash and listed in /artifacts. `dkb run`
 * builds the document with these helpers and bundle_write() grades it with the ladder (the same
 * function `dkb validate` runs), sets claimed_level to the computed level and writes it atomically. */
#ifndef DKB_BUNDLE_H
#define DKB_BUNDLE_H

#include <stddef.h>

#include <jansson.h>

#include "evidence/ladder.h"
#include "lib/err.h"

/* {"tool": "dkb", "version", "commit", "dirty", "argv", "created", "host"} of this build and process. */
json_t *bundle_meta_new(int argc, char **argv);

/* A fresh bundle: schema, meta, "synthetic": false, "claimed_level": 0, status complete without reasons,
 * the fixture identity and an empty artifacts list. Levels are added by the caller as sections. */
json_t *bundle_new(int argc, char **argv, const char *fixture_path, const char *fixture_name,
                   const char fixture_sha256[65]);

/* Sets status.terminal and appends {"id", "detail"} to status.reasons (reason_id may be NULL). */
void bundle_set_status(json_t *bundle, const char *terminal, const char *reason_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes data to dir as "<stem>.<first 16 hex of its SHA-256>.<ext>" (atomically), lists it in
 * /artifacts and returns the reference {"artifact": name, "sha256": hex} in *ref (new reference). */
int bundle_add_artifact(json_t *bundle, const char *dir, const char *stem, const char *ext, const void *data,
                        size_t n, json_t **ref, struct dkb_err *err);
/* The same for a JSON document, written in canonical form with indent 2 and a final newline. */
int bundle_add_json_artifact(json_t *bundle, const char *dir, const char *stem, const json_t *doc, json_t **ref,
                             struct dkb_err *err);

/* obj[digest_key] = canonical SHA-256 of obj[readable_key] (call_key -> call_key_sha256, ...). */
int bundle_set_digest(json_t *obj, const char *readable_key, const char *digest_key, struct dkb_err *err);

/* Grades the bundle against the artifacts in dir, sets claimed_level to the computed level, and writes
 * dir/bundle.json atomically. *res (initialised by the caller) receives the grade. -1 with err when the
 * document is not a well-formed bundle (a bug in the caller: DKB_INTERNAL) or cannot be written. */
int bundle_write(json_t *bundle, const char *dir, struct ladder_result *res, struct dkb_err *err);

#endif
