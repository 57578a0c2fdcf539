/* libFuzzer target: an evidence bundle (dkb validate's input) from arbitrary bytes: parse and grade. */
#include "fuzz.h"
#include "evidence/ladder.h"
#include "harness/jread.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  char *s = fuzz_text(d, n);
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *doc = jr_load_string(s, "fuzz.json", &err);
  if (!doc) {
    fuzz_require_input_error(&err, "fuzz.json");
  } else {
    struct ladder_result res;
    ladder_result_init(&res);
    const struct ladder_opts o = {NULL, NULL};
    if (ladder_evaluate(doc, "fuzz.json", &o, &res, &err)) {
      fuzz_require_input_error(&err, "fuzz.json");
    } else {
      if (res.computed < 0 || res.computed > 6) abort();
      (void)ladder_result_honest(&res);
      json_decref(ladder_result_to_json(&res));
    }
    ladder_result_release(&res);
    json_decref(doc);
  }
  free(s);
  return 0;
}
