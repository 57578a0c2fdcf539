/* trace_records.h - the record files dkb's injection library wrote inside a traced program
 * (inject/inject.h; one JSON line per record, schemas/inject-record.schema.json), read back strictly into
 * one struct per process. Joining (which kernel ran in which range) is harness/trace_bundle.c's work;
 * this file only checks and holds what each process said. A line that does not parse, an unknown record
 * kind or key, or a value of the wrong type is a malformed file (DKB_INPUT, "file:line: /key: reason"):
 * the library and its reader ship together. A last line without its newline is what a process killed
 * while writing leaves: it is counted (truncated), not an error. */
#ifndef DKB_TRACE_RECORDS_H
#define DKB_TRACE_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct tr_range {
  uint64_t id, parent;      /* parent 0: none (or a range of the process this one was forked from) */
  long tid;
  int depth;
  uint64_t t_push, t_pop;   /* CLOCK_MONOTONIC of the traced process */
  int popped, untracked;    /* untracked: pushed deeper than the library's stack keeps */
  uint64_t domain;          /* 0: NVTX's default domain */
  char *name;               /* NULL when the push carried no message */
  char message[12];         /* "" (ASCII), "unicode", "registered" or "none" */
};

struct tr_launch {
  uint32_t corr, outer;     /* outer: the runtime call a driver call was made by (0: none) */
  int driver;
  char kind;                /* 'K' kernel, 'G' graph, 'C' memcpy, 'S' memset */
  long tid;
  uint64_t range;           /* innermost open range on the launching thread */
  int64_t rc;               /* the call's return value (cudaError_t or CUresult) */
  int capturing;            /* enqueued while the thread captured a graph: not executed */
  char *api;
};

struct tr_kernel {
  uint32_t corr;
  char *name;               /* as CUPTI reports it (mangled unless extern "C") */
  int32_t grid[3], block[3], cluster[3];
  uint32_t regs;
  int32_t smem_static, smem_dynamic;
  uint64_t start, end;      /* CUPTI timestamps, ns; 0 when the record was flushed incomplete */
  uint32_t dev, ctx, stream, graph;
};

struct tr_copy {
  int is_memset;
  uint32_t corr, rt_corr;   /* rt_corr: the runtime call's id when the copy was made through it */
  char copy[8];             /* memcpy direction ("HtoD", ...), "" for a memset */
  uint64_t bytes, start, end;
  uint32_t stream, graph;
};

struct tr_module {
  uint32_t id;
  uint64_t bytes;
  char sha256[65];          /* "" when CUPTI gave no bytes */
  char format[8];           /* "elf", "fatbin" or "other" */
  char **symbols;           /* function symbols of an ELF image */
  size_t nsymbols;
  char *in_object;          /* the mapped file the bytes lie in, NULL when in no mapped object */
  int unloaded;
};

struct tr_object {
  char *path;
  uint64_t dev, ino, size, mtime_ns;
  int missing, main;        /* missing: no file at the path when the map was taken */
};

struct tr_loadmap {
  uint64_t range;           /* the innermost range of the first launch it was taken at */
  int failed;               /* the library could not list every object (out of memory) */
  size_t same_as;           /* index of the snapshot with the objects when unchanged, else itself */
  struct tr_object *objects;
  size_t nobjects;
};

struct tr_cupti_call {
  char *api, *text;
  int64_t code;
};

struct tr_proc {
  char file[4096];          /* the record file */
  char sha256[65];          /* of its bytes */
  size_t lines;             /* complete lines */
  int truncated;            /* a last line without its newline */
  long pid, ppid, forked_from; /* forked_from 0: not a fork child */
  char how[8];              /* "nvtx", "cuda" or "fork": what loaded the library first */
  char *exe, *cuda_injection, *nvtx_injection;
  uint64_t time_ns;
  uint32_t cupti_version;
  struct tr_cupti_call *cupti; size_t ncupti;
  struct tr_range *ranges; size_t nranges;   /* in push order; pops applied */
  size_t unmatched_pops;
  struct tr_launch *launches; size_t nlaunches;
  struct tr_kernel *kernels; size_t nkernels;
  struct tr_copy *copies; size_t ncopies;
  struct tr_module *modules; size_t nmodules;
  struct tr_loadmap *maps; size_t nmaps;
  uint64_t dropped;         /* CUPTI's dropped records, summed */
  size_t range_end_flushes;
  char exit_flush[12];      /* "" (none), "done", "failed" or "timed_out" */
  int64_t exit_flush_code;
  int has_end;
  size_t end_lines;         /* the line count the end record states (itself included) */
  size_t lines_at_end;      /* lines read up to the end record */
  int64_t end_open_ranges;
  uint64_t lost, write_errors;
  size_t cap_[8];
};

/* Reads one record file into p. 0, or -1 with err (DKB_INPUT for a malformed file, DKB_INTERNAL when it
 * cannot be read). */
int tr_proc_read(const char *path, struct tr_proc *p, struct dkb_err *err);
void tr_proc_release(struct tr_proc *p);
/* The range with this id, or NULL. */
const struct tr_range *tr_proc_range(const struct tr_proc *p, uint64_t id);
/* The CUPTI call record of this api ("cuptiSubscribe"), or NULL. */
const struct tr_cupti_call *tr_proc_cupti(const struct tr_proc *p, const char *api);

/* Every records.*.jsonl under dir, read in name order. *procs is malloc'ed (caller releases each and
 * frees it). An empty folder gives n = 0. */
int tr_read_dir(const char *dir, struct tr_proc **procs, size_t *n, struct dkb_err *err);

#endif
