/* run.c - `dkb run`: one frozen decode call, graded evidence bundle (harness/runner.c does the work). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "evidence/ladder.h"
#include "harness/backends.h"
#include "harness/decode_call.h"
#include "harness/preflight.h"
#include "lib/fsutil.h"
#include "harness/outdir.h"
#include "harness/runner.h"
#include "harness/trace.h"

/* CUDA answers cudaErrorInsufficientDriver ("CUDA driver version is insufficient for CUDA runtime
 * version") also when no NVIDIA driver is loaded at all, which reads as "update the driver". The
 * preflight, which makes no CUDA call, tells the two apart. */
static int no_driver_loaded(const char *cuda_text) {
  if (!cuda_text || !strstr(cuda_text, "cudaErrorInsufficientDriver")) return 0;
  struct preflight_opts o;
  struct preflight p;
  struct dkb_err err;
  dkb_err_clear(&err);
  preflight_opts_host(&o);
  o.use_ldconfig = 0;  /* only the driver matters here: no child process */
  return !preflight_inspect(&o, &p, &err) && !p.driver_present;
}

static void show_progress(void *ctx, const char *stage, const char *detail) {
  (void)ctx;
  if (!strcmp(stage, "device") && no_driver_loaded(detail))
    detail = "no NVIDIA driver is loaded: levels 3-6 need a GPU; the inputs, the plan, the admission and the "
             "float64 oracle run on the host";
  fprintf(stderr, "dkb: run: %-11s %s\n", stage, detail);
}

/* The bundle's reason, with CUDA's words for a missing driver translated (the bundle keeps them). */
static void print_reason(const char *id, const char *detail, int no_driver) {
  const char *colon = strchr(detail, ':');
  if (no_driver && !strcmp(id, "cuda_runtime_unavailable") && colon && strstr(detail, "cudaErrorInsufficientDriver"))
    printf("  reason      %s: %.*s: no NVIDIA driver is loaded (cudaErrorInsufficientDriver)\n", id, (int)(colon - detail),
           detail);
  else
    printf("  reason      %s: %s\n", id, detail);
}

/* First, for a level the host capped: which levels it could not give, and why, in plain words. */
static void print_host_limit(const char *terminal, int no_driver) {
  if (!strcmp(terminal, "cuda_runtime_unavailable"))
    printf("  host        levels 3-6 need a GPU, and %s\n",
           no_driver ? "this host has none: no NVIDIA driver is loaded" : "the CUDA runtime could not start here (the reason below)");
  else if (!strcmp(terminal, "no_gpu"))
    printf("  host        levels 3-6 need a GPU, and this host has none: the NVIDIA driver lists no device\n");
  else if (!strcmp(terminal, "profiler_unavailable"))
    printf("  host        levels 5-6 need CUPTI's kernel records, which this host refused (the reason below)\n");
}

