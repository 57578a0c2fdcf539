/* compare.c - `dkb compare`: two `dkb bench` results case by case (harness/bench_diff.h); exit 1 when a
 * case got slower beyond its noise, so CI can gate on regressions as it gates on levels. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "harness/bench_diff.h"

static int parse_pct(const char *opt, const char *v, double lo, double *out) {
  char *end;
  const double x = strtod(v, &end);
  if (*end || !(x >= lo && x <= 100)) return cmd_usage_error("compare", "%s must be a percentage in [%g, 100] (got '%s')", opt, lo, v);
  *out = x;
  return 0;
}

static void describe(const char *role, const struct bench_run *r) {
  printf("%-5s %s%s%s: commit %.12s, %s, roofline ", role, r->path, r->backend ? ", backend " : "", r->backend ? r->backend : "",
         r->commit, r->created);
  if (r->roofline_measured) printf("%.3f TB/s", r->roofline_tbps);
  else printf("not measured");
  if (r->uuid) printf(", %s (%s)\n", r->device, r->uuid);
  else printf(r->no_gpu ? ", no GPU\n" : ", device not recorded\n");
}

static json_t *num_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }
/* A side's median, NAN when it has no such case or the case was not timed (null, or 0 in older runs):
 * printed "-" and written null, as every figure a side lacks. */
static double median_of(const struct bench_run_case *c) { return c && c->median_us > 0 ? c->median_us : NAN; }
static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *run_json(const struct bench_run *r) {
  return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o}", "path", r->path, "commit", r->commit, "created", r->created,
                   "roofline_tbps", r->roofline_measured ? json_real(r->roofline_tbps) : json_null(), "device",
                   str_or_null(r->device), "uuid", str_or_null(r->uuid), "backend", str_or_null(r->backend));
}

/* A side's clocks.slowed: null when it has no such case or recorded no clocks for it. */
static json_t *slowed_json(const struct bench_run_case *c) { return c && c->slowed >= 0 ? json_boolean(c->slowed) : json_null(); }

/* The --json report (schemas/compare-report.schema.json). */
static json_t *report(const struct bench_run *a, const struct bench_run *b, const struct bench_diff_opts *o,
                      const struct bench_delta *d, int n, const int *count) {
  json_t *rows = json_array();
  for (int i = 0; i < n; i++) {
    const struct bench_run_case *x = d[i].base >= 0 ? &a->cases[d[i].base] : NULL, *y = d[i].cand >= 0 ? &b->cases[d[i].cand] : NULL;
    json_array_append_new(rows, json_pack("{s:s,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o}", "name", x ? x->name : y->name, "base_us",
                                          num_or_null(median_of(x)), "new_us", num_or_null(median_of(y)),
                                          "change_pct", num_or_null(d[i].pct), "noise_pct", num_or_null(d[i].band), "verdict",
                                          bench_change_name(d[i].change), "base_fraction", num_or_null(x ? x->frac : NAN),
                                          "new_fraction", num_or_null(y ? y->frac : NAN), "base_slowed", slowed_json(x),
                                          "new_slowed", slowed_json(y)));
  }
  json_t *sum = json_object();
  for (int c = CHANGE_SAME; c <= CHANGE_ONLY_NEW; c++) json_object_set_new(sum, bench_change_name((enum bench_change)c), json_integer(count[c]));
  const int both = a->roofline_measured && b->roofline_measured;
  return json_pack("{s:s,s:o,s:o,s:o,s:o,s:{s:o,s:f},s:o,s:o}", "schema", "dkb.compare-report/v1", "base", run_json(a), "new",
                   run_json(b), "roofline_change_pct", both ? json_real(100 * (b->roofline_tbps / a->roofline_tbps - 1)) : json_null(),
                   "same_device", a->uuid && b->uuid ? json_boolean(!strcmp(a->uuid, b->uuid)) : json_null(), "noise",
                   "fixed_pct", o->noise_pct > 0 ? json_real(o->noise_pct) : json_null(), "min_pct", o->min_noise_pct, "cases", rows,
                   "verdicts", sum);
}

static void cell(double x, const char *fmt, int width) {
  if (isfinite(x)) printf(fmt, width, x);
  else printf("%*s", width, "-");
}


