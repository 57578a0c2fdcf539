/* validate.c - `dkb validate`: grade evidence bundles on the six-level ladder (evidence/ladder.h), the CI
 * gate. A bundle passes when it claims no more than it proves, has no bundle-wide inconsistency and, with
 * --require-level N, proves level N (a synthetic bundle only with --allow-synthetic). */
#include <getopt.h>
#include <sys/stat.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "evidence/ladder.h"
#include "evidence/trace_ladder.h"
#include "lib/jread.h"

/* Two catalogues: the ladder's reasons (evidence bundles, by level) and the trace ladder's (trace bundles,
 * by finding), which grade different documents and share no id. */
static int list_reasons(int as_json) {
  json_t *all = json_array(), *trace = json_array();
  if (!as_json) printf("evidence bundles (dkb.bundle/v1): level, kind, reason, what is required\n");
  for (const struct ladder_reason *r = ladder_reasons; r->id; r++) {
    if (as_json)
      json_array_append_new(all, json_pack("{s:s,s:i,s:s,s:s}", "id", r->id, "level", r->level, "kind", ladder_kind_name(r->kind),
                                           "summary", r->summary));
    else if (r->level < 0) printf("any  %-12s  %-34s  %s\n", ladder_kind_name(r->kind), r->id, r->summary);
    else printf("%-3d  %-12s  %-34s  %s\n", r->level, ladder_kind_name(r->kind), r->id, r->summary);
  }
  if (!as_json) printf("\ntrace bundles (dkb.trace/v1, no level of the ladder): finding, kind, reason, what is required\n");
  for (const struct trace_reason *r = trace_reasons; r->id; r++) {
    const char *finding = r->finding < 0 ? "bundle" : trace_finding_names[r->finding];
    if (as_json)
      json_array_append_new(trace, json_pack("{s:s,s:s,s:s,s:s}", "id", r->id, "finding", finding, "kind",
                                             ladder_kind_name(r->kind), "summary", r->summary));
    else printf("%-8s  %-12s  %-36s  %s\n", finding, ladder_kind_name(r->kind), r->id, r->summary);
  }
  if (!as_json) {
    json_decref(all);
    json_decref(trace);
    return DKB_OK;
  }
  return cmd_print_json(json_pack("{s:s,s:o,s:o}", "schema", "dkb.reason-catalogue/v1", "reasons", all, "trace_reasons", trace));
}

/* A dkb.trace/v1 bundle (`dkb trace`): graded by the trace ladder's named findings, the same code dkb trace
 * ran. It proves no level of the six-level ladder, so any --require-level above 0 fails it. 1 pass, 0 fail,
 * -1 malformed (err set). */
static int validate_trace(const json_t *doc, const char *file, const char *dir, int require, int as_json, json_t *rows,
                          struct dkb_err *err) {
  struct trace_grade g;
  trace_grade_init(&g);
  if (trace_ladder_evaluate(doc, file, dir, &g, err)) {
    trace_grade_release(&g);
    return -1;
  }
  int below = require > 0, pass = trace_grade_honest(&g) && !below;
  if (as_json) {
    json_array_append_new(rows, json_pack("{s:s,s:s,s:s,s:o,s:o,s:b}", "file", file, "status", pass ? "pass" : "fail", "kind",
                                          "trace", "findings", trace_grade_json(&g), "claims", trace_grade_claims(&g),
                                          "below_required_level", below));
  } else {
    printf("%s  %s: trace bundle:", pass ? "PASS" : "FAIL", file);
    for (int f = 0; f < TF_COUNT; f++) printf(" %s %s%s", trace_finding_names[f], g.holds[f] ? "yes" : "no", f + 1 < TF_COUNT ? "," : "\n");
    for (size_t k = 0; k < g.n; k++) {
      const struct trace_item *it = &g.items[k];
      printf("  %-9s %-12s  %s  %s: %s\n", it->finding < 0 ? "bundle" : trace_finding_names[it->finding], ladder_kind_name(it->kind),
             it->reason, it->pointer[0] ? it->pointer : "/", it->detail);
    }
    if (below) printf("  a trace bundle proves no level of the six-level ladder: below the required level %d\n", require);
  }
  trace_grade_release(&g);
  return pass;
}

