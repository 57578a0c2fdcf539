/* contract.h - evaluating the article's contract fixtures through the float64 oracles.
 * A contract fixture (schema dkb.contract/v1, see schemas/contract.schema.json) names a contract
 * kind, gives its input, and either lists expectations on the oracle's report or names the reason
 * the oracle must reject it with (an invalid fixture must fail closed). Each kind is one row of the
 * table in contracts.c: its evaluator turns the input into a JSON report by calling the plain C API
 * of its oracle, so the GPU comparisons and the validator reuse the same code. */
#ifndef DKB_CONTRACT_H
#define DKB_CONTRACT_H

#include <jansson.h>

#include "lib/err.h"
#include "lib/jread.h"

/* Why an oracle refused an input: a stable reason id (snake_case) and a human detail. */
struct oracle_reject {
  char reason[64];
  char detail[512];
};

/* Evaluate `input` (at JSON Pointer `ptr` in r->file). Returns 0 with *report set, 1 when the
 * oracle rejects the input (rej filled), -1 when the input is malformed (r->err set). */
typedef int (*oracle_eval_fn)(struct jr *r, const json_t *input, const char *ptr, json_t **report,
                              struct oracle_reject *rej);

struct oracle_kind {
  const char *name;      /* value of the fixture's "contract" */
  const char *sections;  /* article sections it implements, e.g. "0x02" */
  oracle_eval_fn eval;
};

/* NULL-terminated table of every contract kind (contracts.c). */
extern const struct oracle_kind oracle_kinds[];
const struct oracle_kind *oracle_kind_find(const char *name);

/* Sets rej and returns 1: `return oracle_reject(rej, "overlapping_splits", "...", ...)`. */
int oracle_reject(struct oracle_reject *rej, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report helpers. JSON cannot hold infinities, so non-finite doubles become "inf", "-inf", "nan";
 * expectations read them back the same way. */
json_t *oracle_num(double v);
json_t *oracle_num_array(const double *v, size_t n);
json_t *oracle_int_array(const long long *v, size_t n);

/* Outcome of one fixture. */
struct oracle_outcome {
  char contract[64], name[128];
  int rejected;               /* the oracle refused the input */
  struct oracle_reject rej;   /* why, when rejected */
  json_t *report;             /* the oracle's report (NULL when rejected); owned */
  json_t *failures;           /* array of {"at", "why"}: unmet expectations; owned */
  size_t expectations;        /* expectations checked */
  int pass;                   /* every expectation (or the expected rejection) holds */
};
void oracle_outcome_release(struct oracle_outcome *o);

/* Evaluates a whole fixture document: envelope, oracle, expectations. Returns 0 (see o->pass), or
 * -1 with err set when the document is not a well-formed contract fixture. */
int oracle_run_fixture(const char *file, const json_t *doc, struct oracle_outcome *o, struct dkb_err *err);

#endif
