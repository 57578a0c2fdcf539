/* dump.h - a dump folder: every tensor of one call as a NumPy .npy file (lib/npy.h) plus index.json
 * (schema dkb.dump/v1, schemas/dump.schema.json), so a failed case can be inspected, and dkb
 * cross-checked against another implementation, with nothing but NumPy. The builder is generic: it
 * knows files, dtypes and index members, not decode structs; `dkb run FIXTURE --dump DIR` fills it.
 * tests/dump_check.py is the independent float64 checker of the decode dump described below.
 *
 * Folder rules. `dkb run --dump DIR` never reuses a folder: it refuses a non-empty DIR before any work
 * (harness/outdir.h, outdir_prepare_dump: exit 4, the code -o gives a folder it will not write in), so
 * dump_open meets a new or empty folder there. dump_open itself creates DIR (mkdir -p) or accepts an
 * empty one; a folder that holds a previous dump (index.json with "schema": "dkb.dump/v1", and nothing
 * but the files it lists and leftover temp files of them) it empties first: index.json goes before its
 * tensors, so an interrupted replacement never leaves an index naming other tensors. Any other
 * non-empty folder it refuses (DKB_USAGE): dkb never deletes a file it did not write. Each .npy is
 * written atomically as it is added; index.json is written LAST, so a folder without index.json is not
 * a finished dump.
 *
 * Dtypes. dkb dtype names map to npy descrs: fp16 '<f2', fp32 '<f4', fp64 '<f8', int32 '<i4',
 * int64 '<i8', uint8 '|u1', and bf16 (NumPy has none) '<u2': the raw bfloat16 bit patterns; the index
 * says "dtype": "bf16", "npy_dtype": "<u2". To read one as float32 in NumPy:
 *   (np.load(f).astype(np.uint32) << 16).view(np.float32)
 *
 * index.json (canonical JSON, indent 2, keys sorted):
 *   {"schema": "dkb.dump/v1",
 *    "files": [{"name": "q.npy", "role": "q", "dtype": "bf16", "npy_dtype": "<u2", "shape": [2, 1, 8, 64],
 *               "layout": "[B][C][H_q][d_qk]", "sha256": "<64 hex of the .npy file>", "bytes": <file size>},
 *              ...],                       in the order dump_add was called
 *    ...every member set with dump_set}
 *
 * The decode dump (what `dkb run --dump` writes; dump_check.py reads exactly this).
 * Members: "call_key" (the readable call key, article 0x0BE) and
 *   "call": {"B", "C" (query rows per request), "H_q", "H_kv", "d_qk", "d_v", "dtype" (fp16|bf16|fp32),
 *            "scale", "phase" ("decode"|"append"),
 *            "layout" ("contiguous_nhd"|"contiguous_hnd"|"ragged_nhd"|"paged_nhd"|"paged_hnd"),
 *            "table" ("dense"|"csr"|null), "page_size" (or null), "T_cap" (or null),
 *            "mask": {"kind": "none"|"causal"|"sliding_window"|"flashmask", "window" (or null), "sink" (or null)}}
 * Files (role = name without .npy; d is the tensor's own head width, d_qk for K, d_v for V):
 *   q                [B][C][H_q][d_qk]                   dtype
 *   k_cache, v_cache the caches BEFORE the call, in their declared layout; every element that no visible
 *                    key addresses holds NaN poison (and, for append, the slots of the new rows):
 *                      contiguous_nhd [cache_rows][T_cap][H_kv][d]   contiguous_hnd [cache_rows][H_kv][T_cap][d]
 *                      ragged_nhd     [sum_b kv_len][H_kv][d]
 *                      paged_nhd      [num_pages][P][H_kv][d]        paged_hnd      [num_pages][H_kv][P][d]
 *   kv_len           int64 [B]   keys visible to the call, new rows included
 *   cache_batch_idx  int32 [B]   cache row of each request (contiguous layouts and dense tables)
 *   indptr           int64 [B+1] ragged: request b's keys are rows indptr[b] .. indptr[b+1]-1
 *   block_table      int32 [cache_rows][width]   paged dense: page ids, -1 = none, row = cache_batch_idx[b]
 *   page_indptr      int32 [B+1], page_indices int32 [page_indptr[B]], last_page_len int32 [B]   paged CSR
 *   col_indptr       int64 [B+1], uts, ute, lts, lte int32 [sum_b kv_len]   flashmask: request b's key
 *                    columns are col_indptr[b] ..; row q is MASKED for column j iff q in [UTS_j, UTE_j)
 *                    or q in [LTS_j, LTE_j)
 *   k_new, v_new     append: [B][C][H_kv][d_qk] / [B][C][H_kv][d_v]; row i lands at key kv_len[b] - C + i
 *   o_ref            fp64 [B][C][H_q][d_v]   float64 reference output
 *   lse_ref          fp64 [B][C][H_q]        natural log-sum-exp, -inf for a row with no visible key
 *   o_gpu            [B][C][H_q][d_v] dtype, lse_gpu fp32 [B][C][H_q]   when a GPU ran
 *   k_cache_after, v_cache_after   append with a GPU: the caches after the call, layout of k_cache
 * Semantics. g = H_q / H_kv; query head h reads K/V head h // g. Query row i of request b sits at key
 * position p = kv_len[b] - C + i. Visible keys k < kv_len[b]: none = all; causal = k <= p;
 * sliding_window = k <= p and (k > p - window or k < sink); flashmask = not masked by the intervals
 * (not implicitly causal). Scores = q.k * scale; O = softmax-weighted V in float64; LSE = natural
 * log-sum-exp; no visible key gives O = 0, LSE = -inf. Element offsets of key t, head h, lane x:
 *   contiguous_nhd ((row*T_cap + t)*H_kv + h)*d + x     contiguous_hnd ((row*H_kv + h)*T_cap + t)*d + x
 *   ragged_nhd     ((indptr[b] + t)*H_kv + h)*d + x     with row = cache_batch_idx[b]
 *   paged: block j = t // P, r = t % P, page = block_table[row][j] (dense) or
 *          page_indices[page_indptr[b] + j] (csr); nhd ((page*P + r)*H_kv + h)*d + x,
 *          hnd ((page*H_kv + h)*P + r)*d + x
 * For append, keys t >= kv_len[b] - C come from k_new / v_new (the cache before the call holds poison
 * there) and the caches after the call equal the caches before with exactly those rows written. */
