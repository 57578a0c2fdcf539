/* main.c - the dkb entry point: the one dispatch table, help, version, and the stdout check. */
#include <getopt.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"
#include "version.h"

struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *usage;    /* one line, after "usage: " */
  const char *summary;  /* for the command list */
  const char *help;     /* options and what the command does */
};

static const char EXIT_CODES[] =
    "exit codes:\n"
    "  0  ok\n"
    "  1  the thing under test failed (expectation, correctness, a faulting kernel, level below required, regression)\n"
    "  2  usage error\n"
    "  3  malformed input (fixture, bundle or bench result)\n"
    "  4  the environment cannot supply what was required (a GPU, memory, a working driver)\n"
    "  5  internal error\n";

static const struct command COMMANDS[] = {
    {"oracle", cmd_oracle, "dkb oracle FIXTURE... [--json]",
     "evaluate contract fixtures through the float64 oracles",
     "Evaluates each contract fixture (schema dkb.contract/v1) through the float64 oracle of its\n"
     "contract kind and checks the fixture's expectations, or that the oracle rejects an invalid\n"
     "fixture with the declared reason.\n\n"
     "  --json   print one JSON report (schema dkb.oracle-report/v1) instead of the summary\n\n"
     "Exit 0 when every expectation holds, 1 when one fails, 3 when a fixture is malformed.\n"},
    {"digest", cmd_digest, "dkb digest FILE [--pointer /json/pointer] [--canonical]",
     "print the canonical-JSON SHA-256 of a document or sub-document",
     "Prints the SHA-256 of the canonical JSON form of FILE (keys sorted, no spaces, shortest\n"
     "round-trip floats, as Python's json.dumps(x, sort_keys=True, separators=(\",\", \":\"))),\n"
     "or of the sub-document named by --pointer (RFC 6901).\n\n"
     "  --pointer P   digest only the value at JSON Pointer P\n"
     "  --canonical   print the canonical bytes instead of the digest\n"},
    {"run", cmd_run,
     "dkb run FIXTURE [-o DIR] [--backend NAME|auto] [--warmup N] [--samples N] [--max-samples N] [--max-noise PCT] "
     "[--max-time S] [--cold] [--graph] [--counters] [--no-timing] [--require-level N] [--dump DIR | --dump-on-fail DIR] "
     "[--quiet] [--plugin PATH]...",
     "run one frozen decode call and write a graded evidence bundle",
     "Runs the decode call frozen in FIXTURE (schema dkb.decode/v1): seeded, poisoned inputs in the\n"
     "declared cache layout; the launch plan; admission of every registered backend; the float64 oracle;\n"
     "on a GPU a capture pass (NVTX range + CUPTI kernel records), correctness against the oracle, a timing\n"
     "pass without tracing, and optionally a counters pass. Writes DIR/bundle.json and its content-addressed\n"
     "artifacts atomically, graded by the same ladder `dkb validate` runs. Without a GPU the bundle stops at\n"
     "the level the host can prove, with its reason.\n\n"
     "  -o, --output DIR     bundle folder (default out)\n"
     "  --backend NAME       force a registered backend (dkb_split_kv, dkb_naive_reference; a refusal is\n"
     "                       recorded, it fails closed) or 'auto' (default: the fixture's request);\n"
     "                       any other name is a usage error (exit 2)\n"
     "  --warmup N           launches before the first sample (default 3)\n"
     "  --samples N          minimum raw samples, >= 20 (default 20)\n"
     "  --max-samples N      hard cap on samples\n"
     "  --max-noise PCT      stop once the relative stdev is below PCT percent (default 0.5)\n"
     "  --max-time S         wall-clock limit of the sampling loop (default 15)\n"
     "  --cold               flush L2 before every sample (by reading 2x L2: no dirty lines)\n"
     "  --graph              time CUDA graph replays of the call (graph mode becomes part of the call key)\n"
     "  --counters           collect dram__bytes_read/write.sum and gpu__time_duration.sum in their own pass\n"
     "  --no-timing          skip the timing pass (the bundle then stops at level 5)\n"
     "  --require-level N    exit 4 (environment) or 1 (failure) when the bundle proves less than N\n"
     "  --dump DIR           write every tensor as NumPy .npy plus index.json\n"
     "  --dump-on-fail DIR   the same, kept only when correctness fails\n"
     "  --quiet              no progress lines on stderr\n"
     "  --plugin PATH        load a backend plugin (repeatable; also DKB_PLUGIN_PATH): its backends are\n"
     "                       admitted beside dkb's own and can be forced with --backend\n\n"
     "Exit 0 when the call ran as far as this host allows, 1 when its output was wrong or not reproduced\n"
     "or a kernel faulted, 3 on a malformed fixture, 4 when the machine failed a launch (out of device\n"
     "memory, a driver error) or --require-level asks for more than this host can give.\n"},
    {"bench", cmd_bench,
     "dkb bench [FIXTURE... | --matrix FILE] [-o DIR] [--backend A,B,...] [--plugin PATH]... [--graph] [--cold]\n"
     "          [--max-time S] [--no-roofline] [--counters] [--require-targets | --require-margin]",
     "sweep decode calls against the streaming-read roofline",
     "Runs each case (a decode fixture, or every fixture x split variant of a dkb.bench-matrix/v1 file)\n"
     "through the same runner as `dkb run` (each case writes a graded bundle under DIR/cases/), and\n"
     "measures a streaming-read roofline (kernels/roofline.cu over >= 4 GiB) in the same process on\n"
     "the same device. Prints median time, the samples' relative stdev, achieved bandwidth = (unique\n"
     "K/V + Q + O bytes) / median (decimal TB/s), the fraction of the roofline, the split count, and for\n"
     "masked calls the bandwidth over the K/V of visible tiles, and the excess: the median less the launch\n"
     "floor and the read of the call's (visible) bytes at the roofline, its fixed costs in microseconds;\n"
     "the same-bytes read: the roofline kernel over a buffer of the call's (visible) bytes, timed as the\n"
     "call (what one launch that only reads them measures), and rfrac = read / median;\n"
     "compares auto with the best forced split count of each fixture; judges the matrix's targets (a\n"
     "case's \"target\": roofline_fraction, visible_roofline_fraction and read_fraction floors, the last\n"
     "over its same-bytes read, within_pct_of another fixture's median; the matrix's auto_within_pct) on\n"
     "level-6 results, each against the run's noise band (dkb compare's; a verdict inside it is at the\n"
     "edge); writes DIR/bench.json, DIR/bench.csv and DIR/roofline-fraction.svg (`dkb compare`\n"
     "reads two bench.json files). fixtures/bench/matrix.json is the H200 sweep, fixtures/bench/serving.json\n"
     "the serving batches side by side with FlashInfer and cuDNN (--plugin each; make plugins builds them).\n\n"
     "  --matrix FILE   the sweep (fixture paths relative to FILE; splits: [\"auto\", 1, 2, ...])\n"
     "  -o, --output DIR  output folder (default bench-out)\n"
     "  --backend A,B,...  run every case once per backend, forced, on the same inputs (at most 8; it\n"
     "                  replaces the matrix's \"backends\"), print them side by side and judge A against\n"
     "                  each other backend that admitted the call (\"median <= B's\")\n"
     "  --plugin PATH   load a backend plugin (repeatable; also DKB_PLUGIN_PATH) whose backends --backend\n"
     "                  or the matrix names\n"
     "  --graph         time CUDA graph replays (graph mode becomes part of every call key)\n"
     "  --cold          flush L2 before every sample (by reading 2x L2: no dirty lines)\n"
     "  --max-time S    sampling limit per case (default 2)\n"
     "  --no-roofline   skip the roofline measurement, its launch floors and the same-bytes reads\n"
     "  --counters      each case's CUPTI counters (dkb run --counters): the DRAM bytes a call read after\n"
     "                  the timed ones, over its visible K/V bytes; below 0.95, L2 served part of the K/V\n"
     "                  from the calls before it: the case says so and its fraction targets are not\n"
     "                  measured (unless --cold)\n"
     "  --require-targets  fail when a target is missed (exit 1) or cannot be measured here (exit 4)\n"
     "  --require-margin   the same, and fail (exit 1) when a target is met only within the run's noise\n\n"
     "Exit 0, 1 when a case's output is wrong or its kernel faulted (or, with --require-targets, a target\n"
     "is missed; with --require-margin, also met only at the edge), 3 on a malformed matrix or fixture, 4\n"
     "when the machine failed a case's launch or the gate meets a target this host cannot measure.\n"},
    {"compare", cmd_compare,
     "dkb compare BASE NEW [--noise PCT] [--min-noise PCT] [--base-backend A] [--new-backend B] [--json]",
     "compare two bench runs case by case (the regression gate)",
     "Matches the cases of two `dkb bench` results (bench.json files, schema dkb.bench/v1, or the folders\n"
     "`dkb bench -o` wrote them to) by name and prints each median, the change (new / base - 1), the noise\n"
     "band and a verdict: same (within the band), faster, slower, unknown (a run recorded no noise),\n"
     "unmeasured (a side below level 6), other_call (the same name for two different call keys) or in one\n"
     "run only, beside both roofline fractions (over the visible bytes). The band is the sum of the two\n"
     "runs' relative standard deviations of the samples, at least --min-noise. Both runs' commits,\n"
     "rooflines and devices are printed: a change between two machines may be the machines', not the\n"
     "kernels'.\n\n"
     "  --noise PCT       one band for every case instead of the recorded noise (runs without rel_stdev)\n"
     "  --min-noise PCT   the least band (default 0.5)\n"
     "  --base-backend A  only the cases BASE ran under backend A (a side-by-side run holds each name once\n"
     "                    per backend; reading one whole is malformed input)\n"
     "  --new-backend B   only the cases NEW ran under backend B; with two different backends, the same\n"
     "                    fixture and split is the same call (two backends of one run compared)\n"
     "  --json            print one JSON report (schema dkb.compare-report/v1) instead of the table\n\n"
     "Exit 0 when no case is slower beyond its band, 1 when one is, 3 when a file is not a bench result,\n"
     "4 when no case could be judged (nothing measured at level 6 in both runs, or no noise known).\n"},
    {"validate", cmd_validate,
     "dkb validate BUNDLE... [--require-level N] [--json] [--source-root DIR] [--allow-synthetic] [--list-reasons]",
     "grade evidence bundles on the six-level ladder (the CI gate)",
     "Grades each evidence bundle (schema dkb.bundle/v1) on the six-level evidence ladder: the computed\n"
     "level is the highest L whose requirements 1..L are all present and consistent; digests, artifact and\n"
     "source hashes and timing summaries are recomputed. Prints the computed and claimed level and every\n"
     "unmet or inconsistent requirement with its JSON Pointer and reason id. Artifacts are read from the\n"
     "bundle's folder.\n\n"
     "  --require-level N   also require every bundle to prove level N (0-6)\n"
     "  --json              print one JSON report (schema dkb.validate-report/v1)\n"
     "  --source-root DIR   re-hash the level-1 source files under DIR and check their symbol spans\n"
     "  --allow-synthetic   let synthetic (schema-test) bundles satisfy --require-level\n"
     "  --list-reasons      print every reason id with its meaning, then exit: the ladder's by level, then\n"
     "                      the trace ladder's (dkb trace bundles) by finding\n\n"
     "Exit 0 when every bundle claims no more than it proves (and reaches N), 1 otherwise, 3 when a file\n"
     "is not a bundle.\n"},
    {"backends", cmd_backends, "dkb backends [--json] [--plugin PATH]...",
     "list every backend dkb can run here: its own and loaded plugins'",
     "Lists every backend of the one registry: dkb's own and those of each plugin loaded with --plugin\n"
     "or DKB_PLUGIN_PATH (colon-separated files), in priority order, with its version, what it admits, and\n"
     "for a plugin its library's path and SHA-256, its ABI version and its upstream package.\n\n"
     "  --plugin PATH   load the backend plugin in PATH (repeatable; include/dkb/backend.h is its ABI)\n"
     "  --json          print one JSON document (schema dkb.backends/v1)\n\n"
     "Exit 3 when a plugin is not a dkb plugin of this ABI (no entry point, another ABI version, a\n"
     "malformed table), 4 when it cannot be loaded (dlopen's reason).\n"},
    {"trace", cmd_trace, "dkb trace [-o DIR] [--range PATTERN]... [--dump DIR]... [--quiet] -- CMD [ARGS...]",
     "run a program under dkb's CUPTI/NVTX injection and write a graded trace bundle per call range",
     "Runs CMD in its own process with dkb's injection library (CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH\n"
     "name build/libdkb_inject.so, or $DKB_INJECT_LIB) and records every kernel, memcpy and memset with its\n"
     "symbol, grid, block, registers, stream and GPU timestamps, attributed by correlation id to the innermost\n"
     "NVTX range open on the launching thread; the loader map at the first launch of each call range; every\n"
     "module loaded from memory, hashed. A call is an NVTX range named dkb/call/ + the canonical call-key JSON\n"
     "(dkb.call-key/v1); from PyTorch:\n"
     "    torch.cuda.nvtx.range_push(\"dkb/call/\" + key_json)   # python/dkb_dump.py: range_name(key)\n"
     "    torch.cuda.nvtx.range_pop()\n"
     "Writes DIR/records/ (one file per process), one bundle per call range and process (DIR/calls/*.json,\n"
     "schema dkb.trace/v1) and DIR/summary.json, and prints a table: call, kernels, launches, split/combine\n"
     "seen, GPU time. Each bundle is graded by the same code `dkb validate` runs, as separate findings:\n"
     "loaded, declared (the call key digest recomputes), executed (kernels in the range, none dropped, the\n"
     "process flushed), checked (a dump of the same call key passed `dkb check`) and timed (CUPTI durations\n"
     "with tracing on, never a measurement). A trace bundle claims no level of the six-level ladder.\n"
     "Every process that loads the library writes its own record file (a fork child and an exec'd one\n"
     "included); a child that never initializes CUDA nor calls NVTX loads nothing and is not listed.\n\n"
     "  -o, --output DIR     output folder (default trace-out; must be empty or absent)\n"
     "  --range PATTERN      bundle the ranges whose name matches the fnmatch PATTERN (repeatable) instead\n"
     "                       of those named dkb/call/* (the loader map is then taken at their first launch)\n"
     "  --dump DIR           a dump folder, or a folder of them, to match to call ranges (repeatable;\n"
     "                       DIR/dumps is searched too: python/dkb_dump.py writes there under dkb trace)\n"
     "  --quiet              no table, only the summary line\n\n"
     "Exit 0 when the program exited 0 and every bundle is complete; 1 when the program exited nonzero or\n"
     "died of a signal, a process ended with records unflushed or dropped, or a matched dump failed its\n"
     "check; 2 on a usage error or a CMD that cannot be started; 3 when a record file or a matched dump is\n"
     "malformed; 4 when nothing could be traced (no process initialized CUDA or NVTX, CUPTI was taken by\n"
     "another tool, CUDA_INJECTION64_PATH was already set, or dkb trace itself runs under Nsight Compute).\n"
     "The program's own exit status is printed and kept in every bundle.\n"},
    {"check", cmd_check, "dkb check DUMP [--json]",
     "check a dump of one call (any program's) against dkb's float64 oracle",
     "Reads a dump folder in dkb's dump format (index.json + .npy files, schemas/dump.schema.json; `dkb run\n"
     "--dump` and python/dkb_dump.py write it): the call key, the layout metadata, Q, the caches, page\n"
     "tables or indptr, masks, and the candidate's o_gpu (and lse_gpu; k_cache_after and v_cache_after for an\n"
     "append). Runs dkb's float64 oracle over the dumped inputs and compares under the call key's frozen\n"
     "tolerances with the report `dkb run` gives: max error, the share of the tolerance used, violations,\n"
     "NaN and Inf, rows with no visible key, the cache after an append. A candidate with a base-2 LSE or\n"
     "another empty-row value says so in index.json's \"candidate\" and is converted as dkb run converts.\n\n"
     "  --json   print the report (schema dkb.check-report/v1)\n\n"
     "Exit 0 when the candidate passes, 1 when it does not, 3 when the dump is malformed (file, JSON\n"
     "Pointer, reason).\n"},
    {"preflight", cmd_preflight, "dkb preflight [--json] [--require-level N]",
     "inspect this host without touching the GPU: which evidence levels can it produce?",
     "Inspects the host without creating a CUDA context or loading GPU libraries: OS and architecture,\n"
     "NVIDIA driver (/proc/driver/nvidia), libcuda.so.1, libcupti and libnvidia-ml.so.1 on the loader path,\n"
     "nvidia-smi, NVTX_INJECTION64_PATH, profiling permissions and /dev/nvidia* nodes. Reports a terminal\n"
     "state (ready, cuda_runtime_unavailable, no_gpu, profiler_unavailable) and the highest evidence level\n"
     "this host can produce, with reasons.\n\n"
     "  --json              print the report as JSON (schema dkb.preflight/v1)\n"
     "  --require-level N   exit 4 when this host cannot produce level N (0-6)\n\n"
     "Exit 0 after a successful inspection (the state is data), 4 only when --require-level asks for more\n"
     "than the host can give.\n"},
};
static const size_t NCOMMANDS = sizeof COMMANDS / sizeof COMMANDS[0];

