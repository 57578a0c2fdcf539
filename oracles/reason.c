/* reason.c - filling an oracle's refusal (see reason.h). */
#include "oracles/reason.h"

#include <stdarg.h>
#include <stdio.h>

int oracle_reason(char reason[ORACLE_REASON_MAX], char detail[ORACLE_DETAIL_MAX], const char *why, const char *fmt,
                  ...) {
  snprintf(reason, ORACLE_REASON_MAX, "%s", why);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, ORACLE_DETAIL_MAX, fmt, ap);
  va_end(ap);
  return -1;
}
