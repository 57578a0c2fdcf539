/* contracts.c - the table of contract kinds `dkb oracle` knows (see contract.h).
 * To add a kind: write `int oracle_eval_KIND(...)` (an oracle_eval_fn) next to its oracle, declare it
 * here, add a row, add fixtures under fixtures/contracts/ and its input to schemas/contract.schema.json. */
#include "contracts/contract.h"

int oracle_eval_split_state(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_split_state_laws(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_launch_storage(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_phase_integration(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_dispatch_admission(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_dispatch_matrix(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_dispatch_plan(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_schedule_fa2_splits(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_schedule_flashinfer_plan(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_schedule_work(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_schedule_shared_shift(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_schedule_paper_axes(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_bench_manifest(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_bench_estimators(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_kv_address(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_column(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_program(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_ledger(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_laws(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);

const struct oracle_kind oracle_kinds[] = {
    {"split_state", "0x02", oracle_eval_split_state},
    {"split_state_laws", "0x02D-0x02E", oracle_eval_split_state_laws},
    {"launch_storage", "0x03", oracle_eval_launch_storage},
    {"phase_integration", "0x08", oracle_eval_phase_integration},
    {"dispatch_admission", "0x07A-0x07C, 0x07J", oracle_eval_dispatch_admission},
    {"dispatch_matrix", "0x07D", oracle_eval_dispatch_matrix},
    {"dispatch_plan", "0x07F", oracle_eval_dispatch_plan},
    {"schedule_fa2_splits", "0x0AB", oracle_eval_schedule_fa2_splits},
    {"schedule_flashinfer_plan", "0x0AD", oracle_eval_schedule_flashinfer_plan},
    {"schedule_work", "0x09B, 0x09D, 0x09E, 0x09G, 0x09I", oracle_eval_schedule_work},
    {"schedule_shared_shift", "0x09C, 0x09I", oracle_eval_schedule_shared_shift},
    {"schedule_paper_axes", "0x09A, 0x09F, 0x09I", oracle_eval_schedule_paper_axes},
    {"bench_manifest", "0x0CD-0x0CI", oracle_eval_bench_manifest},
    {"bench_estimators", "0x0CB-0x0CC", oracle_eval_bench_estimators},
    {"kv_address", "0x04", oracle_eval_kv_address},
    {"mask_column", "0x06A-0x06B, 0x06H", oracle_eval_mask_column},
    {"mask_program", "0x05B-0x05C, 0x06C-0x06F", oracle_eval_mask_program},
    {"mask_ledger", "0x06G, 0x06I", oracle_eval_mask_ledger},
    {"mask_laws", "0x05C, 0x06D, 0x06H", oracle_eval_mask_laws},
    {NULL, NULL, NULL},
};
