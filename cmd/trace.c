/* trace.c - `dkb trace -- CMD`: runs a program under dkb's injection library (inject/), then joins and
 * grades what every one of its processes recorded (harness/trace_bundle.c) and writes one dkb.trace/v1
 * bundle per call range. The exit status is documented in cmd/main.c's table. */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "evidence/bundle.h"
#include "evidence/trace_ladder.h"
#include "harness/spawn.h"
#include "harness/trace_bundle.h"
#include "harness/trace_records.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"

enum { MAX_LIST = 32 };

/* The injection library: $DKB_INJECT_LIB, else libdkb_inject.so beside the dkb executable. */
static int find_library(char out[PATH_MAX]) {
  const char *env = getenv("DKB_INJECT_LIB");
  char guess[PATH_MAX + 32];
  if (env && *env) snprintf(guess, sizeof guess, "%s", env);
  else {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(guess, sizeof guess, "%s/libdkb_inject.so", exe);
  }
  return realpath(guess, out) ? 0 : -1;
}

static int empty_or_absent(const char *dir) {
  struct stat st;
  if (stat(dir, &st)) return errno == ENOENT;
  DIR *d = S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
  if (!d) return 0;
  int empty = 1;
  struct dirent *e;
  while (empty && (e = readdir(d))) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  return empty;
}

static int write_json(const char *path, const json_t *doc, struct dkb_err *err) {
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = cjson_write(doc, 2, &b, err);
  if (!rc) {
    dkb_buf_addc(&b, '\n');
    rc = dkb_write_atomic(path, b.p, b.n, err);
  }
  dkb_buf_release(&b);
  return rc;
}

static void print_table(const json_t *summary, const struct trace_bundle_set *s, const char *out_dir) {
  const json_t *procs = json_object_get(summary, "processes"), *calls = json_object_get(summary, "calls");
  for (size_t i = 0; i < json_array_size(procs); i++) {
    const json_t *p = json_array_get(procs, i);
    const json_t *ff = json_object_get(p, "forked_from");
    char from[48] = "";
    if (json_is_integer(ff)) snprintf(from, sizeof from, " (forked from %lld)", (long long)json_integer_value(ff));
    printf("  process   pid %lld%s: CUPTI %s, %s, %lld dropped, %lld kernels, %lld ranges\n",
           (long long)json_integer_value(json_object_get(p, "pid")), from,
           json_string_value(json_object_get(p, "cupti")),
           json_is_true(json_object_get(p, "end_record")) ? "exit path ran" : "NO end record",
           (long long)json_integer_value(json_object_get(p, "dropped_records")),
           (long long)json_integer_value(json_object_get(p, "kernels")), (long long)json_integer_value(json_object_get(p, "ranges")));
  }
  if (!json_array_size(calls)) { printf("  calls     none: no range named dkb/call/ (or matching --range) was pushed\n"); return; }
  printf("  %-24s %7s %5s %8s %9s %14s %24s  %s\n", "call", "pid", "inst", "kernels", "launches", "split/combine",
         "GPU time (tracing on)", "findings");
  for (size_t i = 0; i < json_array_size(calls); i++) {
    const json_t *r = json_array_get(calls, i), *f = json_object_get(r, "findings");
    const char *sha = json_string_value(json_object_get(r, "call_key_sha256")), *range = json_string_value(json_object_get(r, "range"));
    char name[64], gpu[40], fl[16] = "";
    if (sha) snprintf(name, sizeof name, "dkb/call/%.12s", sha);
    else snprintf(name, sizeof name, "%.24s", range);
    const json_t *g = json_object_get(r, "gpu_ns_median");
    if (json_is_number(g) && json_integer_value(json_object_get(r, "launches")) > 0)
      snprintf(gpu, sizeof gpu, "%.2f us median", json_number_value(g) / 1e3);
    else snprintf(gpu, sizeof gpu, "-");
    for (int k = 0; k < TF_COUNT; k++) {
      char letter = (char)(trace_finding_names[k][0] - 'a' + 'A');
      size_t n = strlen(fl);
      fl[n] = json_is_true(json_object_get(f, trace_finding_names[k])) ? letter : '-';
      fl[n + 1] = k + 1 < TF_COUNT ? ' ' : '\0';
      fl[n + 2] = '\0';
    }
    printf("  %-24s %7lld %5lld %8lld %9lld %14s %24s  %s\n", name, (long long)json_integer_value(json_object_get(r, "pid")),
           (long long)json_integer_value(json_object_get(r, "instances")), (long long)json_integer_value(json_object_get(r, "kernels")),
           (long long)json_integer_value(json_object_get(r, "launches")),
           json_is_true(json_object_get(r, "split")) ? (json_is_true(json_object_get(r, "combine")) ? "yes/yes" : "yes/no")
                                                     : (json_is_true(json_object_get(r, "combine")) ? "no/yes" : "no/no"),
           gpu, fl);
    const json_t *ks = json_object_get(r, "kernel_list");
    for (size_t k = 0; k < json_array_size(ks); k++)
      printf("      %.110s x%lld\n", json_string_value(json_object_get(json_array_get(ks, k), "demangled")),
             (long long)json_integer_value(json_object_get(json_array_get(ks, k), "launches")));
  }
  printf("  findings  L loaded, D declared, E executed, C checked, T timed ('-': does not hold; the bundle says why)\n");
  printf("  bundles   %s/calls/ (%zu), summary %s/summary.json\n", out_dir, s->n, out_dir);
}

