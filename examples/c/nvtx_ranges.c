/* nvtx_ranges.c - a program with NVTX ranges and no CUDA, for `dkb trace` on a machine without a GPU
 * (tests/test_trace.c): the NVTX half of dkb's injection library records the ranges, and the trace says
 * what it could not see. Usage: nvtx_ranges MODE [CALL_KEY_FILE]
 *   ok             a dkb/call/ range with a nested range on the main thread, a worker thread's own range
 *   open           the call range is still open when main returns
 *   exit-in-range  exit(3) from inside two ranges
 *   abort          abort() inside the call range: the process dies without its exit path
 *   fork           a fork() child pushes and pops its own range and exits; the parent waits
 *   domain         a registered-string range in a created domain and a wide-string range
 * The call range is "dkb/call/" + the file's contents (trailing newline removed), or a fixed name. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char name[1 << 16];

static void *worker(void *arg) {
  (void)arg;
  nvtxRangePushA("worker");
  nvtxRangePop();
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  snprintf(name, sizeof name, "dkb/call/");
  if (argc > 2) {
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    size_t n = fread(name + 9, 1, sizeof name - 10, f);
    fclose(f);
    while (n && (name[9 + n - 1] == '\n' || name[9 + n - 1] == '\r')) n--;
    name[9 + n] = '\0';
  } else {
    snprintf(name, sizeof name, "dkb/call/{}");
  }
  if (!strcmp(mode, "domain")) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("dkb");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(d, name);
    nvtxDomainRangePushEx(d, &a);
    nvtxRangePushW(L"wide \u00e9");
    nvtxRangePop();
    nvtxDomainRangePop(d);
    return 0;
  }
  nvtxRangePushA(name);
  if (!strcmp(mode, "open")) return 0;
  if (!strcmp(mode, "abort")) abort();
  nvtxRangePushA("inner");
  if (!strcmp(mode, "exit-in-range")) exit(3);
  nvtxRangePop();
  if (!strcmp(mode, "fork")) {
    pid_t pid = fork();
    if (pid == 0) {
      nvtxRangePushA("child");
      nvtxRangePop();
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) return 1;
  } else {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
  }
  nvtxRangePop();
  return 0;
}
