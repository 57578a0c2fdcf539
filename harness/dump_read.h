/* dump_read.h - a decode dump written by anyone (dkb.dump/v1, harness/dump.h documents the format and
 * schemas/dump.schema.json checks it; python/dkb_dump.py writes one from NumPy or PyTorch) read back into
 * dkb's own structs, so `dkb check` runs the same float64 oracle and comparison as `dkb run`.
 *
 * Everything is checked before anything is computed, and every failure is DKB_INPUT with the file and a
 * JSON Pointer: the index (strict keys), each file against its index entry (size, SHA-256, dtype, shape),
 * the call against its call key (B, S_q, heads, dims, dtypes, layout, page size, capacity, mask,
 * per-request lengths and cache rows), each tensor's shape against the call, the layout metadata
 * (oracles/kv_address.h's kv_layout_check: indptr, page tables, cache rows) and a FlashMask program.
 * The candidate is o_gpu (and lse_gpu, optional; k_cache_after and v_cache_after for an append); a dump
 * without o_gpu has nothing to check. The call key's tolerances are the frozen ones. */
#ifndef DKB_DUMP_READ_H
#define DKB_DUMP_READ_H

#include <jansson.h>

#include "harness/decode_call.h"
#include "harness/inputs.h"
#include "lib/err.h"

struct dump_call {
  char dir[4096];
  char index_path[4200];
  char index_sha256[65];      /* of index.json's bytes */
  char call_key_sha256[65];   /* cjson_digest of /call_key: what a trace's call range declares */
  json_t *index;              /* the document (owned) */
  struct decode_call c;       /* the call: shapes, layout, mask, frozen tolerances */
  struct decode_inputs in;    /* the dumped inputs, laid out as harness/inputs.h describes */
  void *o;                    /* candidate O [B][C][H_q][d_v], the call's dtype */
  float *lse;                 /* candidate LSE [B][C][H_q] fp32, NULL when not dumped */
  void *k_after, *v_after;    /* append: the candidate's caches after the call */
  int lse_base, empty_row;    /* the candidate's conventions (include/dkb/backend.h enums) */
};

/* Reads only index.json and the call key's digest (to match a dump to a trace's call range without
 * reading its tensors). d must be released. */
int dump_read_index(const char *dir, struct dump_call *d, struct dkb_err *err);
/* Reads and checks everything. */
int dump_read(const char *dir, struct dump_call *d, struct dkb_err *err);
void dump_call_release(struct dump_call *d);

#endif
