/* contracts.c - the table of contract kinds `dkb oracle` knows (see contract.h).
 * To add a kind: write `int oracle_eval_KIND(...)` (an oracle_eval_fn) next to its oracle, declare it
 * here, add a row, add fixtures under fixtures/contracts/ and its input to schemas/contract.schema.json. */
#include "contract.h"

int oracle_eval_split_state(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_split_state_laws(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_launch_storage(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_phase_integration(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);

const struct oracle_kind oracle_kinds[] = {
    {"split_state", "0x02", oracle_eval_split_state},
    {"split_state_laws", "0x02D-0x02E", oracle_eval_split_state_laws},
    {"launch_storage", "0x03", oracle_eval_launch_storage},
    {"phase_integration", "0x08", oracle_eval_phase_integration},
    {NULL, NULL, NULL},
};