static const struct command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(COMMANDS[i].name, name)) return &COMMANDS[i];
  return NULL;
}

static void print_version(void) {
  printf("dkb %s (commit %s, %s)\n", DKB_VERSION, DKB_COMMIT, DKB_DIRTY ? "dirty" : "clean");
}

static void print_overview(FILE *f) {
  fprintf(f, "usage: dkb [--version] [--help] COMMAND [ARGS]\n\n"
             "dkb tells the truth about decode-attention kernels: it runs split-KV decode kernels on a\n"
             "frozen call, checks them against float64 oracles, and grades the evidence.\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
  fprintf(f, "  %-10s %s\n\n%s\nRun 'dkb help COMMAND' for a command's options.\n", "help",
          "show help for a command", EXIT_CODES);
}

static void print_help(const struct command *c) {
  printf("usage: %s\n\n%s\n%s", c->usage, c->help, EXIT_CODES);
}

int cmd_report_err_in(const char *what, const struct dkb_err *err) {
  char msg[2048];
  dkb_err_format(err, msg, sizeof msg);
  fprintf(stderr, "dkb: error: %s%s%s\n", what ? what : "", what ? ": " : "", msg);
  return err->code ? err->code : DKB_INTERNAL;
}

int cmd_report_err(const struct dkb_err *err) { return cmd_report_err_in(NULL, err); }

int cmd_print_json(json_t *doc) {
  struct dkb_buf b;
  struct dkb_err err;
  dkb_buf_init(&b);
  int rc = cjson_write(doc, 2, &b, &err) ? cmd_report_err(&err) : DKB_OK;
  if (rc == DKB_OK) printf("%s\n", b.p);
  dkb_buf_release(&b);
  json_decref(doc);
  return rc;
}

int cmd_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "dkb: error: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const struct command *c = cmd ? find(cmd) : NULL;
  if (c) fprintf(stderr, "\nusage: %s\n", c->usage);
  else fprintf(stderr, "\nusage: dkb [--version] [--help] COMMAND [ARGS]\n");
  return DKB_USAGE;
}

