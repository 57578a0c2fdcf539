/* fuzz.h - what every libFuzzer target of dkb checks besides "no crash, no sanitizer report" (make fuzz). */
#ifndef DKB_FUZZ_H
#define DKB_FUZZ_H
#include "harness/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input as a C string (libFuzzer's bytes are not NUL-terminated). */
static inline char *fuzz_text(const uint8_t *d, size_t n) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, d, n);
  s[n] = '\0';
  return s;
}

/* A refused input must say so the way STYLE asks: malformed input (exit 3), naming the file, with a
 * reason. Anything else is a finding: abort() makes libFuzzer keep the input. */
static inline void fuzz_require_input_error(const struct dkb_err *e, const char *file) {
  if (e->code != DKB_INPUT || strcmp(e->file, file) || !e->msg[0]) {
    fprintf(stderr, "refused without a malformed-input error: code %d, file '%s', pointer '%s', msg '%s'\n", e->code,
            e->file, e->pointer, e->msg);
    abort();
  }
}
#endif
