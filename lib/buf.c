/* buf.c - growable byte buffer (see buf.h). */
#include "lib/buf.h"
#include "lib/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dkb_buf_init(struct dkb_buf *b) { memset(b, 0, sizeof *b); }

void dkb_buf_release(struct dkb_buf *b) {
  free(b->p);
  dkb_buf_init(b);
}

static void reserve(struct dkb_buf *b, size_t extra) {
  if (b->n + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + extra + 1) cap *= 2;
  b->p = DKB_REALLOC(b->p, cap);
  b->cap = cap;
}

void dkb_buf_add(struct dkb_buf *b, const void *data, size_t n) {
  reserve(b, n);
  memcpy(b->p + b->n, data, n);
  b->n += n;
  b->p[b->n] = '\0';
}

void dkb_buf_adds(struct dkb_buf *b, const char *s) { dkb_buf_add(b, s, strlen(s)); }
void dkb_buf_addc(struct dkb_buf *b, char c) { dkb_buf_add(b, &c, 1); }

void dkb_buf_addf(struct dkb_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) DKB_BUG("bad format '%s'", fmt);
  reserve(b, (size_t)k);
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

int dkb_buf_add_file(struct dkb_buf *b, FILE *f) {
  char chunk[65536];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) dkb_buf_add(b, chunk, k);
  return ferror(f) ? (errno ? errno : EIO) : 0;
}
