/* cjson.c - canonical JSON writer (see cjson.h). jansson's own json_dumps prints reals with %.17g
 * and upper-case escapes, so it cannot produce the canonical form; this walks the tree itself. */
#include "lib/cjson.h"
#include "lib/sha256.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shortest digit string d1..dk and decimal exponent such that 0.d1..dk * 10^decpt round-trips to v.
 * %.*e is correctly rounded by glibc; at a power of two the round-trip interval is asymmetric, so the
 * neighbours of the rounded candidate are tried too before accepting more digits. */
static int shortest_digits(double v, char digits[24], int *decpt) {
  char tmp[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
    char *e = strchr(tmp, 'e');
    int exp10 = atoi(e + 1);
    char d[24];
    int k = 0;
    for (char *s = tmp; s < e; s++)
      if (*s >= '0' && *s <= '9') d[k++] = *s;
    d[k] = '\0';
    for (int delta = 0; delta <= 2; delta++) {
      /* delta 0: as rounded; 1: last digit + 1; 2: last digit - 1 */
      char c[24];
      int cexp = exp10;
      memcpy(c, d, (size_t)k + 1);
      if (delta == 1) {
        int i = k - 1;
        while (i >= 0 && c[i] == '9') c[i--] = '0';
        if (i < 0) { memmove(c + 1, c, (size_t)k); c[0] = '1'; c[k] = '\0'; cexp++; }
        else c[i]++;
      } else if (delta == 2) {
        int i = k - 1;
        while (i >= 0 && c[i] == '0') c[i--] = '9';
        if (i < 0 || (i == 0 && c[0] == '1' && k == 1)) continue;
        c[i]--;
        if (c[0] == '0') continue; /* would lose a digit: not a p-digit candidate */
      }
      char back[48];
      snprintf(back, sizeof back, "%c.%se%d", c[0], c + 1, cexp);
      if (strtod(back, NULL) == v) {
        int n = (int)strlen(c);
        while (n > 1 && c[n - 1] == '0') c[--n] = '\0';
        memcpy(digits, c, (size_t)n + 1);
        *decpt = cexp + 1;
        return 0;
      }
    }
  }
  return -1;
}

void cjson_format_double(double v, char buf[32]) {
  char *o = buf;
  if (signbit(v)) { *o++ = '-'; v = -v; }
  if (v == 0.0) { strcpy(o, "0.0"); return; }
  char d[24];
  int decpt = 0;
  if (shortest_digits(v, d, &decpt) != 0) { snprintf(o, 31, "%.17g", v); return; }
  int nd = (int)strlen(d);
  if (decpt <= -4 || decpt > 16) {            /* Python 'r' format switches to exponent here */
    *o++ = d[0];
    if (nd > 1) { *o++ = '.'; memcpy(o, d + 1, (size_t)nd - 1); o += nd - 1; }
    int x = decpt - 1 < 0 ? 1 - decpt : decpt - 1;  /* |exponent| <= 324 */
    *o++ = 'e';
    *o++ = decpt - 1 < 0 ? '-' : '+';
    if (x >= 100) *o++ = (char)('0' + x / 100);
    *o++ = (char)('0' + x / 10 % 10);
    *o++ = (char)('0' + x % 10);
    *o = '\0';
  } else if (decpt <= 0) {
    *o++ = '0'; *o++ = '.';
    for (int i = 0; i < -decpt; i++) *o++ = '0';
    memcpy(o, d, (size_t)nd + 1);
  } else if (decpt < nd) {
    memcpy(o, d, (size_t)decpt); o += decpt;
    *o++ = '.';
    memcpy(o, d + decpt, (size_t)(nd - decpt) + 1);
  } else {
    memcpy(o, d, (size_t)nd); o += nd;
    for (int i = nd; i < decpt; i++) *o++ = '0';
    strcpy(o, ".0");
  }
}

/* Decodes one UTF-8 sequence (jansson guarantees valid UTF-8) and returns its length. */
static int utf8_next(const unsigned char *s, unsigned *cp) {
  if (s[0] < 0x80) { *cp = s[0]; return 1; }
  if ((s[0] & 0xE0) == 0xC0) { *cp = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu); return 2; }
  if ((s[0] & 0xF0) == 0xE0) { *cp = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu); return 3; }
  *cp = ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
  return 4;
}

