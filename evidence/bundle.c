/* bundle.c - building and writing evidence bundles (see bundle.h). */
#include "evidence/bundle.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"
#include "lib/sha256.h"
#include "version.h"

json_t *bundle_meta_new(int argc, char **argv) {
  char created[32], host[256] = "unknown";
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "unknown");
  json_t *args = json_array();
  for (int i = 0; i < argc; i++) json_array_append_new(args, json_string(argv[i]));
  return json_pack("{s:s,s:s,s:s,s:b,s:o,s:s,s:s}", "tool", "dkb", "version", DKB_VERSION, "commit", DKB_COMMIT,
                   "dirty", DKB_DIRTY, "argv", args, "created", created, "host", host);
}

json_t *bundle_new(int argc, char **argv, const char *fixture_path, const char *fixture_name,
                   const char fixture_sha256[65]) {
  return json_pack("{s:s,s:o,s:b,s:i,s:{s:s,s:[]},s:{s:s,s:s,s:s},s:[]}", "schema", BUNDLE_SCHEMA_ID, "meta",
                   bundle_meta_new(argc, argv), "synthetic", 0, "claimed_level", 0, "status", "terminal", "complete",
                   "reasons", "fixture", "path", fixture_path, "name", fixture_name, "sha256", fixture_sha256,
                   "artifacts");
}

void bundle_set_status(json_t *bundle, const char *terminal, const char *reason_id, const char *fmt, ...) {
  json_t *st = json_object_get(bundle, "status");
  json_object_set_new(st, "terminal", json_string(terminal));
  if (!reason_id) return;
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  json_array_append_new(json_object_get(st, "reasons"), json_pack("{s:s,s:s}", "id", reason_id, "detail", detail));
}

int bundle_add_artifact(json_t *bundle, const char *dir, const char *stem, const char *ext, const void *data,
                        size_t n, json_t **ref, struct dkb_err *err) {
  char hex[65], name[256], path[4096];
  if (dkb_sha256_buf(data, n, hex, err)) return -1;
  snprintf(name, sizeof name, "%s.%.16s.%s", stem, hex, ext);
  if (dkb_path_join(path, sizeof path, dir, name)) return dkb_err_set(err, DKB_INTERNAL, dir, NULL, "path too long");
  if (dkb_write_atomic(path, data, n, err)) return -1;
  json_t *list = json_object_get(bundle, "artifacts");
  int listed = 0;
  for (size_t i = 0; i < json_array_size(list); i++)
    listed |= !strcmp(json_string_value(json_object_get(json_array_get(list, i), "name")), name);
  if (!listed)
    json_array_append_new(list, json_pack("{s:s,s:s,s:I}", "name", name, "sha256", hex, "bytes", (json_int_t)n));
  *ref = json_pack("{s:s,s:s}", "artifact", name, "sha256", hex);
  return 0;
}

int bundle_add_json_artifact(json_t *bundle, const char *dir, const char *stem, const json_t *doc, json_t **ref,
                             struct dkb_err *err) {
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = cjson_write(doc, 2, &b, err);
  if (!rc) {
    dkb_buf_addc(&b, '\n');
    rc = bundle_add_artifact(bundle, dir, stem, "json", b.p, b.n, ref, err);
  }
  dkb_buf_release(&b);
  return rc;
}

int bundle_set_digest(json_t *obj, const char *readable_key, const char *digest_key, struct dkb_err *err) {
  char hex[65];
  const json_t *v = json_object_get(obj, readable_key);
  if (!v) return dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "no '%s' to digest", readable_key);
  if (cjson_digest(v, hex, err)) return -1;
  json_object_set_new(obj, digest_key, json_string(hex));
  return 0;
}

int bundle_write(json_t *bundle, const char *dir, struct ladder_result *res, struct dkb_err *err) {
  char path[4096];
  if (dkb_path_join(path, sizeof path, dir, "bundle.json")) return dkb_err_set(err, DKB_INTERNAL, dir, NULL, "path too long");
  struct ladder_opts o = {dir, NULL};
  /* grade, claim exactly what was proven, grade again so level-0 findings see the final claim */
  if (ladder_evaluate(bundle, path, &o, res, err)) { err->code = DKB_INTERNAL; return -1; }
  json_object_set_new(bundle, "claimed_level", json_integer(res->computed));
  ladder_result_release(res);
  ladder_result_init(res);
  if (ladder_evaluate(bundle, path, &o, res, err)) { err->code = DKB_INTERNAL; return -1; }
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = cjson_write(bundle, 2, &b, err);
  if (!rc) {
    dkb_buf_addc(&b, '\n');
    rc = dkb_write_atomic(path, b.p, b.n, err);
  }
  dkb_buf_release(&b);
  return rc;
}