int cmd_parse_level(const char *cmd, const char *option, const char *value, int *out) {
  char *end;
  long v = strtol(value, &end, 10);
  if (!*value || *end || v < 0 || v > 6)
    return cmd_usage_error(cmd, "%s must be an integer from 0 to 6 (got '%s')", option, value);
  *out = (int)v;
  return 0;
}

int cmd_optind;
char *cmd_optarg;

int cmd_getopt(int argc, char **argv, const struct option *opts, const char *cmd) {
  /* ":" first: a missing value is told apart from an unknown option. */
  int c = getopt_long(argc, argv, ":", opts, NULL);
  cmd_optind = optind;
  cmd_optarg = optarg;
  if (c == ':') { cmd_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]); return '?'; }
  if (c == '?') { cmd_usage_error(cmd, "unknown option '%s'", argv[optind - 1]); return '?'; }
  return c;
}

static int is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

/* libcrypto hands allocations its own file and line. */
static void *crypto_malloc(size_t n, const char *file, int line) { return dkb_malloc(n, file, line); }
static void *crypto_realloc(void *p, size_t n, const char *file, int line) { return dkb_realloc(p, n, file, line); }
static void crypto_free(void *p, const char *file, int line) { (void)file; (void)line; free(p); }

/* SIGINT or SIGTERM: what this command created goes (lib/fsutil.h's journal), then the signal ends the
 * process as it would have. */
