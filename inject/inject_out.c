/* inject_out.c - the injection library's record file: one per process, JSON lines written with
 * write(2) under one lock (see inject.h). The fork child handler and the formatting below use no stdio
 * and no locale: they may run in a child made by fork() of a threaded program. */
#include "inject/inject.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct {
  pthread_mutex_t mu;       /* held only around write(2) */
  pthread_mutex_t open_mu;  /* first open */
  int fd;                   /* -1: inert */
  int tried;                /* out_open ran (successfully or not) */
  int forked;               /* this process is a fork() child of the traced one */
  int handlers;             /* fork and exit handlers registered */
  atomic_uint_fast64_t lines, lost, write_errors;
} g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, 0, 0, 0, 0};

static __thread long tls_tid;

/* ---- JSON lines ---- */

static void jl_grow(struct jl *j, size_t extra) {
  if (j->failed || j->n + extra <= j->cap) return;
  size_t cap = j->cap * 2;
  while (cap < j->n + extra) cap *= 2;
  char *p = j->heap ? realloc(j->p, cap) : malloc(cap);
  if (!p) { j->failed = 1; return; }
  if (!j->heap) memcpy(p, j->small, j->n);
  j->p = p;
  j->cap = cap;
  j->heap = 1;
}

void jl_raw(struct jl *j, const char *s, size_t n) {
  jl_grow(j, n);
  if (j->failed) return;
  memcpy(j->p + j->n, s, n);
  j->n += n;
}

static void jl_c(struct jl *j, char c) { jl_raw(j, &c, 1); }

