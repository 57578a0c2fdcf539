/* main.c - the one test runner: every group below runs as one cmocka group, so `make test` ends
 * with cmocka's summary line. To add a file: define DKB_TEST_GROUP(name, ...) in it and list it here. */
#include "tests/util.h"

#include <stdlib.h>
#include <string.h>

#define GROUPS(X) X(cjson) X(cli) X(split_state) X(ledger) X(phase) X(registry) X(schedule) X(bench_claims) X(capture) X(capture_trace) X(measure) X(provenance) X(kv_address) X(mask) X(ladder) X(call_key) X(validate) X(preflight) X(npy) X(dump) X(captured) X(compare) X(run) X(plan) X(bench) X(repeat) X(outputs) X(plugins) X(side_by_side) X(serving) X(trace) X(trace_bundle) X(check)

#define DECLARE(name) const struct CMUnitTest *tests_##name(size_t *n);
GROUPS(DECLARE)

int main(void) {
  size_t total = 0, n;
  struct CMUnitTest *all = NULL;
#define COLLECT(name)                                              \
  {                                                                \
    const struct CMUnitTest *t = tests_##name(&n);                 \
    all = realloc(all, (total + n) * sizeof *all);                 \
    memcpy(all + total, t, n * sizeof *t);                         \
    total += n;                                                    \
  }
  GROUPS(COLLECT)
  /* DKB_TEST_FILTER='gpu_*' runs only the matching tests (e.g. on the GPU machine); DKB_TEST_SKIP leaves
   * the matching ones out (tools/gpu-smoke.sh --asan: the counters tests cannot load under ASan). */
  if (getenv("DKB_TEST_FILTER")) cmocka_set_test_filter(getenv("DKB_TEST_FILTER"));
  if (getenv("DKB_TEST_SKIP")) cmocka_set_skip_filter(getenv("DKB_TEST_SKIP"));
  int failed = _cmocka_run_group_tests("dkb", all, total, NULL, NULL);
  free(all);
  tmp_dir_release(failed);
  return failed ? 1 : 0;
}
