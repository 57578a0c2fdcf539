/* cmd.h - every dkb subcommand. cmd/ is the only layer that prints or chooses an exit code.
 *
 * To add a subcommand:
 *   1. write cmd/NAME.c with `int cmd_NAME(int argc, char **argv)`, preceded by its usage line;
 *      argv[0] is the subcommand name; return an enum dkb_exit value, never call exit();
 *   2. declare it below;
 *   3. add one row to the table in cmd/main.c (name, function, usage, summary, help text);
 *   4. add one example to README.md's Commands (tests/test_cli.c runs the README examples), and the
 *      usage line with the whole description to docs/commands.md.
 * `dkb NAME --help` and `dkb help NAME` print the row's text without calling the function. */
#ifndef DKB_CMD_H
#define DKB_CMD_H

#include <stdio.h>

#include <jansson.h>

#include "lib/err.h"

int cmd_oracle(int argc, char **argv);
int cmd_digest(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_preflight(int argc, char **argv);
int cmd_backends(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* Shared by the cmd_* files. */
/* Prints doc in canonical form with indent 2 and a newline, then releases it; returns DKB_OK or the
 * error's code. */
int cmd_print_json(json_t *doc);
/* "dkb: error: <formatted err>" on stderr; returns err->code (DKB_INTERNAL when it has none). */
int cmd_report_err(const struct dkb_err *err);
/* The same, naming what the error belongs to: "dkb: error: <what>: <formatted err>" (a bench case). */
int cmd_report_err_in(const char *what, const struct dkb_err *err);
/* "dkb: error: <msg>" + the command's usage line on stderr; returns DKB_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses long options with getopt_long, turning its complaints into cmd_usage_error. Returns the
 * option value like getopt_long, -1 at the end, or '?' after printing the usage error. */
/* An evidence level 0..6 from an option's value into *out; 0, or a usage error (returns DKB_USAGE). */
int cmd_parse_level(const char *cmd, const char *option, const char *value, int *out);
struct option;
int cmd_getopt(int argc, char **argv, const struct option *opts, const char *cmd);
extern int cmd_optind;
extern char *cmd_optarg;

#endif
