/* ladder.h - the six-level evidence ladder (article 0x0AH, 0x0B; docs/DESIGN.md "The evidence ladder").
 * One function grades a bundle (schema dkb.bundle/v1, schemas/bundle.schema.json): `dkb run` calls it
 * before writing a bundle and `dkb validate` calls it on every bundle it reads, so a level is computed
 * by the same code everywhere and never trusted from the bundle's claimed_level.
 *
 * The computed level is L* = max{L : every requirement of levels 1..L is present and consistent}.
 * Every requirement that fails is a finding: its level, a stable reason id (the table in ladder.c,
 * printed by `dkb validate --list-reasons`), the JSON Pointer of what is missing or wrong, and a detail.
 * Level-0 findings are bundle-wide (a claim above L*, a status that contradicts the evidence, an
 * unreferenced artifact that does not match its file): they never lower L*, but a bundle with any of
 * them does not validate. */
#ifndef DKB_LADDER_H
#define DKB_LADDER_H

#include <stddef.h>

#include <jansson.h>

#include "lib/err.h"
#include "lib/jread.h"

#define LADDER_MAX_LEVEL 6
#define BUNDLE_SCHEMA_ID "dkb.bundle/v1"
/* A run bundle's trace artifact (harness/trace.c's JSON lines, schemas/trace-record.schema.json): its
 * own id, so it is never mistaken for a `dkb trace` bundle (dkb.trace/v1, evidence/trace_ladder.h). */
#define TRACE_RECORDS_SCHEMA_ID "dkb.trace-records/v1"

enum ladder_kind {
  LADDER_UNMET = 0,            /* required evidence is absent */
  LADDER_INCONSISTENT = 1,     /* evidence is present but contradicts itself or what it can be recomputed from */
  LADDER_NOT_RECOMPUTABLE = 2, /* a catalogue entry, never a finding: bundle fields dkb validate cannot recompute
                                * offline (no artifact holds them), so they are the run's word */
};
/* "unmet", "inconsistent", "not_recomputable". */
const char *ladder_kind_name(enum ladder_kind k);

/* One stable reason id: the catalogue `dkb validate --list-reasons` prints and the README documents. */
struct ladder_reason {
  const char *id;       /* snake_case, stable across releases */
  int level;            /* level it belongs to; -1 for artifact reasons, reported at the referencing level */
  enum ladder_kind kind;
  const char *summary;  /* what the requirement is */
};
/* NULL-id-terminated table of every reason id. */
extern const struct ladder_reason ladder_reasons[];
const struct ladder_reason *ladder_reason_find(const char *id);

struct ladder_finding {
  int level;                /* 1..6, or 0 for bundle-wide findings */
  enum ladder_kind kind;
  const char *reason;       /* id from ladder_reasons (static storage) */
  char pointer[DKB_PTR_MAX];/* RFC 6901 pointer of the missing or inconsistent value ("" = whole bundle) */
  char detail[384];         /* human explanation: lower case, no full stop */
};

struct ladder_result {
  int computed;             /* L*: 0..6 */
  int claimed;              /* the bundle's claimed_level */
  int synthetic;            /* the bundle says "synthetic": true (schema test, never a measurement) */
  char terminal[64];        /* status.terminal */
  struct ladder_finding *findings;  /* levels 1..6, then level 0; within a level in the order found */
  size_t n, cap;
};
void ladder_result_init(struct ladder_result *res);
void ladder_result_release(struct ladder_result *res);
/* 1 when the bundle proves every level it claims and has no bundle-wide (level-0) finding. */
int ladder_result_honest(const struct ladder_result *res);
/* {"computed_level", "claimed_level", "synthetic", "terminal", "findings": [{level, kind, reason,
 * pointer, detail}]} (schemas/validate-report.schema.json, $defs/result). */
json_t *ladder_result_to_json(const struct ladder_result *res);

struct ladder_opts {
  const char *bundle_dir;   /* folder holding the bundle's artifacts; NULL: artifact files not checked */
  const char *source_root;  /* checkout to re-hash level-1 files against; NULL: no re-hash */
};

/* Grades `bundle`, read from `file` (used in error messages). Returns 0 with *res filled (res must be
 * initialised), or -1 with err set (DKB_INPUT, with the file and the JSON Pointer or line:column) when
 * the document is not a bundle: wrong schema id, unknown key, wrong type. Missing or inconsistent
 * evidence is never an error: it is a finding. */
int ladder_evaluate(const json_t *bundle, const char *file, const struct ladder_opts *opts,
                    struct ladder_result *res, struct dkb_err *err);

/* The call-chain layers level 2 requires, in call order (NULL-terminated). */
extern const char *const ladder_required_layers[];
/* Highest level a bundle with this status.terminal may prove (complete: 6); -1 for an unknown state. */
int ladder_terminal_ceiling(const char *terminal);
/* The exit code a run that ended in this status.terminal calls for: DKB_FAIL for correctness_failed
 * (a wrong output, or one the call did not reproduce after the timed samples), launch_code for
 * launch_failed (the failed CUDA call's: DKB_FAIL when a kernel faulted, DKB_ENV when the machine did,
 * harness/gpucheck.c; DKB_FAIL when it is 0), DKB_OK for complete and the states a machine caps,
 * DKB_INTERNAL for internal_error or an unknown state. */
int ladder_terminal_exit_code(const char *terminal, int launch_code);

#endif
