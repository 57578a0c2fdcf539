/* libFuzzer target: a bench matrix (dkb bench --matrix's input) from arbitrary bytes. Its cases name
 * fixture files relative to it: it is written into DKB_FUZZ_DIR (tools/fuzz.sh links the bench fixtures
 * there), and a refusal may name the fixture instead of the matrix. */
#include "fuzz.h"
#include "harness/bench.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  static char path[4200];
  if (!path[0]) {
    const char *dir = getenv("DKB_FUZZ_DIR");
    snprintf(path, sizeof path, "%s/matrix-%d.json", dir ? dir : "/tmp", (int)getpid());
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(d, 1, n, f) != n || fclose(f)) abort();
  struct bench_matrix m;
  struct dkb_err err;
  dkb_err_clear(&err);
  if (bench_matrix_load(path, &m, &err)) fuzz_require_input_error(&err, err.file[0] ? err.file : path);
  bench_matrix_release(&m);
  return 0;
}
