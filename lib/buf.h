/* buf.h - a growable byte buffer (the canonical writer and every report builder append to one). */
#ifndef DKB_BUF_H
#define DKB_BUF_H

#include <stddef.h>
#include <stdio.h>

struct dkb_buf {
  char *p;     /* NUL-terminated contents, NULL until the first append */
  size_t n;    /* bytes used, not counting the NUL */
  size_t cap;  /* bytes allocated */
};

void dkb_buf_init(struct dkb_buf *b);
void dkb_buf_release(struct dkb_buf *b);
/* Appends abort on allocation failure: dkb has no useful way to continue without memory. */
void dkb_buf_add(struct dkb_buf *b, const void *data, size_t n);
void dkb_buf_adds(struct dkb_buf *b, const char *s);
void dkb_buf_addc(struct dkb_buf *b, char c);
void dkb_buf_addf(struct dkb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the rest of f; returns 0, or the errno of a read error (what was read before it stays). */
int dkb_buf_add_file(struct dkb_buf *b, FILE *f);

#endif
