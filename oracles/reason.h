/* reason.h - how the plain C oracles refuse an input: a stable snake_case reason id and a detail.
 * The check functions of the oracle libraries (ledger_check, phase_append_check, ...) take
 * `char reason[64], char detail[256]` and fill both through oracle_reason; the contract adapters turn
 * them into fixture rejections, the planner and validator into evidence. */
#ifndef DKB_REASON_H
#define DKB_REASON_H

#define ORACLE_REASON_MAX 64
#define ORACLE_DETAIL_MAX 256

/* Writes reason and the formatted detail; always returns -1 so checks can `return oracle_reason(...)`. */
int oracle_reason(char reason[ORACLE_REASON_MAX], char detail[ORACLE_DETAIL_MAX], const char *why, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
