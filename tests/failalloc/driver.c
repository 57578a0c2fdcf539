/* driver.c - dkb with its Nth heap allocation (or I/O call) failing (libfiu), for tests/failalloc.py.
 * Run under LD_PRELOAD=/usr/lib/fiu/fiu_posix_preload.so, which routes malloc, calloc and realloc through
 * the failure points under libc/mm. They are armed here, in main, after the CUDA runtime's static
 * registration has run (libcudart's own constructors do not survive a failed allocation), so only what
 * dkb and the libraries it calls allocate from main on can fail.
 * DKB_FAILALLOC_NTH=N fails allocation N (0-based) once; unset or -1 fails none. With DKB_FAILALLOC_COUNT
 * set, the allocations counted are printed to stderr at exit as "failalloc: N allocations" (a run that
 * ran out of memory ends in _exit, so it prints nothing). */
#include <execinfo.h>
#include <fiu.h>
#include <signal.h>
#include <unistd.h>
#include <fiu-control.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

int dkb_main(int argc, char **argv);

static long nth = -1;
static atomic_long seen;

static int fail_nth(const char *name, int *failnum, void **failinfo, unsigned int *flags) {
  (void)name; (void)failnum; (void)failinfo; (void)flags;
  return atomic_fetch_add(&seen, 1) == nth;
}

/* A crash prints its stack to stderr before the signal takes the process (backtrace_symbols_fd does
 * not allocate): on a machine without gdb, the frames are what says whose code failed. */
static void on_crash(int sig) {
  void *pc[48];
  int n = backtrace(pc, 48);
  static const char head[] = "failalloc: crashed; stack:\n";
  if (write(2, head, sizeof head - 1) < 0) {}
  backtrace_symbols_fd(pc, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void report(void) { fprintf(stderr, "failalloc: %ld allocations\n", (long)atomic_load(&seen)); }

int main(int argc, char **argv) {
  const char *n = getenv("DKB_FAILALLOC_NTH");
  nth = n ? atol(n) : -1;
  if (getenv("DKB_FAILALLOC_COUNT")) atexit(report);
  void *warm[1];
  backtrace(warm, 1);  /* loads libgcc's unwinder now, not inside a crash */
  signal(SIGSEGV, on_crash);
  signal(SIGABRT, on_crash);
  signal(SIGBUS, on_crash);
  fiu_init(0);
  const char *points = getenv("DKB_FAILALLOC_POINTS");  /* or other libfiu points (failalloc.py: posix/io) */
  fiu_enable_external(points ? points : "libc/mm/*", 1, NULL, 0, fail_nth);
  return dkb_main(argc, argv);
}
