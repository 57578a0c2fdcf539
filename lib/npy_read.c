/* npy_read.c - the .npy reader (see npy_read.h). */
#include "lib/npy_read.h"
#include "lib/sha256.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct hp { const char *s, *end; };

static void skip(struct hp *h) { while (h->s < h->end && isspace((unsigned char)*h->s)) h->s++; }
static int eat(struct hp *h, char c) {
  skip(h);
  if (h->s < h->end && *h->s == c) { h->s++; return 1; }
  return 0;
}
/* A Python string literal in ' or " (no escapes: none of the keys or descrs needs one). */
static int quoted(struct hp *h, char *out, size_t n) {
  skip(h);
  if (h->s >= h->end || (*h->s != '\'' && *h->s != '"')) return 0;
  char q = *h->s++;
  size_t k = 0;
  while (h->s < h->end && *h->s != q) {
    if (*h->s == '\\' || k + 1 >= n) return 0;
    out[k++] = *h->s++;
  }
  if (h->s >= h->end) return 0;
  h->s++;
  out[k] = '\0';
  return 1;
}

static int parse_header(const char *text, size_t len, struct npy_array *a, char *why, size_t whyn) {
  struct hp h = {text, text + len};
  int seen[3] = {0, 0, 0}, fortran = 0;
  if (!eat(&h, '{')) { snprintf(why, whyn, "header is not a Python dict"); return -1; }
  while (!eat(&h, '}')) {
    char key[32];
    if (!quoted(&h, key, sizeof key) || !eat(&h, ':')) { snprintf(why, whyn, "header dict: expected 'key':"); return -1; }
    int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
    if (k < 0 || seen[k]++) { snprintf(why, whyn, "header dict: unexpected or repeated key '%s'", key); return -1; }
    skip(&h);
    if (k == 0) {
      if (!quoted(&h, a->descr, sizeof a->descr)) { snprintf(why, whyn, "header dict: 'descr' must be a dtype string"); return -1; }
    } else if (k == 1) {
      if ((size_t)(h.end - h.s) >= 5 && !strncmp(h.s, "False", 5)) h.s += 5;
      else if ((size_t)(h.end - h.s) >= 4 && !strncmp(h.s, "True", 4)) { h.s += 4; fortran = 1; }
      else { snprintf(why, whyn, "header dict: 'fortran_order' must be True or False"); return -1; }
    } else {
      if (!eat(&h, '(')) { snprintf(why, whyn, "header dict: 'shape' must be a tuple"); return -1; }
      a->ndim = 0;
      while (!eat(&h, ')')) {
        skip(&h);
        char *endp;
        errno = 0;
        long long v = strtoll(h.s, &endp, 10);
        if (endp == h.s || errno || v < 0 || a->ndim == NPY_MAX_DIMS) { snprintf(why, whyn, "header dict: 'shape' must hold integers >= 0"); return -1; }
        a->shape[a->ndim++] = v;
        h.s = endp;
        if (!eat(&h, ',')) { if (!eat(&h, ')')) { snprintf(why, whyn, "header dict: bad 'shape' tuple"); return -1; } break; }
      }
    }
    if (!eat(&h, ',')) { if (!eat(&h, '}')) { snprintf(why, whyn, "header dict: expected ',' or '}'"); return -1; } break; }
  }
  if (!seen[0] || !seen[1] || !seen[2]) { snprintf(why, whyn, "header dict must hold 'descr', 'fortran_order' and 'shape'"); return -1; }
  if (fortran) { snprintf(why, whyn, "Fortran-order arrays are not supported (save a C-contiguous array)"); return -1; }
  a->itemsize = npy_itemsize(a->descr);
  if (!a->itemsize) { snprintf(why, whyn, "unsupported dtype '%s' (dkb reads <f2 <u2 <f4 <f8 <i4 <i8 |u1)", a->descr); return -1; }
  return 0;
}

/* The header is read on its own and the data straight into its buffer: a cache tensor may be most of
 * the host's memory, so the file is never held twice. The digest streams over the file. */
int npy_read(const char *path, struct npy_array *a, struct dkb_err *err) {
  enum { HEADER_MAX = 1 << 20 };
  memset(a, 0, sizeof *a);
  FILE *f = fopen(path, "rb");
  if (!f) return dkb_err_set(err, errno == ENOENT ? DKB_INPUT : DKB_INTERNAL, path, NULL, "cannot open: %s", strerror(errno));
  struct stat st;
  char *head = NULL;
  int rc = -1;
  if (fstat(fileno(f), &st)) { dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot stat: %s", strerror(errno)); goto done; }
  size_t n = (size_t)st.st_size;
  a->file_bytes = n;
  if (dkb_sha256_file(path, a->sha256, err)) goto done;
  unsigned char pre[12];
  size_t got = fread(pre, 1, sizeof pre, f);
  if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) { dkb_err_set(err, DKB_INPUT, path, NULL, "not a .npy file (no \\x93NUMPY magic)"); goto done; }
  size_t hlen, off;
  if (pre[6] == 1) { hlen = pre[8] | (size_t)pre[9] << 8; off = 10; }
  else if ((pre[6] == 2 || pre[6] == 3) && got == 12) {
    hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    off = 12;
  } else { dkb_err_set(err, DKB_INPUT, path, NULL, "unsupported .npy format version %u", pre[6]); goto done; }
  if (hlen > n - off || hlen > HEADER_MAX) { dkb_err_set(err, DKB_INPUT, path, NULL, "header runs past the end of the file"); goto done; }
  head = malloc(hlen + 1);
  if (!head || fseek(f, (long)off, SEEK_SET) || fread(head, 1, hlen, f) != hlen) {
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot read the header");
    goto done;
  }
  char why[256];
  if (parse_header(head, hlen, a, why, sizeof why)) { dkb_err_set(err, DKB_INPUT, path, NULL, "%s", why); goto done; }
  size_t count = 1;
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] && count > SIZE_MAX / (size_t)a->shape[i]) { dkb_err_set(err, DKB_INPUT, path, NULL, "shape overflows"); goto done; }
    count *= (size_t)a->shape[i];
  }
  size_t data = off + hlen;
  if (count > (n - data) / a->itemsize || count * a->itemsize != n - data) {
    dkb_err_set(err, DKB_INPUT, path, NULL, "holds %zu data bytes, shape x itemsize needs %zu", n - data, count * a->itemsize);
    goto done;
  }
  a->count = count;
  a->data = malloc(count * a->itemsize > 0 ? count * a->itemsize : 1);
  if (!a->data) { dkb_err_set(err, DKB_ENV, path, NULL, "out of memory: cannot allocate %zu bytes", count * a->itemsize); goto done; }
  if (fread(a->data, 1, count * a->itemsize, f) != count * a->itemsize) {
    dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot read the data: %s", strerror(errno));
    goto done;
  }
  rc = 0;
done:
  free(head);
  fclose(f);
  if (rc) npy_array_release(a);
  return rc;
}

void npy_array_release(struct npy_array *a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}
