/* claims.h - evidence-class checks shared by the contract kinds that keep a bytes ledger (0x04I,
 * 0x06G): a stored-object size is never measured traffic. A fixture may attach a traffic claim; it is
 * accepted only as a profiler counter at a declared runtime coordinate, and reported in its own ledger
 * row next to the resident and logical rows the oracle computes. */
#ifndef DKB_CLAIMS_H
#define DKB_CLAIMS_H

#include <jansson.h>

#include "contracts/contract.h"

/* Reads the optional object `key` of `in`:
 *   {"bytes": N, "source": "resident_metadata" | "logical_demand" | "profiler_counter",
 *    "counter": "dram__bytes_read.sum", "scope": "one decode call, ..."}
 * Returns 0 with *measured set to the ledger row (JSON null when there is no claim), 1 with rej set
 * when the claim uses a resident or logical size as traffic ("resident_metadata_as_traffic",
 * "logical_demand_as_traffic"), -1 when malformed. resident_bytes is the oracle's own resident total,
 * quoted in the rejection. */
int oracle_traffic_claim(struct jr *r, const json_t *in, const char *ptr, const char *key, long long resident_bytes,
                         json_t **measured, struct oracle_reject *rej);

#endif
