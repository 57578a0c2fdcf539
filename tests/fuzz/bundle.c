/* libFuzzer target: an evidence bundle (dkb validate's input) from arbitrary bytes: parse and grade. */
#include "fuzz.h"
#include "evidence/ladder.h"

static int check(json_t *doc, struct dkb_err *err) {
  struct ladder_result res;
  ladder_result_init(&res);
  const struct ladder_opts o = {NULL, NULL};
  const int rc = ladder_evaluate(doc, "fuzz.json", &o, &res, err);
  if (!rc) {
    /* a graded bundle: a level in 0..6, and every finding a registered reason at a level, with a JSON
     * Pointer ("" or "/...") and a detail */
    if (res.computed < 0 || res.computed > 6) abort();
    for (size_t i = 0; i < res.n; i++) {
      const struct ladder_finding *f = &res.findings[i];
      if (f->level < 0 || f->level > 6 || !f->reason || !ladder_reason_find(f->reason) ||
          (f->pointer[0] && f->pointer[0] != '/') || !f->detail[0]) {
        fprintf(stderr, "finding %zu: level %d, reason '%s', pointer '%s', detail '%s'\n", i, f->level,
                f->reason ? f->reason : "(null)", f->pointer, f->detail);
        abort();
      }
    }
    (void)ladder_result_honest(&res);
    json_decref(ladder_result_to_json(&res));
  }
  ladder_result_release(&res);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return fuzz_json(d, n, check); }
