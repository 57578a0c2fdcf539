/* contracts.c - the table of contract kinds `dkb oracle` knows (see contract.h).
 * To add a kind: write `int oracle_eval_KIND(...)` (an oracle_eval_fn) next to its oracle, declare it
 * here, add a row, add fixtures under fixtures/contracts/ and its input to schemas/contract.schema.json. */
#include "contract.h"

int oracle_eval_split_state(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_split_state_laws(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_kv_address(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_column(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_program(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_ledger(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);
int oracle_eval_mask_laws(struct jr *, const json_t *, const char *, json_t **, struct oracle_reject *);

const struct oracle_kind oracle_kinds[] = {
    {"split_state", "0x02", oracle_eval_split_state},
    {"split_state_laws", "0x02D-0x02E", oracle_eval_split_state_laws},
    {"kv_address", "0x04", oracle_eval_kv_address},
    {"mask_column", "0x06A-0x06B, 0x06H", oracle_eval_mask_column},
    {"mask_program", "0x05B-0x05C, 0x06C-0x06F", oracle_eval_mask_program},
    {"mask_ledger", "0x06G, 0x06I", oracle_eval_mask_ledger},
    {"mask_laws", "0x05C, 0x06D, 0x06H", oracle_eval_mask_laws},
    {NULL, NULL, NULL},
};
