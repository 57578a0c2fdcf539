/* trace_ladder.h - grading a dkb.trace/v1 bundle (schemas/trace.schema.json), the evidence `dkb trace`
 * gathers from inside someone else's program. `dkb trace` grades each bundle before writing it and
 * `dkb validate` grades it again with this same function; nothing is trusted from the bundle's claims.
 *
 * A trace has no level-1/2 provenance chain, no admission vector, no poison and no untraced timing, so
 * it claims no level of the article's six-level ladder (evidence/ladder.h). It has five separate named
 * findings instead, each holding only when all of its requirements do (no finding implies another unless
 * said):
 *   loaded    what was loaded: a loader map at the first launch of every instance, every object hashed
 *             and unchanged on disk since the program mapped it, every module hashed, every kernel bound
 *             to a hashed module, no installed distribution whose RECORD disagrees with its file
 *   declared  what the program declared: a dkb/call/ range whose call key is a dkb.call-key/v1 document
 *             with every field, consistent, and whose digest recomputes
 *   executed  what ran: CUPTI was dkb's, the process flushed and ended through its exit path with every
 *             line written, nothing dropped, every instance closed, every instance ran a kernel, every
 *             kernel record complete, every launch call that succeeded has its kernel record
 *   checked   what was checked: declared holds, and every dump of the same call key passed `dkb check`
 *             (which cannot prove that the dumped output is the output of the kernels observed)
 *   timed     what was timed: executed holds, and per-instance GPU time (CUPTI kernel durations WITH
 *             tracing on; never a measurement in the article's level-6 sense) summarizes as stated
 * Bundle-wide findings (a claim that does not hold, a claimed article level, a record file that does not
 * match its digest, split_combine or a kernel's role that does not recompute from the kernel names) never change a finding but make the bundle fail validation. */
#ifndef DKB_TRACE_LADDER_H
#define DKB_TRACE_LADDER_H

#include <stddef.h>

#include <jansson.h>

#include "evidence/ladder.h"
#include "lib/err.h"
#include "lib/jread.h"

#define TRACE_SCHEMA_ID "dkb.trace/v1"

enum trace_finding { TF_LOADED, TF_DECLARED, TF_EXECUTED, TF_CHECKED, TF_TIMED, TF_COUNT };
extern const char *const trace_finding_names[TF_COUNT];

struct trace_reason {
  const char *id;         /* stable snake_case id */
  int finding;            /* enum trace_finding, or -1 for a bundle-wide reason */
  enum ladder_kind kind;
  const char *summary;
};
extern const struct trace_reason trace_reasons[]; /* NULL-id terminated */

struct trace_item {
  int finding;            /* -1: bundle-wide */
  enum ladder_kind kind;
  const char *reason;     /* from trace_reasons (static) */
  char pointer[DKB_PTR_MAX];
  char detail[384];
};

struct trace_grade {
  int holds[TF_COUNT];
  int claimed[TF_COUNT];  /* the bundle's "claims" */
  struct trace_item *items;
  size_t n, cap;
};

void trace_grade_init(struct trace_grade *g);
void trace_grade_release(struct trace_grade *g);
/* Grades doc (read from file, for messages). bundle_dir: the folder the bundle lies in, to re-hash its
 * record file; NULL skips that. 0 with g filled, or -1 with err (DKB_INPUT) when doc is not a trace
 * bundle (schema id, a section of the wrong type). */
int trace_ladder_evaluate(const json_t *doc, const char *file, const char *bundle_dir, struct trace_grade *g,
                          struct dkb_err *err);
/* Split and combine kernels by name, a heuristic over demangled names whose wording every bundle carries
 * (TRACE_SPLIT_RULE): 1 when the name looks like a combine of split partial states, 2 like a split
 * producer, 0 neither. The ladder recomputes a bundle's roles and split_combine with it. */
extern const char TRACE_SPLIT_RULE[];
int trace_kernel_role(const char *demangled);
/* 1 when every claimed finding holds and there is no bundle-wide finding. */
int trace_grade_honest(const struct trace_grade *g);
/* {"loaded": {"holds": b, "reasons": [{reason, kind, pointer, detail}]}, ..., "bundle": [...]} */
json_t *trace_grade_json(const struct trace_grade *g);
/* The names of the findings that hold, as "claims" lists them. */
json_t *trace_grade_claims(const struct trace_grade *g);

#endif