/* usage: dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...] */
int cmd_trace(int argc, char **argv) {
  enum { O_RANGE = 256, O_DUMP, O_QUIET };
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'}, {"range", required_argument, NULL, O_RANGE},
                                       {"dump", required_argument, NULL, O_DUMP},   {"quiet", no_argument, NULL, O_QUIET},
                                       {NULL, 0, NULL, 0}};
  const char *out_dir = "trace-out", *patterns[MAX_LIST], *dumps[MAX_LIST + 1];
  size_t npat = 0, ndump = 0;
  int quiet = 0, c;
  /* "+": options end at CMD, so its own options are left alone */
  while ((c = getopt_long(argc, argv, "+:o:", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out_dir = optarg; break;
    case O_RANGE:
      if (npat == MAX_LIST) return cmd_usage_error("trace", "at most %d --range patterns", MAX_LIST);
      patterns[npat++] = optarg;
      break;
    case O_DUMP:
      if (ndump == MAX_LIST) return cmd_usage_error("trace", "at most %d --dump folders", MAX_LIST);
      dumps[ndump++] = optarg;
      break;
    case O_QUIET: quiet = 1; break;
    case ':': return cmd_usage_error("trace", "option '%s' needs a value", argv[optind - 1]);
    default: return cmd_usage_error("trace", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return cmd_usage_error("trace", "no command given (dkb trace [OPTIONS] -- CMD [ARGS...])");
  char **cmd = argv + optind;
  struct dkb_err err;
  dkb_err_clear(&err);
  const char *taken = getenv("CUDA_INJECTION64_PATH");
  if (taken && *taken) {
    fprintf(stderr, "dkb: error: CUDA_INJECTION64_PATH is already set ('%s'): another tool injects itself into CUDA "
                    "programs (nsys, ncu, a profiler); dkb trace does not replace it\n", taken);
    return DKB_ENV;
  }
  /* Nsight Compute sets NV_NSIGHT_INJECTION_* in the processes it profiles (seen under ncu 2025.3 with
   * --target-processes all), and its own injection in CMD then refuses dkb's CUDA_INJECTION64_PATH and ends
   * CMD with an error: refused here, before CMD runs, rather than changing the program's result. */
  const char *nsight = getenv("NV_NSIGHT_INJECTION_TRANSPORT_TYPE");
  if (nsight) {
    fprintf(stderr, "dkb: error: dkb trace runs under an Nsight tool (NV_NSIGHT_INJECTION_TRANSPORT_TYPE is set): its "
                    "injection in CMD would refuse dkb's and end CMD with an error; run dkb trace outside the profiler\n");
    return DKB_ENV;
  }
  char lib[PATH_MAX];
  if (find_library(lib)) {
    fprintf(stderr, "dkb: error: cannot find dkb's injection library (libdkb_inject.so beside the dkb executable, or "
                    "$DKB_INJECT_LIB): build it with make\n");
    return DKB_ENV;
  }
  if (!empty_or_absent(out_dir)) return cmd_usage_error("trace", "output folder '%s' exists and is not empty", out_dir);
  char rec_dir[PATH_MAX], dump_dir[PATH_MAX], calls_dir[PATH_MAX], abs_out[PATH_MAX];
  if (dkb_mkdirs(out_dir, &err) || !realpath(out_dir, abs_out)) return cmd_report_err(&err);
  snprintf(rec_dir, sizeof rec_dir, "%.4000s/records", abs_out);
  snprintf(dump_dir, sizeof dump_dir, "%.4000s/dumps", abs_out);
  snprintf(calls_dir, sizeof calls_dir, "%.4000s/calls", out_dir);
  if (dkb_mkdirs(rec_dir, &err) || dkb_mkdirs(dump_dir, &err) || dkb_mkdirs(calls_dir, &err)) return cmd_report_err(&err);
  dumps[ndump++] = dump_dir;

  char e_dir[PATH_MAX + 16], e_cuda[PATH_MAX + 32], e_nvtx[PATH_MAX + 32], e_dump[PATH_MAX + 32];
  snprintf(e_dir, sizeof e_dir, "DKB_TRACE_DIR=%s", rec_dir);
  snprintf(e_cuda, sizeof e_cuda, "CUDA_INJECTION64_PATH=%s", lib);
  snprintf(e_dump, sizeof e_dump, "DKB_TRACE_DUMP_DIR=%s", dump_dir);
  const char *nvtx = getenv("NVTX_INJECTION64_PATH");
  char *env[6] = {e_dir, e_cuda, e_dump, NULL, NULL, NULL};
  int ne = 3;
  if (nvtx && *nvtx)
    fprintf(stderr, "dkb: trace: NVTX_INJECTION64_PATH is already '%s': NVTX ranges go to that tool, and dkb sees none\n", nvtx);
  else {
    snprintf(e_nvtx, sizeof e_nvtx, "NVTX_INJECTION64_PATH=%s", lib);
    env[ne++] = e_nvtx;
  }
  /* --range: the ranges whose first launch takes a loader map, one pattern per line */
  char e_pat[MAX_LIST * 256 + 32] = "DKB_TRACE_PATTERNS=";
  for (size_t i = 0; i < npat; i++) {
    size_t n = strlen(e_pat);
    snprintf(e_pat + n, sizeof e_pat - n, "%s%.250s", i ? "\n" : "", patterns[i]);
  }
  if (npat) env[ne++] = e_pat;
  struct spawn_result sr;
  if (spawn_wait(cmd, env, &sr, &err)) return cmd_report_err(&err);

  json_t *argvj = json_array();
  for (char **a = cmd; *a; a++) json_array_append_new(argvj, json_string(*a));
  json_t *exitj = spawn_result_json(&sr), *meta = bundle_meta_new(argc, argv);
  struct tr_proc *procs = NULL;
  size_t nprocs = 0;
  int rc = DKB_OK;
  struct trace_bundle_set set;
  memset(&set, 0, sizeof set);
  if (tr_read_dir(rec_dir, &procs, &nprocs, &err)) {
    rc = cmd_report_err(&err);
    goto done;
  }
  struct trace_run run = {abs_out, npat ? patterns : NULL, npat, dumps, ndump, argvj, sr.pid, exitj, meta};
  if (trace_bundles_build(procs, nprocs, &run, &set, &err)) {
    rc = cmd_report_err(&err);
    goto done;
  }
  for (size_t i = 0; i < set.n && rc == DKB_OK; i++) {
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", calls_dir, set.names[i]);
    if (write_json(path, set.docs[i], &err)) rc = cmd_report_err(&err);
  }
  char spath[PATH_MAX + 32];
  snprintf(spath, sizeof spath, "%.4000s/summary.json", out_dir);
  if (rc == DKB_OK && write_json(spath, set.summary, &err)) rc = cmd_report_err(&err);
  if (rc != DKB_OK) goto done;

  int subscribed = 0, incomplete = set.incomplete;
  for (size_t i = 0; i < nprocs; i++) {
    const struct tr_cupti_call *sub = tr_proc_cupti(&procs[i], "cuptiSubscribe");
    subscribed |= sub && sub->code == 0;
  }
  printf("dkb trace: %s", cmd[0]);
  for (char **a = cmd + 1; *a; a++) printf(" %s", *a);
  if (sr.signaled) printf(" (killed by signal %d%s)\n", sr.sig, sr.core ? ", core dumped" : "");
  else printf(" (exit %d)\n", sr.code);
  if (!quiet) print_table(set.summary, &set, out_dir);
  int failed = sr.signaled || sr.code != 0;
  if (failed) rc = DKB_FAIL;
  else if (nprocs == 0) {
    struct stat st;
    fprintf(stderr, "dkb: error: nothing was traced: no process loaded the injection library (%s; the CUDA driver loads "
                    "it at cuInit, NVTX at the first nvtx call)\n",
            stat("/proc/driver/nvidia/version", &st) ? "no NVIDIA driver on this host" : "the program used neither CUDA nor NVTX");
    rc = DKB_ENV;
  } else if (!subscribed) {
    const struct tr_cupti_call *sub = tr_proc_cupti(&procs[0], "cuptiSubscribe");
    fprintf(stderr, "dkb: error: no process could trace its GPU work: %s\n",
            sub && sub->text ? sub->text : "CUDA was never initialized (no GPU, or the program made no CUDA call)");
    rc = DKB_ENV;
  } else if (set.dump_malformed) rc = DKB_INPUT;
  else if (incomplete || set.dump_failed) rc = DKB_FAIL;
  if (rc == DKB_FAIL && !failed)
    fprintf(stderr, "dkb: error: %s\n", incomplete ? "a process with a traced call ended with records unflushed or dropped (its bundle says which)"
                                                   : "a dump of a traced call failed its check");
done:
  for (size_t i = 0; i < nprocs; i++) tr_proc_release(&procs[i]);
  free(procs);
  trace_bundle_set_release(&set);
  json_decref(argvj);
  json_decref(exitj);
  json_decref(meta);
  return rc;
}
