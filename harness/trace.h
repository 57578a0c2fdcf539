/* trace.h - the capture pass (article 0x0BF, level 5): CUPTI activity records of one call's launches
 * inside an NVTX range, joined to the call by an external correlation id. Gives the exact kernel
 * symbols, launch counts, grid/block and the raw trace as JSON lines (content-addressed artifact).
 *
 * NVTX ranges reach CUPTI only when NVTX_INJECTION64_PATH names libcupti before the first nvtx call:
 * call dkb_trace_route_nvtx() first thing in main (dkb_trace_capture calls it too, which is early
 * enough as long as nothing else in the process calls nvtx first). */
#ifndef DKB_TRACE_H
#define DKB_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "harness/gpucheck.h"

struct dkb_trace_kernel {
  char *name;                /* symbol as the driver reports it (mangled unless extern "C") */
  char *demangled;           /* abi::__cxa_demangle of name, or a copy of name when not mangled */
  uint32_t correlation_id;   /* joins the runtime API record that launched it */
  int has_external;          /* 1 when an EXTERNAL_CORRELATION record names correlation_id */
  uint64_t external_id;      /* that record's id */
  int in_range;              /* 1 when the launching API call started inside the NVTX range */
  int32_t grid[3], block[3];
  int32_t cluster[3];        /* thread-block cluster dims (compute capability >= 9.0); CUPTI 13 on the H200
                              * reports 0,0,0 for a launch without a cluster */
  uint16_t registers;        /* per thread */
  int32_t static_smem, dynamic_smem; /* bytes per block */
  uint64_t start_ns, end_ns; /* CUPTI timestamps */
  uint32_t device_id, context_id, stream_id;
  uint32_t graph_id;         /* 0 unless launched from a CUDA graph */
};

struct dkb_trace_marker {
  char *name;                /* range name from the START record */
  uint32_t id;               /* pairs START and END */
  uint64_t start_ns, end_ns; /* end_ns 0 when no END record arrived */
};

struct dkb_trace_api {
  uint32_t cbid;             /* CUPTI_RUNTIME_TRACE_CBID_* or CUPTI_DRIVER_TRACE_CBID_* */
  const char *name;          /* cuptiGetCallbackName, e.g. "cudaLaunchKernel_v7000" (static) */
  uint32_t correlation_id, thread_id, return_value;
  uint64_t start_ns, end_ns;
  int driver;                /* a driver API call (cuLaunchKernel: cuDNN's generated kernels), else runtime */
};

struct dkb_trace_extcorr {
  uint32_t kind;             /* CUpti_ExternalCorrelationKind (CUSTOM0 for dkb) */
  uint64_t external_id;
  uint32_t correlation_id;
};

/* Launches of one kernel symbol. */
struct dkb_trace_symbol {
  const char *name, *demangled; /* point into the first kernel record with this name */
  size_t launches;              /* all records */
  size_t launches_in_range;     /* inside the NVTX range and carrying the call's external id */
  const struct dkb_trace_kernel *first;
};

struct dkb_trace {
  char range_name[256];
  uint64_t external_id;
  uint32_t cupti_version;          /* cuptiGetVersion, e.g. 130001 */
  char nvtx_injection[4096];       /* NVTX_INJECTION64_PATH in effect, "" when unset */
  int nvtx_set_by_dkb;             /* 1: dkb set it to its libcupti; 0: it came from the environment */
  size_t dropped;                  /* cuptiActivityGetNumDroppedRecords, summed */
  struct dkb_trace_kernel *kernels; size_t nkernels;
  struct dkb_trace_marker *markers; size_t nmarkers;
  struct dkb_trace_api *apis; size_t napis;
  struct dkb_trace_extcorr *extcorr; size_t nextcorr;
  /* filled by dkb_trace_finalize */
  const struct dkb_trace_marker *range; /* the marker named range_name, NULL when absent */
  struct dkb_trace_symbol *symbols; size_t nsymbols; /* in order of first launch */
  size_t cap_[4];                  /* internal: allocated lengths of the record arrays */
};

/* Sets NVTX_INJECTION64_PATH to the libcupti this process loaded (found with dladdr on a CUPTI
 * symbol) unless it is already set (ncu, nsys: kept). Idempotent. -1 with err when libcupti cannot be
 * located. */
int dkb_trace_route_nvtx(struct dkb_err *err);

/* The capture pass on `device`: enables CONCURRENT_KERNEL, MARKER, EXTERNAL_CORRELATION and RUNTIME
 * activity, opens NVTX range `range_name` and pushes `external_id` (< 2^53, so JSON holds it exactly)
 * around launch(arg, stream), synchronizes, flushes, disables the kinds again (the timed pass runs
 * untraced) and fills out (joined, see dkb_trace_finalize). -1 with err: no device (the runtime's
 * reason), CUPTI refusing (e.g. CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, or another CUPTI client such as a
 * profiler), or the launch's own error; out then holds whatever records arrived. */
int dkb_trace_capture(int device, const char *range_name, uint64_t external_id, dkb_launch_fn launch, void *arg,
                      void *stream, struct dkb_trace *out, struct dkb_err *err);

/* Copies one CUPTI activity record (a CUpti_Activity*) into t: kernels, markers (an END closes its
 * START), external correlations and runtime API records; other kinds are ignored. The buffer callback
 * calls it; tests feed it records built by hand. */
void dkb_trace_take_record(struct dkb_trace *t, const void *record);
/* Joins the raw records in t: demangles names, attaches external ids through the EXTERNAL_CORRELATION
 * records, pairs marker START/END, marks kernels whose launching API call started inside the range,
 * and builds the per-symbol summary. Separate from the capture so it can be tested on records made up
 * by hand. Idempotent. */
void dkb_trace_finalize(struct dkb_trace *t);
void dkb_trace_release(struct dkb_trace *t);
/* Symbol summary by mangled name, or NULL. */
const struct dkb_trace_symbol *dkb_trace_find_symbol(const struct dkb_trace *t, const char *name);

/* The full trace as JSON lines, each a canonical JSON object: one {"record": "meta", "schema":
 * "dkb.trace-records/v1", ...} line, then every kernel, marker, external_correlation and runtime record.
 * Timestamps are ns relative to "origin_ns" (a string in the meta line: absolute values exceed 2^53). */
int dkb_trace_jsonl(const struct dkb_trace *t, struct dkb_buf *out, struct dkb_err *err);
/* The bundle's summary: range, external id, per-symbol launch counts, CUPTI version, dropped records,
 * NVTX injection. New reference. */
json_t *dkb_trace_summary_json(const struct dkb_trace *t);

#endif
