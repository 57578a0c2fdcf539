/* cjson.h - the one canonical JSON writer.
 * Canonical = byte-identical to Python's json.dumps(x, sort_keys=True, separators=(",", ":")):
 * keys sorted by code point, no spaces, floats in the shortest repr that round-trips ("0.0", "1e-05",
 * "1e+16"), non-ASCII and control characters as lower-case \uXXXX. Every digest dkb prints or checks
 * is the SHA-256 of these bytes. With indent > 0 the output equals json.dumps(x, sort_keys=True,
 * indent=indent) instead: the same values, laid out for people (bundle files). */
#ifndef DKB_CJSON_H
#define DKB_CJSON_H

#include <jansson.h>

#include "lib/buf.h"
#include "lib/err.h"

/* Appends the document to out. Fails (DKB_INPUT) only on NaN/Infinity, which JSON cannot hold. */
int cjson_write(const json_t *j, int indent, struct dkb_buf *out, struct dkb_err *err);
/* Python repr() of a double: the shortest decimal that round-trips. buf needs 32 bytes. */
void cjson_format_double(double v, char buf[32]);
/* SHA-256 (64 lower-case hex digits) of the canonical compact bytes. */
int cjson_digest(const json_t *j, char hex[65], struct dkb_err *err);

#endif
