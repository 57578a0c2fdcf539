/* check.c - `dkb check`: a dump written by any program in dkb's dump format, checked against dkb's float64
 * oracle under the call key's frozen tolerances (harness/check.c does the work). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "harness/check.h"

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static long long inum(const json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

static void print_cmp(const char *label, const json_t *cmp, double atol, double rtol) {
  if (!json_is_object(cmp)) {
    printf("  %-11s %s\n", label, json_string_value(cmp) ? "not applicable" : "?");
    return;
  }
  printf("  %-11s max |err| %.3g (%.2f of its tolerance: atol %g + rtol %g*|ref|), %lld of %lld outside, %lld NaN, %lld Inf\n",
         label, num(cmp, "max_abs"), num(cmp, "max_ratio"), atol, rtol, inum(cmp, "violations"), inum(cmp, "n"),
         inum(cmp, "nan"), inum(cmp, "inf"));
}

/* The text form, read from the report so both forms say the same. */
static void print_report(const json_t *rep) {
  const json_t *call = json_object_get(rep, "call"), *corr = json_object_get(rep, "correctness");
  const json_t *prod = json_object_get(rep, "producer"), *cand = json_object_get(rep, "candidate");
  printf("dkb check: %s\n", json_string_value(json_object_get(rep, "dump")));
  printf("  call        %.16s  B=%lld S_q=%lld H_q=%lld H_kv=%lld d=%lld/%lld %s %s %s, mask %s\n",
         json_string_value(json_object_get(rep, "call_key_sha256")), inum(call, "B"), inum(call, "S_q"), inum(call, "H_q"),
         inum(call, "H_kv"), inum(call, "d_qk"), inum(call, "d_v"), json_string_value(json_object_get(call, "dtype")),
         json_string_value(json_object_get(call, "phase")), json_string_value(json_object_get(call, "layout")),
         json_string_value(json_object_get(call, "mask")));
  const json_t *pn = json_object_get(prod, "name"), *pv = json_object_get(prod, "version");
  printf("  candidate   o_gpu%s (LSE %s, empty rows %s)%s%s%s%s\n", json_is_object(json_object_get(corr, "lse")) ? " + lse_gpu" : "",
         json_string_value(json_object_get(cand, "lse_base")), json_string_value(json_object_get(cand, "empty_row")),
         pn ? "; written by " : "", pn ? json_string_value(pn) : "", pv ? " " : "", pv ? json_string_value(pv) : "");
  printf("  oracle      float64 over the dumped inputs; %lld query row%s see no key\n", inum(corr, "all_masked_rows"),
         inum(corr, "all_masked_rows") == 1 ? "" : "s");
  print_cmp("O", json_object_get(corr, "output"), num(corr, "atol"), num(corr, "rtol"));
  const json_t *lse = json_object_get(corr, "lse");
  if (json_is_object(lse)) print_cmp("LSE", lse, num(corr, "lse_atol"), num(corr, "lse_rtol"));
  else printf("  LSE         not dumped\n");
  const json_t *cache = json_object_get(corr, "cache");
  if (json_is_object(cache))
    printf("  cache       after the append: %lld of %lld K/V elements differ from the expected cache (bitwise)\n",
           inum(cache, "violations"), inum(cache, "n"));
  else printf("  cache       not applicable (decode)\n");
  printf("  result      %s\n", json_is_true(json_object_get(rep, "passed")) ? "passed" : "FAILED");
}

/* usage: dkb check DUMP [--json] */
int cmd_check(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
  int as_json = 0, c;
  while ((c = cmd_getopt(argc, argv, opts, "check")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
  }
  if (cmd_optind >= argc) return cmd_usage_error("check", "no dump folder given");
  if (cmd_optind + 1 < argc) return cmd_usage_error("check", "one dump at a time (got '%s' too)", argv[cmd_optind + 1]);
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *rep = NULL;
  struct check_summary s;
  if (check_dump(argv[cmd_optind], &rep, &s, &err)) return cmd_report_err(&err);
  if (as_json) {
    int rc = cmd_print_json(rep);
    if (rc) return rc;
  } else {
    print_report(rep);
    json_decref(rep);
  }
  return s.passed ? DKB_OK : DKB_FAIL;
}
