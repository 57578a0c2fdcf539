/* provenance.c - reading the generated build report and source manifest (see provenance.h). */
#include "harness/provenance.h"
#include "lib/buf.h"
#include "lib/cjson.h"
#include "lib/sha256.h"

#include <string.h>

json_t *dkb_provenance_load(const char *text, const char *name, char sha256[65], struct dkb_err *err) {
  json_error_t je;
  struct dkb_buf b;
  dkb_buf_init(&b);
  json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!doc) {
    dkb_err_set(err, DKB_INTERNAL, name, NULL, "generated document does not parse: %s", je.text);
    goto cleanup;
  }
  /* A digest names the bytes; the bytes must be the canonical form the validator recomputes. */
  if (cjson_write(doc, 0, &b, err) || strcmp(b.p, text)) {
    dkb_err_set(err, DKB_INTERNAL, name, NULL, "generated document is not canonical JSON");
    json_decref(doc);
    doc = NULL;
    goto cleanup;
  }
  if (dkb_sha256_buf(text, strlen(text), sha256, err)) {
    json_decref(doc);
    doc = NULL;
  }
cleanup:
  dkb_buf_release(&b);
  return doc;
}
