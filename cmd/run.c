/* run.c - `dkb run`: one frozen decode call, graded evidence bundle (harness/runner.c does the work). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "evidence/ladder.h"
#include "harness/backends.h"
#include "harness/decode_call.h"
#include "lib/fsutil.h"
#include "harness/runner.h"
#include "harness/trace.h"

static void show_progress(void *ctx, const char *stage, const char *detail) {
  (void)ctx;
  fprintf(stderr, "dkb: run: %-11s %s\n", stage, detail);
}

static int parse_num(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !(v >= lo && v <= hi))
    return cmd_usage_error(cmd, "%s must be a number in [%g, %g] (got '%s')", opt, lo, hi, s);
  *out = v;
  return 0;
}

/* usage: dkb run FIXTURE [-o DIR] [--backend NAME|auto] [--warmup N] [--samples N] [--max-samples N]
 *        [--max-noise PCT] [--max-time S] [--cold] [--graph] [--counters] [--no-timing]
 *        [--require-level N] [--dump DIR | --dump-on-fail DIR] [--quiet] */
int cmd_run(int argc, char **argv) {
  enum { O_BACKEND = 256, O_WARMUP, O_SAMPLES, O_MAX_SAMPLES, O_NOISE, O_TIME, O_COLD, O_GRAPH, O_COUNTERS, O_NOTIME,
         O_REQUIRE, O_DUMP, O_DUMP_FAIL, O_QUIET, O_PLUGIN };
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'}, {"backend", required_argument, NULL, O_BACKEND},
      {"warmup", required_argument, NULL, O_WARMUP}, {"samples", required_argument, NULL, O_SAMPLES},
      {"max-samples", required_argument, NULL, O_MAX_SAMPLES}, {"max-noise", required_argument, NULL, O_NOISE},
      {"max-time", required_argument, NULL, O_TIME}, {"cold", no_argument, NULL, O_COLD},
      {"graph", no_argument, NULL, O_GRAPH}, {"counters", no_argument, NULL, O_COUNTERS},
      {"no-timing", no_argument, NULL, O_NOTIME}, {"require-level", required_argument, NULL, O_REQUIRE},
      {"dump", required_argument, NULL, O_DUMP}, {"dump-on-fail", required_argument, NULL, O_DUMP_FAIL},
      {"quiet", no_argument, NULL, O_QUIET}, {"plugin", required_argument, NULL, O_PLUGIN}, {NULL, 0, NULL, 0}};
  struct run_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.out_dir = "out";
  ro.timing_enabled = 1;
  ro.argc = argc;
  ro.argv = argv;
  ro.progress = show_progress;
  dkb_timing_opts_default(&ro.timing);
  const char *backend = NULL;
  const char *plugins[BACKENDS_MAX_PLUGINS];
  size_t nplugins = 0;
  int require = -1, c, graph = 0;
  double v;
  /* getopt_long with "o:" for the short -o */
  while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
    switch (c) {
    case 'o': ro.out_dir = optarg; break;
    case O_BACKEND: backend = optarg; break;
    case O_WARMUP: if (parse_num("run", "--warmup", optarg, 1, 100000, &v)) return DKB_USAGE; ro.timing.warmup = (int)v; break;
    case O_SAMPLES:
      if (parse_num("run", "--samples", optarg, 20, 1e7, &v)) return DKB_USAGE;
      ro.timing.min_samples = (size_t)v;
      if (ro.timing.max_samples < ro.timing.min_samples) ro.timing.max_samples = ro.timing.min_samples;
      break;
    case O_MAX_SAMPLES: if (parse_num("run", "--max-samples", optarg, 20, 1e7, &v)) return DKB_USAGE; ro.timing.max_samples = (size_t)v; break;
    case O_NOISE: if (parse_num("run", "--max-noise", optarg, 0, 100, &v)) return DKB_USAGE; ro.timing.max_noise = v / 100.0; break;
    case O_TIME:
      if (parse_num("run", "--max-time", optarg, 0.001, 3600, &v)) return DKB_USAGE;
      ro.timing.max_time_s = v;
      if (ro.timing.min_time_s > v) ro.timing.min_time_s = v;
      break;
    case O_COLD: ro.timing.cold = 1; break;
    case O_GRAPH: graph = 1; break;
    case O_COUNTERS: ro.counters = 1; break;
    case O_NOTIME: ro.timing_enabled = 0; break;
    case O_REQUIRE: if (parse_num("run", "--require-level", optarg, 0, 6, &v)) return DKB_USAGE; require = (int)v; break;
    case O_DUMP: ro.dump_dir = optarg; ro.dump_on_fail = 0; break;
    case O_DUMP_FAIL: ro.dump_dir = optarg; ro.dump_on_fail = 1; break;
    case O_QUIET: ro.progress = NULL; break;
    case O_PLUGIN:
      if (nplugins == BACKENDS_MAX_PLUGINS) return cmd_usage_error("run", "at most %d --plugin options", BACKENDS_MAX_PLUGINS);
      plugins[nplugins++] = optarg;
      break;
    case ':': return cmd_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
    default: return cmd_usage_error("run", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return cmd_usage_error("run", "no fixture given");
  if (optind + 1 < argc) return cmd_usage_error("run", "one fixture at a time (got '%s' too)", argv[optind + 1]);
  if (ro.timing.max_samples < ro.timing.min_samples)
    return cmd_usage_error("run", "--max-samples must be >= --samples (%zu)", ro.timing.min_samples);

  struct dkb_err err;
  dkb_err_clear(&err);
  /* NVTX must be routed to CUPTI before anything could call nvtx. Failure is recorded by the trace. */
  dkb_trace_route_nvtx(&err);
  dkb_err_clear(&err);

  struct backend_set *set = DKB_CALLOC(1, sizeof *set);
  if (backend_set_open(set, plugins, nplugins, &err)) {
    free(set);
    return cmd_report_err(&err);
  }
  if (backend) {
    struct dkb_buf why;
    dkb_buf_init(&why);
    const int bad = backend_request_known(set, backend, &why) ? DKB_OK : cmd_usage_error("run", "--backend %s", why.p);
    dkb_buf_release(&why);
    if (bad) {
      backend_set_close(set);
      free(set);
      return bad;
    }
  }

  struct decode_call call;
  if (decode_call_load(argv[optind], &call, &err)) {
    backend_set_close(set);
    free(set);
    return cmd_report_err(&err);
  }
  if (backend) snprintf(call.backend, sizeof call.backend, "%s", backend);  /* registered names fit */
  if (graph) call.graph = 1;
  if (!backend && backends_check_request(set, &call, &err)) {
    decode_call_release(&call);
    backend_set_close(set);
    free(set);
    return cmd_report_err(&err);
  }

  struct run_result res;
  int rc = runner_execute(&call, set, &ro, &res, &err);
  if (rc) {
    decode_call_release(&call);
    backend_set_close(set);
    free(set);
    return cmd_report_err(&err);
  }
  printf("dkb run: %s\n", call.name);
  char bpath[4096];
  if (dkb_path_join(bpath, sizeof bpath, ro.out_dir, "bundle.json")) snprintf(bpath, sizeof bpath, "%s", ro.out_dir);
  printf("  bundle      %s\n", bpath);
  printf("  level       %d (%s)\n", res.level, res.terminal);
  /* why it stopped there, as the bundle says it */
  json_t *reasons = json_object_get(json_object_get(res.bundle, "status"), "reasons");
  for (size_t i = 0; i < json_array_size(reasons); i++) {
    json_t *r = json_array_get(reasons, i);
    printf("  reason      %s: %s\n", json_string_value(json_object_get(r, "id")), json_string_value(json_object_get(r, "detail")));
  }
  printf("  backend     %s\n", res.selected[0] ? res.selected : "none selected");
  printf("  plan        split %d%s; tiles SKIP %lld FULL %lld PARTIAL %lld\n", res.splits, res.direct ? " (direct output)" : "",
         res.tiles[0], res.tiles[1], res.tiles[2]);
  if (res.kernels[0]) printf("  kernels     %s\n", res.kernels);
  if (res.correctness >= 0)
    printf("  correctness %s: max |err| O %.3g (%.2f of its tolerance), LSE %.3g; %lld violations (atol %g, rtol %g)\n",
           res.correctness ? "passed" : "FAILED", res.out_max_abs, res.out_max_ratio, res.lse_max_abs, res.out_violations,
           call.atol, call.rtol);
  else
    printf("  correctness not checked: the call stopped at %s (the float64 oracle ran on the host)\n", res.terminal);
  if (res.median_us > 0) {
    printf("  median      %.2f us\n", res.median_us);
    printf("  bandwidth   %.3f TB/s = (unique K/V %.0f B + Q/O %.0f B) / median\n", res.io_bytes / (res.median_us * 1e-6) / 1e12,
           res.kv_bytes, res.io_bytes - res.kv_bytes);
    if (res.visible_kv_bytes < res.kv_bytes)
      printf("  visible     %.3f TB/s over the %.0f B of K/V in visible tiles\n",
             (res.visible_kv_bytes + res.io_bytes - res.kv_bytes) / (res.median_us * 1e-6) / 1e12, res.visible_kv_bytes);
  }
  if (res.dump_dir[0]) printf("  dump        %s\n", res.dump_dir);
  int env_limited = !strcmp(res.terminal, "cuda_runtime_unavailable") || !strcmp(res.terminal, "no_gpu") ||
                    !strcmp(res.terminal, "profiler_unavailable");
  int out = ladder_terminal_exit_code(res.terminal, res.launch_code);
  if (require >= 0 && res.level < require) {
    fprintf(stderr, "dkb: error: level %d is below the required %d (%s)\n", res.level, require, res.terminal);
    if (out == DKB_OK) out = env_limited ? DKB_ENV : DKB_FAIL;  /* a failure already says whose it was */
  }
  run_result_release(&res);
  decode_call_release(&call);
  backend_set_close(set);
  free(set);
  return out;
}
