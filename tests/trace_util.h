/* trace_util.h - helpers the two trace test files share (tests/test_trace.c, tests/test_trace_bundle.c). */
#ifndef DKB_TEST_TRACE_UTIL_H
#define DKB_TEST_TRACE_UTIL_H

#include <jansson.h>

/* The call key digest of tests/data/trace/call-key.json, fixtures/decode/default.json's call, which the
 * hand-made records of tests/data/trace/gpu-run.jsonl.in declare too. */
#define TRACE_KEY_SHA "376515b4654d69566f8dc9b4188627d823a21c548af496e05b376d9aa6b2624e"

/* Runs cmd; fails unless it exits rc, its stdout holds out_has (NULL: anything) and its stderr is err_is
 * (NULL: anything). */
void trace_expect(const char *cmd, int rc, const char *out_has, const char *err_is);
/* tmp_dir()/name, removed if it exists (static storage, four at a time). */
const char *trace_fresh_dir(const char *name);
/* A JSON file (duplicate keys refused), failing the test when it cannot be read. */
json_t *trace_load(const char *path);
/* Every file of the shell glob against schemas/SCHEMA (tests/schema_check.py). */
void trace_schema_ok(const char *schema, const char *glob);
/* 1 when a trace bundle's finding holds. */
int finding_holds(const json_t *b, const char *finding);
/* 1 when the finding lists this reason. */
int finding_has_reason(const json_t *b, const char *finding, const char *reason);

#endif
