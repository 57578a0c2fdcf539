/* err.h - the one error value lower layers fill, and the one exit-code enum.
 * harness/, oracles/ and evidence/ never print: they return -1 and fill a struct dkb_err with
 * what failed (file, JSON Pointer, reason). Only cmd/ turns it into a message and an exit code. */
#ifndef DKB_ERR_H
#define DKB_ERR_H

#include <stdarg.h>
#include <stddef.h>

/* Exit codes shared by every subcommand (README "Exit codes"). */
enum dkb_exit {
  DKB_OK = 0,        /* everything asked for holds */
  DKB_FAIL = 1,      /* the thing under test failed: expectation, correctness, level below required */
  DKB_USAGE = 2,     /* bad command line */
  DKB_INPUT = 3,     /* malformed input: fixture or bundle */
  DKB_ENV = 4,       /* the environment cannot supply what was required */
  DKB_INTERNAL = 5,  /* a bug or an I/O failure inside dkb */
};

struct dkb_err {
  int code;           /* enum dkb_exit the caller should end with */
  char file[512];     /* the document the error is about, "" if none */
  char pointer[512];  /* RFC 6901 JSON Pointer inside it, "" for syntax or whole-document errors */
  int line, column;   /* > 0 for syntax errors */
  char msg[1024];     /* reason: lower case, no full stop */
};

void dkb_err_clear(struct dkb_err *e);
/* Always returns -1 so callers can `return dkb_err_set(...)`. */
int dkb_err_set(struct dkb_err *e, int code, const char *file, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int dkb_err_vset(struct dkb_err *e, int code, const char *file, const char *pointer, const char *fmt,
                 va_list ap);
/* "file:line:column: msg", "file: /ptr: msg", "file: msg" or "msg": the one message form. */
void dkb_err_format(const struct dkb_err *e, char *out, unsigned long n);

/* Programmer errors only (docs/STYLE.md 8): never for bad input. */
#define DKB_BUG(...) dkb_bug(__FILE__, __LINE__, __VA_ARGS__)
_Noreturn void dkb_bug(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Checked allocation, for everything dkb puts on the heap (and, through cmd/main.c, for jansson and
 * libcrypto). Out of memory is neither bad input nor a bug, and no caller can do better than stop: the
 * command ends at once with exit code 4 (DKB_ENV) and "dkb: error: out of memory: cannot allocate N bytes
 * (file:line)". This is the one place a lower layer ends the process (docs/STYLE.md 6), as git's xmalloc does.
 * No atexit handler or library destructor runs short of memory (_exit), and no file is left half
 * written: fsutil only ever renames whole files into place. A size of 0 allocates 1 byte, so NULL
 * never means success. */
#define DKB_MALLOC(n) dkb_malloc((n), __FILE__, __LINE__)
#define DKB_CALLOC(n, size) dkb_calloc((n), (size), __FILE__, __LINE__)
#define DKB_REALLOC(p, n) dkb_realloc((p), (n), __FILE__, __LINE__)
#define DKB_STRDUP(s) dkb_strdup((s), __FILE__, __LINE__)
void *dkb_malloc(size_t n, const char *file, int line);
void *dkb_calloc(size_t n, size_t size, const char *file, int line);
void *dkb_realloc(void *p, size_t n, const char *file, int line);
char *dkb_strdup(const char *s, const char *file, int line);
/* The same for jansson (json_set_alloc_funcs, cmd/main.c). */
void *dkb_malloc_plain(size_t n);

#endif
