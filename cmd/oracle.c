/* oracle.c - `dkb oracle`: contract fixtures through the float64 oracles. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/cjson.h"
#include "lib/jread.h"
#include "contracts/contract.h"

/* usage: dkb oracle FIXTURE... [--json] */
int cmd_oracle(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
  int as_json = 0, c;
  while ((c = cmd_getopt(argc, argv, opts, "oracle")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
  }
  if (cmd_optind >= argc) return cmd_usage_error("oracle", "no fixture given");

  size_t passed = 0, failed = 0, malformed = 0;
  json_t *out = json_array();
  for (int i = cmd_optind; i < argc; i++) {
    const char *file = argv[i];
    struct dkb_err err;
    dkb_err_clear(&err);
    struct oracle_outcome o;
    memset(&o, 0, sizeof o);
    json_t *doc = jr_load_file(file, &err);
    if (!doc || oracle_run_fixture(file, doc, &o, &err)) {
      malformed++;
      char msg[2048];
      dkb_err_format(&err, msg, sizeof msg);
      if (as_json) json_array_append_new(out, json_pack("{s:s,s:s,s:s}", "file", file, "status", "malformed", "error", msg));
      else fprintf(stderr, "dkb: error: %s\n", msg);
      json_decref(doc);
      oracle_outcome_release(&o);
      continue;
    }
    o.pass ? passed++ : failed++;
    if (as_json) {
      json_t *row = json_pack("{s:s,s:s,s:s,s:s,s:I,s:O}", "file", file, "contract", o.contract, "name", o.name,
                              "status", o.pass ? "pass" : "fail", "expectations", (json_int_t)o.expectations,
                              "failures", o.failures);
      json_object_set_new(row, "rejected", o.rejected ? json_pack("{s:s,s:s}", "reason", o.rej.reason, "detail", o.rej.detail)
                                                       : json_null());
      json_object_set(row, "report", o.report ? o.report : json_null());
      json_array_append_new(out, row);
    } else {
      printf("%s  %s  %s/%s", o.pass ? "PASS" : "FAIL", file, o.contract, o.name);
      if (o.rejected) printf("  rejected: %s: %s\n", o.rej.reason, o.rej.detail);
      else printf("  (%zu expectation%s)\n", o.expectations, o.expectations == 1 ? "" : "s");
      for (size_t k = 0; k < json_array_size(o.failures); k++) {
        json_t *f = json_array_get(o.failures, k);
        const char *at = json_string_value(json_object_get(f, "at"));
        printf("    %s%s%s\n", at && *at ? at : "", at && *at ? ": " : "", json_string_value(json_object_get(f, "why")));
      }
    }
    json_decref(doc);
    oracle_outcome_release(&o);
  }
  int rc = malformed ? DKB_INPUT : failed ? DKB_FAIL : DKB_OK;
  if (as_json) {
    json_t *rep = json_pack("{s:s,s:o,s:I,s:I,s:I}", "schema", "dkb.oracle-report/v1", "fixtures", out, "passed",
                            (json_int_t)passed, "failed", (json_int_t)failed, "malformed", (json_int_t)malformed);
    struct dkb_buf b;
    struct dkb_err err;
    dkb_buf_init(&b);
    if (cjson_write(rep, 2, &b, &err)) rc = cmd_report_err(&err);
    else printf("%s\n", b.p);
    dkb_buf_release(&b);
    json_decref(rep);
  } else {
    json_decref(out);
    printf("oracle: %zu fixture%s: %zu passed, %zu failed, %zu malformed\n", passed + failed + malformed,
           passed + failed + malformed == 1 ? "" : "s", passed, failed, malformed);
  }
  return rc;
}