static void print_table(const struct bench_run *a, const struct bench_run *b, const struct bench_diff_opts *o,
                        const struct bench_delta *d, int n, const int *count) {
  describe("base", a);
  describe("new", b);
  if (a->roofline_measured && b->roofline_measured)
    printf("roofline: new / base - 1 = %+.1f %%\n", 100 * (b->roofline_tbps / a->roofline_tbps - 1));
  if (a->no_gpu || b->no_gpu) printf("device: a run without a GPU measured nothing\n");
  else if (!a->uuid || !b->uuid)
    printf("device: not recorded by both runs; a time change may be the machine's, not the kernel's\n");
  else if (strcmp(a->uuid, b->uuid))
    printf("device: two different GPUs; a time change may be the machine's, not the kernel's (compare the fractions)\n");
  else printf("device: the same GPU\n");
  if (o->noise_pct > 0) printf("change = new median / base median - 1; noise = %.2f %% for every case (--noise)\n", o->noise_pct);
  else
    printf("change = new median / base median - 1; noise = relative stdev of base + new samples, at least %.2f %%\n",
           o->min_noise_pct);
  printf("%-36s %10s %10s %8s %7s %-10s %9s %9s\n", "case", "base_us", "new_us", "change", "noise", "verdict", "base_frac",
         "new_frac");
  for (int i = 0; i < n; i++) {
    const struct bench_run_case *x = d[i].base >= 0 ? &a->cases[d[i].base] : NULL, *y = d[i].cand >= 0 ? &b->cases[d[i].cand] : NULL;
    printf("%-36s ", x ? x->name : y->name);
    cell(median_of(x), "%*.2f", 10);
    printf(" ");
    cell(median_of(y), "%*.2f", 10);
    printf(" ");
    cell(d[i].pct, "%+*.1f%%", 7);
    printf(" ");
    cell(d[i].band, "%*.1f%%", 6);
    printf(" %-10s ", bench_change_name(d[i].change));
    cell(x ? x->frac : NAN, "%*.3f", 9);
    printf(" ");
    cell(y ? y->frac : NAN, "%*.3f", 9);
    printf("\n");
    const int sx = x && x->slowed > 0, sy = y && y->slowed > 0;
    if (sx || sy)
      printf("  clocks: NVML saw a slowdown around the timing in %s: the change may be the machine's, not the kernel's\n",
             sx && sy ? "both runs" : sx ? "the base run" : "the new run");
  }
  printf("compare: %d cases: %d same, %d faster, %d slower, %d unknown (no recorded noise: --noise PCT), %d unmeasured "
         "(below level 6), %d other call (same name, different call key), %d in one run only\n",
         n, count[CHANGE_SAME], count[CHANGE_FASTER], count[CHANGE_SLOWER], count[CHANGE_UNKNOWN], count[CHANGE_UNMEASURED],
         count[CHANGE_OTHER_CALL], count[CHANGE_ONLY_BASE] + count[CHANGE_ONLY_NEW]);
  fflush(stdout);
}

/* usage: dkb compare BASE_BENCH_JSON NEW_BENCH_JSON [--noise PCT] [--min-noise PCT] [--base-backend A]
 *                    [--new-backend B] [--json] */
int cmd_compare(int argc, char **argv) {
  static const struct option opts[] = {{"noise", required_argument, NULL, 'n'}, {"min-noise", required_argument, NULL, 'm'},
                                       {"json", no_argument, NULL, 'j'}, {"base-backend", required_argument, NULL, 'a'},
                                       {"new-backend", required_argument, NULL, 'b'}, {NULL, 0, NULL, 0}};
  struct bench_diff_opts o = {BENCH_MIN_NOISE_PCT, 0, 0};
  const char *base_backend = NULL, *new_backend = NULL;
  int c, as_json = 0;
  while ((c = cmd_getopt(argc, argv, opts, "compare")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
    if (c == 'n' && parse_pct("--noise", cmd_optarg, 0.001, &o.noise_pct)) return DKB_USAGE;
    if (c == 'm' && parse_pct("--min-noise", cmd_optarg, 0, &o.min_noise_pct)) return DKB_USAGE;
    if (c == 'a') base_backend = cmd_optarg;
    if (c == 'b') new_backend = cmd_optarg;
  }
  /* two backends of one run (or of two): the same fixture and split is the same call */
  o.across_backends = base_backend && new_backend && strcmp(base_backend, new_backend);
  if (argc - cmd_optind != 2) return cmd_usage_error("compare", "give two bench.json files: the base run, then the new one");
  struct dkb_err err;
  dkb_err_clear(&err);
  struct bench_run a, b;
  if (bench_run_load_backend(argv[cmd_optind], base_backend, &a, &err)) return cmd_report_err(&err);
  if (bench_run_load_backend(argv[cmd_optind + 1], new_backend, &b, &err)) {
    bench_run_release(&a);
    return cmd_report_err(&err);
  }
  struct bench_delta *d;
  const int n = bench_diff(&a, &b, &o, &d);
  int count[CHANGE_ONLY_NEW + 1] = {0};
  for (int i = 0; i < n; i++) count[d[i].change]++;
  if (as_json) cmd_print_json(report(&a, &b, &o, d, n, count));
  else print_table(&a, &b, &o, d, n, count);
  free(d);
  bench_run_release(&a);
  bench_run_release(&b);
  if (count[CHANGE_SLOWER]) {
    fprintf(stderr, "dkb: error: %d case%s slower beyond the noise\n", count[CHANGE_SLOWER], count[CHANGE_SLOWER] > 1 ? "s" : "");
    return DKB_FAIL;
  }
  if (!count[CHANGE_SAME] && !count[CHANGE_FASTER]) {  /* a gate that judged nothing has not passed */
    fprintf(stderr, "dkb: error: no case could be judged: each is unknown (--noise PCT), unmeasured, other_call or in one run only\n");
    return DKB_ENV;
  }
  return DKB_OK;
}
