/* driver.c - dkb with its Nth heap allocation (or I/O call) failing (libfiu), for tests/failalloc.py.
 * Run under LD_PRELOAD=/usr/lib/fiu/fiu_posix_preload.so, which routes malloc, calloc and realloc through
 * the failure points under libc/mm. They are armed here, in main, after the CUDA runtime's static
 * registration has run (libcudart's own constructors do not survive a failed allocation), so only what
 * dkb and the libraries it calls allocate from main on can fail.
 * DKB_FAILALLOC_NTH=N fails allocation N (0-based) once; unset or -1 fails none. With DKB_FAILALLOC_COUNT
 * set, the allocations counted are printed to stderr at exit as "failalloc: N allocations" (a run that
 * ran out of memory ends in _exit, so it prints nothing). */
#include <fiu.h>
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

static void report(void) { fprintf(stderr, "failalloc: %ld allocations\n", (long)atomic_load(&seen)); }

int main(int argc, char **argv) {
  const char *n = getenv("DKB_FAILALLOC_NTH");
  nth = n ? atol(n) : -1;
  if (getenv("DKB_FAILALLOC_COUNT")) atexit(report);
  fiu_init(0);
  const char *points = getenv("DKB_FAILALLOC_POINTS");  /* or other libfiu points (failalloc.py: posix/io) */
  fiu_enable_external(points ? points : "libc/mm/*", 1, NULL, 0, fail_nth);
  return dkb_main(argc, argv);
}
