/* spawn.h - running the program `dkb trace` observes: its own process, its environment plus dkb's
 * variables, and its exit status. A program that cannot be started is told apart from one that started
 * and failed: execvp's errno comes back through a close-on-exec pipe. */
#ifndef DKB_SPAWN_H
#define DKB_SPAWN_H

#include <jansson.h>

#include "lib/err.h"

struct spawn_result {
  long pid;
  int exited, code;          /* exited normally, with this status */
  int signaled, sig, core;   /* killed by a signal (core: it dumped core) */
};

/* Starts argv[0] (found on PATH) with the environment plus extra_env ("NAME=value" entries, NULL-ended,
 * replacing variables of the same name) and waits for it. While it runs dkb ignores SIGINT and SIGQUIT:
 * the terminal sends them to the program too, and dkb must outlive it to read its records. -1 with err:
 * DKB_USAGE when the program cannot be started ("cannot run 'x': No such file or directory"),
 * DKB_INTERNAL when fork or wait fails. */
int spawn_wait(char *const argv[], char *const extra_env[], struct spawn_result *r, struct dkb_err *err);
/* {"kind": "exited", "code": N, "signal": null} or {"kind": "signaled", "code": null, "signal": N,
 * "core_dumped": b} (new reference). */
json_t *spawn_result_json(const struct spawn_result *r);

#endif
