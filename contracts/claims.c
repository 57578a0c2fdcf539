/* claims.c - traffic claims against resident and logical ledgers (see claims.h). */
#include "contracts/claims.h"

#include <stdint.h>

static const char *const SOURCES[] = {"resident_metadata", "logical_demand", "profiler_counter", NULL};

int oracle_traffic_claim(struct jr *r, const json_t *in, const char *ptr, const char *key, long long resident_bytes,
                         json_t **measured, struct oracle_reject *rej) {
  *measured = json_null();
  const json_t *c = json_object_get(in, key);
  if (!c) return 0;
  char p[DKB_PTR_MAX];
  jr_ptr_key(p, ptr, key);
  static const char *const req[] = {"bytes", "source", NULL}, *const opt[] = {"counter", "scope", NULL};
  long long bytes = 0;
  int source = 0;
  const char *counter = NULL, *scope = NULL;
  if (jr_keys(r, c, p, req, opt) || jr_int(r, c, p, "bytes", 1, 0, INT64_MAX, &bytes) ||
      jr_enum(r, c, p, "source", 1, SOURCES, &source) || jr_str(r, c, p, "counter", 0, &counter) ||
      jr_str(r, c, p, "scope", 0, &scope))
    return -1;
  if (source == 0)
    return oracle_reject(rej, "resident_metadata_as_traffic",
                         "the claim reports %lld B of resident metadata (the oracle's resident total is %lld B) as memory "
                         "traffic; a stored-object size is not a DRAM transfer: measure a profiler counter at one declared "
                         "runtime coordinate", bytes, resident_bytes);
  if (source == 1)
    return oracle_reject(rej, "logical_demand_as_traffic",
                         "the claim reports %lld B of logical lookup demand as measured traffic; caching, sharing and "
                         "transaction widening make them differ: measure a profiler counter", bytes);
  if (!counter || !*counter || !scope || !*scope)
    return jr_fail(r, p, NULL, "a profiler_counter claim needs a counter name and a scope");
  json_decref(*measured);
  *measured = json_pack("{s:I,s:s,s:s}", "bytes", (json_int_t)bytes, "counter", counter, "scope", scope);
  return 0;
}