static void on_signal(int sig) {
  dkb_journal_rollback();
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  /* jansson and libcrypto allocate through dkb's checked allocator too (lib/err.h): out of memory
   * ends the command with exit code 4 and a message, never a half-built document or a NULL dereference.
   * Both must be set before the libraries allocate anything. */
  json_set_alloc_funcs(dkb_malloc_plain, free);
  CRYPTO_set_mem_functions(crypto_malloc, crypto_realloc, crypto_free);
  if (argc < 2) { print_overview(stderr); return DKB_USAGE; }
  const char *first = argv[1];
  int rc;
  if (is_help(first)) { print_overview(stdout); rc = DKB_OK; }
  else if (!strcmp(first, "--version") || !strcmp(first, "version")) { print_version(); rc = DKB_OK; }
  else if (!strcmp(first, "help")) {
    const struct command *c = argc > 2 ? find(argv[2]) : NULL;
    if (argc > 2 && !strcmp(argv[2], "help")) {  /* listed among the commands, so it answers too */
      printf("usage: dkb help [COMMAND]\n\nPrints the command list, or COMMAND's usage, options and exit codes.\n");
      rc = DKB_OK;
    } else if (argc > 2 && !c) rc = cmd_usage_error(NULL, "unknown command '%s'", argv[2]);
    else if (c) { print_help(c); rc = DKB_OK; }
    else { print_overview(stdout); rc = DKB_OK; }
  } else if (first[0] == '-') {
    rc = cmd_usage_error(NULL, "unknown option '%s'", first);
  } else {
    const struct command *c = find(first);
    if (!c) return cmd_usage_error(NULL, "unknown command '%s'", first);
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
      if (is_help(argv[i])) { print_help(c); goto done_help; }
    optind = 0; /* glibc: full re-initialisation of getopt for this command */
    opterr = 0;
    rc = c->fn(argc - 1, argv + 1);
    goto flush;
  done_help:
    rc = DKB_OK;
  }
flush:
  /* A full disk or closed pipe must not pass for success (git run_builtin, jq). */
  if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
    fprintf(stderr, "dkb: error: writing output failed\n");
    return DKB_INTERNAL;
  }
  return rc;
}
