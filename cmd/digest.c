/* digest.c - `dkb digest`: canonical-JSON SHA-256 of a document or sub-document. */
#include <getopt.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "lib/cjson.h"
#include "lib/jread.h"

/* usage: dkb digest FILE [--pointer /json/pointer] [--canonical] */
int cmd_digest(int argc, char **argv) {
  static const struct option opts[] = {
      {"pointer", required_argument, NULL, 'p'}, {"canonical", no_argument, NULL, 'c'}, {NULL, 0, NULL, 0}};
  const char *pointer = "";
  int canonical = 0, c;
  while ((c = cmd_getopt(argc, argv, opts, "digest")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'p') pointer = cmd_optarg;
    if (c == 'c') canonical = 1;
  }
  if (cmd_optind >= argc) return cmd_usage_error("digest", "no file given");
  if (cmd_optind + 1 < argc) return cmd_usage_error("digest", "one file at a time (got '%s' too)", argv[cmd_optind + 1]);
  if (*pointer && *pointer != '/')
    return cmd_usage_error("digest", "--pointer must be empty or start with '/' (got '%s')", pointer);
  const char *file = argv[cmd_optind];
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *doc = jr_load_file(file, &err);
  if (!doc) return cmd_report_err(&err);
  int rc = DKB_OK;
  const json_t *sub = jr_resolve(doc, pointer);
  if (!sub) {
    dkb_err_set(&err, DKB_INPUT, file, pointer, "names nothing in the document");
    rc = cmd_report_err(&err);
  } else if (canonical) {
    struct dkb_buf b;
    dkb_buf_init(&b);
    if (cjson_write(sub, 0, &b, &err)) rc = cmd_report_err(&err);
    else printf("%s\n", b.p);
    dkb_buf_release(&b);
  } else {
    char hex[65];
    if (cjson_digest(sub, hex, &err)) rc = cmd_report_err(&err);
    else printf("%s\n", hex);
  }
  json_decref(doc);
  return rc;
}
