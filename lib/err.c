/* err.c - filling and formatting struct dkb_err (see err.h). */
#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void dkb_err_clear(struct dkb_err *e) { memset(e, 0, sizeof *e); }

int dkb_err_vset(struct dkb_err *e, int code, const char *file, const char *pointer, const char *fmt,
                 va_list ap) {
  if (!e) return -1;
  e->code = code;
  e->line = e->column = 0;
  snprintf(e->file, sizeof e->file, "%s", file ? file : "");
  snprintf(e->pointer, sizeof e->pointer, "%s", pointer ? pointer : "");
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  return -1;
}

int dkb_err_set(struct dkb_err *e, int code, const char *file, const char *pointer, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dkb_err_vset(e, code, file, pointer, fmt, ap);
  va_end(ap);
  return -1;
}

void dkb_err_format(const struct dkb_err *e, char *out, unsigned long n) {
  if (e->file[0] && e->line > 0)
    snprintf(out, n, "%s:%d:%d: %s", e->file, e->line, e->column, e->msg);
  else if (e->file[0] && e->pointer[0])
    snprintf(out, n, "%s: %s: %s", e->file, e->pointer, e->msg);
  else if (e->file[0])
    snprintf(out, n, "%s: %s", e->file, e->msg);
  else if (e->pointer[0])
    snprintf(out, n, "%s: %s", e->pointer, e->msg);
  else
    snprintf(out, n, "%s", e->msg);
}

_Noreturn static void out_of_memory(size_t n, size_t size, const char *file, int line) {
  char where[600] = "";
  if (file && file[0]) snprintf(where, sizeof where, line > 0 ? " (%s:%d)" : " (%s)", file, line);
  if (size > 1) fprintf(stderr, "dkb: error: out of memory: cannot allocate %zu x %zu bytes%s\n", n, size, where);
  else fprintf(stderr, "dkb: error: out of memory: cannot allocate %zu bytes%s\n", n, where);
  _exit(DKB_ENV);
}

void *dkb_malloc(size_t n, const char *file, int line) {
  void *p = malloc(n ? n : 1);
  if (!p) out_of_memory(n, 1, file, line);
  return p;
}

void *dkb_calloc(size_t n, size_t size, const char *file, int line) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) out_of_memory(n, size, file, line);
  return p;
}

void *dkb_realloc(void *p, size_t n, const char *file, int line) {
  void *q = realloc(p, n ? n : 1);
  if (!q) out_of_memory(n, 1, file, line);
  return q;
}

char *dkb_strdup(const char *s, const char *file, int line) {
  size_t n = strlen(s) + 1;
  char *d = dkb_malloc(n, file, line);
  return memcpy(d, s, n);
}

void *dkb_malloc_plain(size_t n) { return dkb_malloc(n, "jansson", 0); }

void dkb_bug(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "dkb: BUG: %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}