void jl_num(struct jl *j, uint64_t v) {
  char d[24];
  int k = 0;
  do { d[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  char o[24];
  for (int i = 0; i < k; i++) o[i] = d[k - 1 - i];
  jl_raw(j, o, (size_t)k);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (len == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0; /* overlong, surrogate */
  if (len == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return len;
}

/* Control characters and bytes that are not UTF-8 become \u00XX (an invalid byte so becomes the
 * character of the same value: the record says what it could, and stays parseable). */
void jl_esc(struct jl *j, const char *s, size_t n) {
  static const char HEX[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  jl_c(j, '"');
  for (size_t i = 0; i < n;) {
    unsigned char c = u[i];
    if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; jl_raw(j, e, 2); i++; }
    else if (c == '\n') { jl_raw(j, "\\n", 2); i++; }
    else if (c == '\t') { jl_raw(j, "\\t", 2); i++; }
    else if (c < 0x20 || c == 0x7F) { char e[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]}; jl_raw(j, e, 6); i++; }
    else if (c < 0x80) { jl_c(j, (char)c); i++; }
    else {
      size_t k = utf8_len(u + i, n - i);
      if (k) { jl_raw(j, s + i, k); i += k; }
      else { char e[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]}; jl_raw(j, e, 6); i++; }
    }
  }
  jl_c(j, '"');
}

void jl_key(struct jl *j, const char *key) {
  jl_c(j, ',');
  jl_esc(j, key, strlen(key));
  jl_c(j, ':');
}

void jl_begin(struct jl *j, const char *kind) {
  j->p = j->small;
  j->n = 0;
  j->cap = sizeof j->small;
  j->heap = j->failed = 0;
  jl_raw(j, "{\"r\":", 5);
  jl_esc(j, kind, strlen(kind));
}

void jl_u64(struct jl *j, const char *key, uint64_t v) { jl_key(j, key); jl_num(j, v); }
void jl_i64(struct jl *j, const char *key, int64_t v) {
  jl_key(j, key);
  if (v < 0) { jl_c(j, '-'); jl_num(j, (uint64_t)0 - (uint64_t)v); }
  else jl_num(j, (uint64_t)v);
}
void jl_bool(struct jl *j, const char *key, int v) { jl_key(j, key); jl_raw(j, v ? "true" : "false", v ? 4 : 5); }
void jl_strn(struct jl *j, const char *key, const char *s, size_t n) { jl_key(j, key); jl_esc(j, s, n); }
void jl_str(struct jl *j, const char *key, const char *s) {
  if (s) jl_strn(j, key, s, strlen(s));
  else { jl_key(j, key); jl_raw(j, "null", 4); }
}
void jl_dim3(struct jl *j, const char *key, int64_t a, int64_t b, int64_t c) {
  jl_key(j, key);
  jl_c(j, '[');
  const int64_t v[3] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    if (i) jl_c(j, ',');
    if (v[i] < 0) { jl_c(j, '-'); jl_num(j, (uint64_t)0 - (uint64_t)v[i]); }
    else jl_num(j, (uint64_t)v[i]);
  }
  jl_c(j, ']');
}

int jl_close(struct jl *j) {
  jl_raw(j, "}\n", 2);
  if (j->failed) atomic_fetch_add(&g.lost, 1);
  return !j->failed;
}

void jl_release(struct jl *j) {
  if (j->heap) free(j->p);
  j->p = NULL;
  j->heap = 0;
}

void jl_commit(struct jl *j) {
  if (jl_close(j)) out_write(j->p, j->n, 1);
  jl_release(j);
}

void out_count_lost(void) { atomic_fetch_add(&g.lost, 1); }

/* ---- the file ---- */

uint64_t out_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t real_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

long out_tid(void) {
  if (!tls_tid) tls_tid = (long)syscall(SYS_gettid);
  return tls_tid;
}

int out_enabled(void) { return g.fd >= 0; }
int out_forked(void) { return g.forked; }
uint64_t out_records_lost(void) { return atomic_load(&g.lost); }

void out_write(const char *p, size_t n, unsigned lines) {
  if (g.fd < 0) return;
  pthread_mutex_lock(&g.mu);
  while (n > 0) {
    ssize_t w = write(g.fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { atomic_fetch_add(&g.write_errors, 1); break; }
    p += w;
    n -= (size_t)w;
  }
  pthread_mutex_unlock(&g.mu);
  atomic_fetch_add(&g.lines, lines);
}

/* records.<pid>.<k>.jsonl, the first k not taken: a pid that execs, or a fork child that had a file,
 * keeps its earlier file. */
static int create_file(const char *dir) {
  char path[4096];
  size_t dn = strlen(dir);
  if (dn + 64 >= sizeof path) return -1;
  long pid = (long)getpid();
  for (int k = 0; k < 1000; k++) {
    struct jl j; /* used only as a byte builder here */
    j.p = j.small; j.n = 0; j.cap = sizeof j.small; j.heap = j.failed = 0;
    jl_raw(&j, dir, dn);
    jl_raw(&j, "/records.", 9);
    jl_num(&j, (uint64_t)pid);
    jl_raw(&j, ".", 1);
    jl_num(&j, (uint64_t)k);
    jl_raw(&j, ".jsonl", 7); /* with the NUL */
    if (j.failed || j.heap) return -1;
    memcpy(path, j.p, j.n);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

static void write_start(const char *how, long forked_from) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  struct jl j;
  jl_begin(&j, "start");
  jl_u64(&j, "v", INJECT_RECORD_VERSION);
  jl_u64(&j, "pid", (uint64_t)getpid());
  jl_u64(&j, "ppid", (uint64_t)getppid());
  jl_str(&j, "how", how);
  if (forked_from) jl_u64(&j, "forked_from", (uint64_t)forked_from);
  jl_u64(&j, "time_ns", real_ns());
  if (n > 0) jl_strn(&j, "exe", exe, (size_t)n);
  else jl_str(&j, "exe", NULL);
  if (!forked_from) { /* a fork child's environment is its parent's */
    jl_str(&j, "cuda_injection", getenv("CUDA_INJECTION64_PATH"));
    jl_str(&j, "nvtx_injection", getenv("NVTX_INJECTION64_PATH"));
  }
  jl_commit(&j);
}

static void write_end(void) {
  struct jl j;
  jl_begin(&j, "end");
  jl_str(&j, "why", "exit");
  jl_i64(&j, "open_ranges", nvtx_open_ranges());
  jl_u64(&j, "lines", atomic_load(&g.lines) + 1);
  jl_u64(&j, "lost", atomic_load(&g.lost));
  jl_u64(&j, "write_errors", atomic_load(&g.write_errors));
  jl_commit(&j);
}

static void at_exit(void) {
  if (g.fd < 0) return;
  cuda_at_exit();
  write_end();
}

static void fork_prepare(void) { pthread_mutex_lock(&g.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&g.mu); }
/* The child keeps the parent's open ranges (the same thread goes on) but not its file: it writes its
 * own, saying whose fork it is. CUPTI's threads did not survive the fork. */
static void fork_child(void) {
  long parent = (long)getppid();
  pthread_mutex_unlock(&g.mu); /* held by this very thread since fork_prepare */
  if (g.fd >= 0) close(g.fd);
  g.fd = -1;
  g.forked = 1;
  tls_tid = 0;
  atomic_store(&g.lines, 0);
  cuda_after_fork_child();
  nvtx_after_fork_child();
  map_after_fork_child();
  const char *dir = getenv("DKB_TRACE_DIR");
  if (!dir || !*dir) return;
  g.fd = create_file(dir);
  if (g.fd >= 0) write_start("fork", parent);
}

int out_open(const char *how) {
  pthread_mutex_lock(&g.open_mu);
  if (!g.tried) {
    g.tried = 1;
    const char *dir = getenv("DKB_TRACE_DIR");
    if (dir && *dir) g.fd = create_file(dir);
    if (g.fd >= 0) {
      write_start(how, 0);
      if (!g.handlers) {
        g.handlers = 1;
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        atexit(at_exit);
      }
    }
  }
  int ok = g.fd >= 0;
  pthread_mutex_unlock(&g.open_mu);
  return ok;
}