static void write_string(const char *str, size_t len, struct dkb_buf *out) {
  const unsigned char *s = (const unsigned char *)str, *end = s + len;
  dkb_buf_addc(out, '"');
  while (s < end) {
    unsigned cp;
    s += utf8_next(s, &cp);
    switch (cp) {
    case '"': dkb_buf_adds(out, "\\\""); break;
    case '\\': dkb_buf_adds(out, "\\\\"); break;
    case '\n': dkb_buf_adds(out, "\\n"); break;
    case '\r': dkb_buf_adds(out, "\\r"); break;
    case '\t': dkb_buf_adds(out, "\\t"); break;
    case '\b': dkb_buf_adds(out, "\\b"); break;
    case '\f': dkb_buf_adds(out, "\\f"); break;
    default:
      if (cp >= 0x20 && cp <= 0x7E) dkb_buf_addc(out, (char)cp);  /* Python escapes [^ -~] */
      else if (cp < 0x10000) dkb_buf_addf(out, "\\u%04x", cp);
      else {
        unsigned v = cp - 0x10000;
        dkb_buf_addf(out, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      }
    }
  }
  dkb_buf_addc(out, '"');
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void newline(struct dkb_buf *out, int indent, int depth) {
  if (indent <= 0) return;
  dkb_buf_addc(out, '\n');
  for (int i = 0; i < indent * depth; i++) dkb_buf_addc(out, ' ');
}

static int write_value(const json_t *j, int indent, int depth, struct dkb_buf *out, struct dkb_err *err) {
  char num[32];
  switch (json_typeof(j)) {
  case JSON_NULL: dkb_buf_adds(out, "null"); return 0;
  case JSON_TRUE: dkb_buf_adds(out, "true"); return 0;
  case JSON_FALSE: dkb_buf_adds(out, "false"); return 0;
  case JSON_INTEGER: dkb_buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(j)); return 0;
  case JSON_REAL: {
    double v = json_real_value(j);
    if (!isfinite(v)) return dkb_err_set(err, DKB_INPUT, NULL, NULL, "NaN or Infinity has no JSON form");
    cjson_format_double(v, num);
    dkb_buf_adds(out, num);
    return 0;
  }
  case JSON_STRING: write_string(json_string_value(j), json_string_length(j), out); return 0;
  case JSON_ARRAY: {
    size_t n = json_array_size(j);
    dkb_buf_addc(out, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) dkb_buf_addc(out, ',');
      newline(out, indent, depth + 1);
      if (write_value(json_array_get(j, i), indent, depth + 1, out, err)) return -1;
    }
    if (n) newline(out, indent, depth);
    dkb_buf_addc(out, ']');
    return 0;
  }
  case JSON_OBJECT: {
    size_t n = json_object_size(j), k = 0;
    const char **keys = DKB_MALLOC(n * sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)j, key, v) keys[k++] = key;
    qsort(keys, n, sizeof *keys, cmp_keys);
    dkb_buf_addc(out, '{');
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
      if (i) dkb_buf_addc(out, ',');
      newline(out, indent, depth + 1);
      write_string(keys[i], strlen(keys[i]), out);
      dkb_buf_adds(out, indent > 0 ? ": " : ":");
      rc = write_value(json_object_get(j, keys[i]), indent, depth + 1, out, err);
    }
    if (n && !rc) newline(out, indent, depth);
    dkb_buf_addc(out, '}');
    free(keys);
    return rc;
  }
  }
  DKB_BUG("unknown jansson type %d", (int)json_typeof(j));
}

int cjson_write(const json_t *j, int indent, struct dkb_buf *out, struct dkb_err *err) {
  return write_value(j, indent, 0, out, err);
}

int cjson_digest(const json_t *j, char hex[65], struct dkb_err *err) {
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = cjson_write(j, 0, &b, err);
  if (!rc) rc = dkb_sha256_buf(b.p, b.n, hex, err);
  dkb_buf_release(&b);
  return rc;
}
