/* check.h - `dkb check DUMP`: the float64 oracle (harness/decode_ref.c) over the inputs a dump holds,
 * and the candidate's O, LSE and (append) caches compared under the call key's frozen tolerances with the
 * same code and the same report as `dkb run`'s correctness (harness/run_evidence.h), plus the rows no key
 * is visible to. `dkb trace` runs it on a dump whose call key matches a call range. */
#ifndef DKB_CHECK_H
#define DKB_CHECK_H

#include <jansson.h>

#include "lib/err.h"

struct check_summary {
  int passed;
  double out_max_abs, out_max_ratio, lse_max_abs;
  long long out_violations, nan;
  long long all_masked_rows;
  char call_key_sha256[65];
};

/* Reads and checks the dump in dir. 0 with *report (schema dkb.check-report/v1, new reference) and s
 * filled, whether the candidate passed or not; -1 with err (DKB_INPUT: malformed dump) otherwise. */
int check_dump(const char *dir, json_t **report, struct check_summary *s, struct dkb_err *err);

#endif
