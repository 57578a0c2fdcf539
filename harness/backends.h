/* backends.h - the one registry of every backend dkb can run: its own (harness/builtin.c) and those of
 * loaded plugins (harness/plugin.h), each a table of the backend ABI (include/dkb/backend.h). Admission
 * of a call asks every table's admit and runs the stages of the article's 0x07C over the answers
 * (dispatch/registry.h): one registry, one admission path, one evidence path.
 *
 *   backend_set_open   builtin tables, then every --plugin file, then every file of DKB_PLUGIN_PATH
 *                      (colon-separated); a duplicate name or priority is refused (DKB_INPUT)
 *   backends_call      the ABI's view of a decode call (scalars, host arrays of its inputs)
 *   backends_admit     the admission record of the call over the set */
#ifndef DKB_BACKENDS_H
#define DKB_BACKENDS_H

#include <stddef.h>

#include "dispatch/registry.h"
#include "harness/decode_call.h"
#include "harness/inputs.h"
#include "harness/plugin.h"
#include "include/dkb/backend.h"
#include "lib/buf.h"

#define BACKENDS_MAX_PLUGINS 8

struct backend_info {
  const struct dkb_backend *t;        /* the ABI table */
  const struct dkb_plugin_lib *lib;   /* the plugin it came from; NULL: built into dkb */
};

/* dkb's own tables read the call's fixture and inputs through self->user. */
struct builtin_ctx {
  const struct decode_call *c;
  const struct decode_inputs *in;
  int gpu;                            /* a device is present (occupancy queries, kernel symbols) */
};

struct backend_set {
  struct backend_info v[DISPATCH_MAX_BACKENDS];
  size_t n;
  struct dkb_plugin_lib libs[BACKENDS_MAX_PLUGINS];
  size_t nlibs;
  struct dkb_backend builtin[2];      /* dkb's tables, user = &ctx */
  struct builtin_ctx ctx;
};

int backend_set_open(struct backend_set *s, const char *const *plugins, size_t nplugins, struct dkb_err *err);
void backend_set_close(struct backend_set *s);
const struct backend_info *backend_set_find(const struct backend_set *s, const char *name);
/* 1 when request is "auto" or names a backend of the set; else 0 with why: "'x' is not a backend (known:
 * auto, ...)". */
int backend_request_known(const struct backend_set *s, const char *request, struct dkb_buf *why);

/* 0 when c's backend request is "auto" or names a backend of s; else -1 with err (DKB_INPUT, the fixture and
 * /backend: "'x' is not a backend (known: auto, ...)"). */
int backends_check_request(const struct backend_set *s, const struct decode_call *c, struct dkb_err *err);

/* The ABI call of c: scalars and host arrays (in may be NULL: scalars only, for admission). cc: 10*major+minor
 * or -1; sm_count 0 when unknown. Device pointers are NULL (harness/device_call.h fills them). */
void backends_call(const struct decode_call *c, const struct decode_inputs *in, int cc, int sm_count,
                   struct dkb_call *call);
/* The dispatch key of c on cuda:0 of compute capability cc (DK_ABSENT when no device was probed). */
void backends_key(const struct decode_call *c, long long cc, struct dispatch_key *k);

/* One call's admission over a set; about 200 KB, keep it on the heap. */
struct backend_admission {
  struct admission a;                       /* the record of 0x07C */
  struct dispatch_backend table[DISPATCH_MAX_BACKENDS];
  struct dispatch_registry reg;
  struct dkb_call call;                     /* the call's scalars, as admit sees them */
  struct abi_admit_cache {                  /* each table's one answer, split by factor by the predicates */
    const struct backend_info *info;
    const struct dkb_call *call;
    struct dkb_reason r[DKB_MAX_REASONS];
    int n, rc;
    char error[256];                        /* admit itself failed: last_error */
  } cache[DISPATCH_MAX_BACKENDS];
};
/* Admits the call (scalars only are shown to admit); returns the selected backend, or NULL with ba->a.outcome
 * saying why (forced error, no eligible, malformed call). */
const struct backend_info *backends_admit(const struct backend_set *s, const struct decode_call *c, long long cc,
                                          int sm_count, struct backend_admission *ba);

/* A backend's own failure: its WHAT (plan, setup, launch) returned rc, DKB_BACKEND_ERROR or a cudaError_t,
 * and its last_error said why (NULL or "": nothing). Writes "backend NAME: WHAT failed: WHY" or "backend
 * NAME: WHAT returned <CUDA error text>: WHY" into msg and returns the exit code: a CUDA error's
 * (dkb_gpucheck_cuda_code: DKB_FAIL when a kernel caused it, DKB_ENV when the machine did, such as out of
 * device memory), else DKB_FAIL, the thing under test failed. */
int backends_failure(const char *backend, const char *what, int rc, const char *why, char *msg, size_t n);

/* order[0..s->n) = the indices of s->v in the order auto selection considers them (lowest priority first). */
void backend_set_priority_order(const struct backend_set *s, size_t order[DISPATCH_MAX_BACKENDS]);

/* A JSON array describing every backend of the set, in priority order: name, version, priority, role, source
 * ("builtin" or the plugin file), and for plugins the library's path, SHA-256, plugin name/version/ABI and
 * upstream package. */
json_t *backend_set_to_json(const struct backend_set *s);

#endif
