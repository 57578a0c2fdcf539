/* provenance.h - the build-time evidence compiled into dkb (levels 1-3, article 0x0AH, 0x0BD).
 * tools/gen_provenance.py writes both texts at build time (build/gen/NAME.c); each is the canonical JSON
 * of its document, so its SHA-256 is the SHA-256 of these bytes. */
#ifndef DKB_PROVENANCE_H
#define DKB_PROVENANCE_H

#include <jansson.h>

#include "lib/err.h"

/* dkb.build-report/v1: compilers and versions, CFLAGS, NVFLAGS, gencode list, link libraries,
 * commit, dirty flag (tracked files differ from the commit), build host. */
extern const char dkb_build_report_json[];
/* dkb.source-manifest/v1: commit, dirty flag, path + SHA-256 + size of each file of the chain spec
 * (tools/chain.json) as compiled, line span [first, last] and kind of each chain symbol, and the
 * call-chain graph {nodes: [{symbol, layer, path}], edges: [{from, to}]}. */
extern const char dkb_source_manifest_json[];

/* Parses one of the texts above and checks it is canonical; fills sha256 (of the bytes). Returns a
 * new reference, or NULL with err (DKB_INTERNAL: the build produced a bad document). */
json_t *dkb_provenance_load(const char *text, const char *name, char sha256[65], struct dkb_err *err);

#endif
