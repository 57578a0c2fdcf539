/* inject.h - dkb's injection library, shared by its files (the inject folder; `make` builds
 * build/libdkb_inject.so). The library runs inside someone else's program: `dkb trace` names it in
 * CUDA_INJECTION64_PATH (the driver calls InitializeInjection at cuInit: CUPTI activity and API
 * callbacks) and NVTX_INJECTION64_PATH (NVTX calls InitializeInjectionNvtx2 at the first nvtx call: dkb
 * itself is the NVTX tool, so ranges pushed before cuInit are seen and no second libcupti is loaded).
 *
 * Rules, because the program is not ours: include nothing of dkb above libc and CUPTI; link only
 * libcupti, libc, libdl and libpthread; never print, exit, abort or make a CUDA call; never hold a lock
 * across a call into CUPTI or the program; a failure is a record, not a crash. Every record is one JSON
 * line (schemas/inject-record.schema.json) written with write(2) to this process's own file,
 * $DKB_TRACE_DIR/records.<pid>.<k>.jsonl; `dkb trace` parses and grades them after the program ends.
 * Without DKB_TRACE_DIR the library stays inert. */
#ifndef DKB_INJECT_H
#define DKB_INJECT_H

#include <stddef.h>
#include <stdint.h>

#define INJECT_EXPORT __attribute__((visibility("default")))
#define INJECT_RECORD_VERSION 1
/* Range names that mark a call: "dkb/call/" + the canonical call-key JSON. */
#define INJECT_CALL_PREFIX "dkb/call/"

/* ---- one JSON line (inject_out.c) --------------------------------------------------------------- */

/* A line under construction: a stack buffer that moves to the heap when it outgrows it. A line that
 * cannot grow is dropped whole and counted (never written truncated). */
struct jl {
  char *p;
  size_t n, cap;
  int heap, failed, fields;
  char small[1536];
};
void jl_begin(struct jl *j, const char *kind);      /* {"r":"kind" */
void jl_u64(struct jl *j, const char *key, uint64_t v);
void jl_i64(struct jl *j, const char *key, int64_t v);
void jl_bool(struct jl *j, const char *key, int v);
void jl_str(struct jl *j, const char *key, const char *s);           /* NULL writes null */
void jl_strn(struct jl *j, const char *key, const char *s, size_t n);
void jl_dim3(struct jl *j, const char *key, int64_t a, int64_t b, int64_t c);
void jl_key(struct jl *j, const char *key);         /* "key": with the separator, for hand-built values */
void jl_raw(struct jl *j, const char *s, size_t n);  /* bytes as they are (punctuation of arrays) */
void jl_esc(struct jl *j, const char *s, size_t n);  /* a quoted, escaped JSON string */
void jl_num(struct jl *j, uint64_t v);               /* decimal digits */
/* Closes the object, writes the line and releases the buffer. */
void jl_commit(struct jl *j);
/* Closes the object without writing it (the caller batches lines); 0 when the line could not be built. */
int jl_close(struct jl *j);
void jl_release(struct jl *j);

/* ---- this process's record file (inject_out.c) --------------------------------------------------- */

/* Opens the file once per process (how: "nvtx" or "cuda", who got here first) and writes the start
 * record; 1 when records are being written, 0 when the library is inert (no DKB_TRACE_DIR, or the
 * file cannot be created). Registers the fork handlers and the exit handler on first use. */
int out_open(const char *how);
int out_enabled(void);
/* Writes `lines` whole lines under the output lock; short writes are retried, failures counted. */
void out_write(const char *p, size_t n, unsigned lines);
void out_count_lost(void);  /* a record that could not be built */
uint64_t out_mono_ns(void);  /* CLOCK_MONOTONIC: push/pop times (kernels carry CUPTI's own clock) */
long out_tid(void);          /* the calling thread's kernel id (gettid), cached per thread */
int out_forked(void);        /* 1 in a child made by fork(): CUDA cannot be used there */
uint64_t out_records_lost(void);

/* ---- NVTX ranges (inject_nvtx.c) ---------------------------------------------------------------- */

/* The calling thread's innermost open range id (0 = none) and, through call_first, whether this is the
 * first launch in the innermost enclosing call range (set once per range instance). A call range is one
 * named dkb/call/..., or, when `dkb trace --range` set DKB_TRACE_PATTERNS, one matching its patterns. */
uint64_t nvtx_current_range(int *call_first);
/* Ranges still open on any thread (pushes minus pops). */
int64_t nvtx_open_ranges(void);
/* In a fork() child: the locks another thread may have held at the fork start over. */
void nvtx_after_fork_child(void);

/* ---- CUDA side (inject.c) ----------------------------------------------------------------------- */

/* Asks the flusher to deliver CUPTI's buffers soon (a dkb/call/ range just ended). Safe from any thread. */
void cuda_flush_soon(void);
/* The exit path: final forced flush (bounded in time), then the end record. Idempotent. */
void cuda_at_exit(void);
/* Called in a forked child: CUPTI's threads are gone and CUDA cannot be used there. */
void cuda_after_fork_child(void);

/* ---- loaded objects and modules (inject_map.c) --------------------------------------------------- */

/* Writes a loadmap record for range (dl_iterate_phdr: every mapped object's real path and stat
 * identity), or {"unchanged": true} when nothing was mapped or unmapped since the last snapshot. */
void map_snapshot(uint64_t range);
/* Writes a module record: SHA-256 of the module's bytes, and for an ELF cubin its function symbols. */
void map_module_loaded(uint32_t id, const void *bytes, size_t n);
void map_module_unloaded(uint32_t id);
void map_after_fork_child(void);

/* ---- SHA-256 (inject_sha256.c): the library cannot link libcrypto ------------------------------- */
void inject_sha256(const void *data, size_t n, char hex[65]);

#endif
