/* main.c - the dkb entry point: the one dispatch table, help, version, and the stdout check. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
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
    "  1  the thing under test failed (expectation, correctness, level below required)\n"
    "  2  usage error\n"
    "  3  malformed input (fixture or bundle)\n"
    "  4  the environment cannot supply what was required\n"
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
};
static const size_t NCOMMANDS = sizeof COMMANDS / sizeof COMMANDS[0];

static const struct command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(COMMANDS[i].name, name)) return &COMMANDS[i];
  return NULL;
}

static void print_version(void) {
  printf("dkb %s (commit %s%s)\n", DKB_VERSION, DKB_COMMIT, DKB_DIRTY ? ", dirty" : "");
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

int cmd_report_err(const struct dkb_err *err) {
  char msg[2048];
  dkb_err_format(err, msg, sizeof msg);
  fprintf(stderr, "dkb: error: %s\n", msg);
  return err->code ? err->code : DKB_INTERNAL;
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

int main(int argc, char **argv) {
  if (argc < 2) { print_overview(stderr); return DKB_USAGE; }
  const char *first = argv[1];
  int rc;
  if (is_help(first)) { print_overview(stdout); rc = DKB_OK; }
  else if (!strcmp(first, "--version") || !strcmp(first, "version")) { print_version(); rc = DKB_OK; }
  else if (!strcmp(first, "help")) {
    const struct command *c = argc > 2 ? find(argv[2]) : NULL;
    if (argc > 2 && !c) rc = cmd_usage_error(NULL, "unknown command '%s'", argv[2]);
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
