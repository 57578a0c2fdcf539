/* sha256.h - SHA-256 through OpenSSL 3 (libcrypto), as lower-case hex. */
#ifndef DKB_SHA256_H
#define DKB_SHA256_H

#include <stddef.h>

#include "lib/err.h"

int dkb_sha256_buf(const void *data, size_t n, char hex[65], struct dkb_err *err);
/* Streams the file in 64 KiB chunks; equals `sha256sum`. */
int dkb_sha256_file(const char *path, char hex[65], struct dkb_err *err);
/* 1 when s is exactly 64 lower-case hex digits. */
int dkb_is_sha256_hex(const char *s);

#endif