/* What to run next, as commands to copy: self is the dkb that ran (main's argv[0]). */
static void print_next(const char *self, const char *bundle, const char *fixture, int level, int env_limited) {
  char cmd[2][4200];
  const char *why[2];
  int n = 0;
  snprintf(cmd[n], sizeof cmd[n], "%s validate %s%s", self, bundle, level == 6 ? " --require-level 6" : "");
  why[n++] = level == 6 ? "the gate CI runs on a bundle" : "re-grades the bundle: what each level lacks";
  if (env_limited) {
    snprintf(cmd[n], sizeof cmd[n], "%s preflight", self);
    why[n++] = "what this host has, and lacks, for levels 3-6";
  } else if (level == 6) {
    snprintf(cmd[n], sizeof cmd[n], "%s bench %s -o bench-out", self, fixture);
    why[n++] = "the call against the memory roofline";
  }
  int w = 0;
  for (int i = 0; i < n; i++) w = (int)strlen(cmd[i]) > w ? (int)strlen(cmd[i]) : w;
  for (int i = 0; i < n; i++) printf("  %-11s %-*s  # %s\n", i ? "" : "next", w, cmd[i], why[i]);
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
  int require = -1, c, graph = 0, dump_given = 0;
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
    case O_DUMP: ro.dump_dir = optarg; ro.dump_on_fail = 0; dump_given++; break;
    case O_DUMP_FAIL: ro.dump_dir = optarg; ro.dump_on_fail = 1; dump_given++; break;
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

  if (dump_given > 1) return cmd_usage_error("run", "give --dump DIR or --dump-on-fail DIR, and only once");

  struct dkb_err err;
  dkb_err_clear(&err);
  /* NVTX must be routed to CUPTI before anything could call nvtx. Failure is recorded by the trace. */
  dkb_trace_route_nvtx(&err);
  dkb_err_clear(&err);

  struct backend_set *set = DKB_CALLOC(1, sizeof *set);
  struct decode_call call;
  struct outdir outd, dumpd;
  struct run_result res;
  memset(&call, 0, sizeof call);
  memset(&outd, 0, sizeof outd);
  memset(&dumpd, 0, sizeof dumpd);
  memset(&res, 0, sizeof res);
  int out = DKB_OK, loaded = 0, ran = 0;
  /* whatever this run creates is removed again if it ends without a bundle (cmd/main.c: also on SIGINT) */
  dkb_journal_begin();
  if (backend_set_open(set, plugins, nplugins, &err)) { out = cmd_report_err(&err); goto done; }
  if (backend) {
    struct dkb_buf why;
    dkb_buf_init(&why);
    out = backend_request_known(set, backend, &why) ? DKB_OK : cmd_usage_error("run", "--backend %s", why.p);
    dkb_buf_release(&why);
    if (out) goto done;
  }
  if (decode_call_load(argv[optind], &call, &err)) { out = cmd_report_err(&err); goto done; }
  loaded = 1;
  if (backend) snprintf(call.backend, sizeof call.backend, "%s", backend);  /* registered names fit */
  if (graph) call.graph = 1;
  if ((!backend && backends_check_request(set, &call, &err)) || outdir_prepare_bundle(&outd, ro.out_dir, "-o", &err) ||
      (ro.dump_dir && outdir_prepare_dump(&dumpd, ro.dump_dir, ro.dump_on_fail ? "--dump-on-fail" : "--dump", &outd, &err))) {
    out = err.code == DKB_USAGE && !err.file[0] ? cmd_usage_error("run", "%s", err.msg) : cmd_report_err(&err);
    goto done;
  }
  if (runner_execute(&call, set, &ro, &res, &err)) { out = cmd_report_err(&err); goto done; }
  ran = 1;
  outdir_finish(&outd, res.bundle);  /* an earlier run's files the new bundle does not name */
  if (ro.dump_dir && !res.dump_dir[0] && dkb_journal_created(ro.dump_dir)) rmdir(ro.dump_dir);  /* nothing kept */
  int env_limited = !strcmp(res.terminal, "cuda_runtime_unavailable") || !strcmp(res.terminal, "no_gpu") ||
                    !strcmp(res.terminal, "profiler_unavailable");
  json_t *reasons = json_object_get(json_object_get(res.bundle, "status"), "reasons");
  int no_driver = 0;
  for (size_t i = 0; i < json_array_size(reasons); i++)
    no_driver |= no_driver_loaded(json_string_value(json_object_get(json_array_get(reasons, i), "detail")));
  printf("dkb run: %s\n", call.name);
  if (env_limited) print_host_limit(res.terminal, no_driver);
  char bpath[4096];
  if (dkb_path_join(bpath, sizeof bpath, ro.out_dir, "bundle.json")) snprintf(bpath, sizeof bpath, "%s", ro.out_dir);
  printf("  bundle      %s\n", bpath);
  printf("  level       %d (%s)\n", res.level, res.terminal);
  /* why it stopped there, as the bundle says it: the reason named by the terminal state first, since
   * the others follow from it (no device, so no backend could be admitted) */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < json_array_size(reasons); i++) {
      json_t *r = json_array_get(reasons, i);
      const char *id = json_string_value(json_object_get(r, "id"));
      int terminal_reason = !strcmp(id, res.terminal);
      if (terminal_reason == (pass == 0)) print_reason(id, json_string_value(json_object_get(r, "detail")), no_driver);
    }
  printf("  backend     %s\n", res.selected[0] ? res.selected : "none selected");
  char split[48] = "unreported (the backend's engine picks its own)";
  if (res.splits != DKB_SPLITS_UNREPORTED) snprintf(split, sizeof split, "%d", res.splits);
  printf("  plan        split %s%s; tiles SKIP %lld FULL %lld PARTIAL %lld\n", split, res.direct ? " (direct output)" : "",
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
  print_next(argv[-1], bpath, argv[optind], res.level, env_limited);
  out = ladder_terminal_exit_code(res.terminal, res.launch_code);
  if (require >= 0 && res.level < require) {
    fprintf(stderr, "dkb: error: level %d is below the required %d (%s)\n", res.level, require, res.terminal);
    if (out == DKB_OK) out = env_limited ? DKB_ENV : DKB_FAIL;  /* a failure already says whose it was */
  }
done:
  if (!ran) dkb_journal_rollback();
  dkb_journal_end();
  run_result_release(&res);
  if (loaded) decode_call_release(&call);
  outdir_release(&outd);
  outdir_release(&dumpd);
  backend_set_close(set);
  free(set);
  return out;
}
