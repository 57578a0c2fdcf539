/* sha256.c - SHA-256 via OpenSSL EVP (see sha256.h). */
#include "lib/sha256.h"
#include "lib/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

struct hasher {
  EVP_MD *md;
  EVP_MD_CTX *ctx;
};

static int hasher_init(struct hasher *h) {
  h->md = EVP_MD_fetch(NULL, "SHA2-256", NULL);
  h->ctx = EVP_MD_CTX_new();
  return h->md && h->ctx && EVP_DigestInit_ex2(h->ctx, h->md, NULL) ? 0 : -1;
}

static int hasher_final(struct hasher *h, char hex[65]) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned dl = 0;
  int ok = EVP_DigestFinal_ex(h->ctx, d, &dl) && dl == 32;
  for (unsigned i = 0; ok && i < dl; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  return ok ? 0 : -1;
}

static void hasher_release(struct hasher *h) {
  EVP_MD_CTX_free(h->ctx);
  EVP_MD_free(h->md);
}

int dkb_sha256_buf(const void *data, size_t n, char hex[65], struct dkb_err *err) {
  struct hasher h;
  int ok = hasher_init(&h) == 0 && EVP_DigestUpdate(h.ctx, data, n) && hasher_final(&h, hex) == 0;
  hasher_release(&h);
  return ok ? 0 : dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "sha-256 failed in libcrypto");
}

int dkb_sha256_file(const char *path, char hex[65], struct dkb_err *err) {
  const char *why = NULL;
  FILE *f = dkb_open_regular(path, &why);
  if (!f) return dkb_err_set(err, DKB_INPUT, path, NULL, "cannot open: %s", why);
  static _Thread_local unsigned char chunk[1 << 16];
  struct hasher h;
  int ok = hasher_init(&h) == 0;
  size_t k;
  while (ok && (k = fread(chunk, 1, sizeof chunk, f)) > 0) ok = EVP_DigestUpdate(h.ctx, chunk, k);
  int read_err = ferror(f);
  ok = ok && !read_err && hasher_final(&h, hex) == 0;
  hasher_release(&h);
  fclose(f);
  if (read_err) return dkb_err_set(err, DKB_INPUT, path, NULL, "read error");
  return ok ? 0 : dkb_err_set(err, DKB_INTERNAL, path, NULL, "sha-256 failed in libcrypto");
}

int dkb_is_sha256_hex(const char *s) {
  if (!s || strlen(s) != 64) return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}
