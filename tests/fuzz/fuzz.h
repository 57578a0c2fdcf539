/* fuzz.h - what every libFuzzer target of dkb checks besides "no crash, no sanitizer report" (make fuzz),
 * and the two ways a target receives its input: JSON text parsed in memory, or a file on disk. */
#ifndef DKB_FUZZ_H
#define DKB_FUZZ_H
#include "lib/err.h"
#include "lib/jread.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A refused input must say so the way docs/STYLE.md asks (4, 5): malformed input (exit 3), naming the
 * file, with a reason. Anything else is a finding: abort() makes libFuzzer keep the input. */
static inline void fuzz_require_input_error(const struct dkb_err *e, const char *file) {
  if (e->code != DKB_INPUT || strcmp(e->file, file) || !e->msg[0]) {
    fprintf(stderr, "refused without a malformed-input error: code %d, file '%s', pointer '%s', msg '%s'\n", e->code,
            e->file, e->pointer, e->msg);
    abort();
  }
}

/* The input as a JSON document named "fuzz.json" (libFuzzer's bytes are not NUL-terminated). A parse
 * error, or a refusal by check (non-zero, err set), must be a malformed-input error. */
static inline int fuzz_json(const uint8_t *d, size_t n, int (*check)(json_t *doc, struct dkb_err *err)) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, d, n);
  s[n] = '\0';
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *doc = jr_load_string(s, "fuzz.json", &err);
  if (!doc || check(doc, &err)) fuzz_require_input_error(&err, "fuzz.json");
  json_decref(doc);
  free(s);
  return 0;
}

/* The input written to DIR/NAME-PID.json (the same file on every call; dir NULL: /tmp), for readers
 * that take a path. Returns that path. */
static inline const char *fuzz_file(const uint8_t *d, size_t n, const char *dir, const char *name) {
  static char path[4200];
  if (!path[0]) snprintf(path, sizeof path, "%s/%s-%d.json", dir ? dir : "/tmp", name, (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(d, 1, n, f) != n || fclose(f)) abort();
  return path;
}
#endif