/* usage: dkb validate BUNDLE... [--require-level N] [--json] [--source-root DIR] [--allow-synthetic] [--list-reasons] */
int cmd_validate(int argc, char **argv) {
  static const struct option opts[] = {{"require-level", required_argument, NULL, 'r'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"source-root", required_argument, NULL, 's'},
                                       {"allow-synthetic", no_argument, NULL, 'a'},
                                       {"list-reasons", no_argument, NULL, 'l'},
                                       {NULL, 0, NULL, 0}};
  int as_json = 0, allow_synthetic = 0, require = -1, list = 0, c;
  const char *source_root = NULL;
  while ((c = cmd_getopt(argc, argv, opts, "validate")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
    if (c == 'a') allow_synthetic = 1;
    if (c == 'l') list = 1;
    if (c == 's') source_root = cmd_optarg;
    if (c == 'r' && cmd_parse_level("validate", "--require-level", cmd_optarg, &require)) return DKB_USAGE;
  }
  if (list) return list_reasons(as_json);
  if (cmd_optind >= argc) return cmd_usage_error("validate", "no bundle given");
  struct stat st;
  if (source_root && (stat(source_root, &st) || !S_ISDIR(st.st_mode)))
    return cmd_usage_error("validate", "--source-root '%s' is not a folder", source_root);

  size_t passed = 0, failed = 0, malformed = 0;
  json_t *rows = json_array();
  for (int i = cmd_optind; i < argc; i++) {
    const char *file = argv[i];
    struct dkb_err err;
    dkb_err_clear(&err);
    struct ladder_result res;
    ladder_result_init(&res);
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", file);
    struct ladder_opts o = {dirname(dirbuf), source_root};
    json_t *doc = jr_load_file(file, &err);
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    int traced = schema && !strcmp(schema, TRACE_SCHEMA_ID) ?
                 validate_trace(doc, file, o.bundle_dir, require, as_json, rows, &err) : -2;
    if (traced >= 0) {
      traced ? passed++ : failed++;
      json_decref(doc);
      ladder_result_release(&res);
      continue;
    }
    if (!doc || traced == -1 || ladder_evaluate(doc, file, &o, &res, &err)) {
      malformed++;
      char msg[2048];
      dkb_err_format(&err, msg, sizeof msg);
      if (as_json) json_array_append_new(rows, json_pack("{s:s,s:s,s:s}", "file", file, "status", "malformed", "error", msg));
      else fprintf(stderr, "dkb: error: %s\n", msg);
      json_decref(doc);
      ladder_result_release(&res);
      continue;
    }
    int below = require >= 0 && res.computed < require;
    int synthetic_block = require >= 0 && res.synthetic && !allow_synthetic;
    int pass = ladder_result_honest(&res) && !below && !synthetic_block;
    pass ? passed++ : failed++;
    if (as_json) {
      json_t *row = ladder_result_to_json(&res);
      json_object_set_new(row, "file", json_string(file));
      json_object_set_new(row, "status", json_string(pass ? "pass" : "fail"));
      json_object_set_new(row, "below_required_level", json_boolean(below));
      json_object_set_new(row, "synthetic_refused", json_boolean(synthetic_block));
      json_array_append_new(rows, row);
    } else {
      printf("%s  %s: computed level %d, claimed %d%s\n", pass ? "PASS" : "FAIL", file, res.computed, res.claimed,
             res.synthetic ? " (synthetic)" : "");
      for (size_t k = 0; k < res.n; k++) {
        const struct ladder_finding *f = &res.findings[k];
        printf("  level %d  %-12s  %s  %s: %s\n", f->level, ladder_kind_name(f->kind), f->reason, f->pointer[0] ? f->pointer : "/",
               f->detail);
      }
      if (below) printf("  below the required level %d\n", require);
      if (synthetic_block) printf("  synthetic bundle (a schema test) never satisfies --require-level without --allow-synthetic\n");
    }
    json_decref(doc);
    ladder_result_release(&res);
  }
  int rc = malformed ? DKB_INPUT : failed ? DKB_FAIL : DKB_OK;
  size_t total = passed + failed + malformed;
  if (as_json) {
    json_t *rep = json_pack("{s:s,s:o,s:b,s:o,s:o,s:I,s:I,s:I}", "schema", "dkb.validate-report/v1", "require_level",
                            require >= 0 ? json_integer(require) : json_null(), "allow_synthetic", allow_synthetic,
                            "source_root", source_root ? json_string(source_root) : json_null(), "bundles", rows,
                            "passed", (json_int_t)passed, "failed", (json_int_t)failed, "malformed", (json_int_t)malformed);
    int prc = cmd_print_json(rep);
    if (prc) rc = prc;
  } else {
    json_decref(rows);
    printf("validate: %zu bundle%s: %zu passed, %zu failed, %zu malformed\n", total, total == 1 ? "" : "s", passed, failed,
           malformed);
  }
  return rc;
}