#ifndef DKB_DUMP_H
#define DKB_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/err.h"

struct dump; /* opaque: the folder, the index entries so far, the extra members */

/* Creates or clears dir as described above. Errors: DKB_USAGE for a folder that is not empty and holds
 * no previous dump, or a path that is not a folder; DKB_INTERNAL for I/O failures. */
int dump_open(const char *dir, struct dump **d, struct dkb_err *err);
/* Writes name + ".npy" (name: letters, digits, '_', '-', '.', not starting with '.'; unique; not
 * "index") and appends its index entry. dtype is a dkb dtype name (oracles/dtype.h); layout names the
 * axes ("[B][C][H_q][d_qk]"). data holds nbytes = prod(shape) x dtype bytes, C order. Errors are
 * DKB_INTERNAL; after one, call dump_abandon. */
int dump_add(struct dump *d, const char *name, const char *role, const char *dtype, const char *layout,
             const int64_t *shape, int ndim, const void *data, size_t nbytes, struct dkb_err *err);
/* Sets index member key to value, STEALING the reference like json_object_set_new; returns 0. A
 * reserved key ("schema", "files") or a NULL value is a programmer error (DKB_BUG). A value holding
 * NaN or infinity makes dump_close fail. */
int dump_set(struct dump *d, const char *key, json_t *value);
/* Writes index.json atomically (canonical JSON, indent 2, newline) and frees d. index_sha256 (may be
 * NULL) gets the SHA-256 of index.json; index_out (may be NULL) a new reference to the document.
 * On failure the tensors written so far are removed as by dump_abandon, and d is freed too. */
int dump_close(struct dump *d, char index_sha256[65], json_t **index_out, struct dkb_err *err);
/* Removes every file this dump wrote, and the folder if dump_open created it; frees d. For
 * --dump-on-fail when the case passed, and after a failed dump_add. NULL is fine. */
void dump_abandon(struct dump *d);

/* The npy descr a dkb dtype name is stored as ("bf16" -> "<u2"), NULL if it has none. */
const char *dump_npy_descr(const char *dtype);

#endif
