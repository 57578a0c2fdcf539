/* spawn.c - starting and waiting for the traced program (see spawn.h). */
#include "harness/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int same_name(const char *a, const char *b) {
  size_t n = strcspn(a, "=");
  return !strncmp(a, b, n) && b[n] == '=';
}

int spawn_wait(char *const argv[], char *const extra_env[], struct spawn_result *r, struct dkb_err *err) {
  memset(r, 0, sizeof *r);
  size_t n = 0, k = 0;
  while (environ[n]) n++;
  while (extra_env[k]) k++;
  char **env = DKB_CALLOC(n + k + 1, sizeof *env);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int replaced = 0;
    for (size_t j = 0; j < k && !replaced; j++) replaced = same_name(extra_env[j], environ[i]);
    if (!replaced) env[m++] = environ[i];
  }
  for (size_t j = 0; j < k; j++) env[m++] = extra_env[j];
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) {
    free(env);
    return dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "pipe: %s", strerror(errno));
  }
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, NULL); /* the program gets the dispositions dkb was started with */
    sigaction(SIGQUIT, &old_quit, NULL);
    close(pfd[0]);
    execvpe(argv[0], argv, env);
    int e = errno;
    ssize_t w = write(pfd[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  int rc = 0;
  close(pfd[1]);
  free(env);
  if (pid < 0) {
    rc = dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "fork: %s", strerror(errno));
    close(pfd[0]);
    goto done;
  }
  r->pid = (long)pid;
  int child_errno = 0;
  ssize_t got;
  do got = read(pfd[0], &child_errno, sizeof child_errno);
  while (got < 0 && errno == EINTR);
  close(pfd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) { rc = dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "waitpid: %s", strerror(errno)); goto done; }
  if (got == (ssize_t)sizeof child_errno) {
    rc = dkb_err_set(err, DKB_USAGE, NULL, NULL, "cannot run '%s': %s", argv[0], strerror(child_errno));
    goto done;
  }
  r->exited = WIFEXITED(st);
  r->code = r->exited ? WEXITSTATUS(st) : 0;
  r->signaled = WIFSIGNALED(st);
  r->sig = r->signaled ? WTERMSIG(st) : 0;
  r->core = r->signaled && WCOREDUMP(st);
done:
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  return rc;
}

json_t *spawn_result_json(const struct spawn_result *r) {
  if (r->signaled)
    return json_pack("{s:s,s:n,s:i,s:b}", "kind", "signaled", "code", "signal", r->sig, "core_dumped", r->core);
  return json_pack("{s:s,s:i,s:n}", "kind", "exited", "code", r->code, "signal");
}
