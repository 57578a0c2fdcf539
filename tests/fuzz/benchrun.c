/* libFuzzer target: a bench result (dkb compare's input, bench.json of another run) from arbitrary bytes. */
#include "fuzz.h"
#include "harness/bench_diff.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/dkb-fuzz-benchrun-%d.json", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(d, 1, n, f) != n || fclose(f)) abort();
  struct bench_run r;
  struct dkb_err err;
  dkb_err_clear(&err);
  if (bench_run_load(path, &r, &err)) fuzz_require_input_error(&err, path);
  bench_run_release(&r);
  return 0;
}
