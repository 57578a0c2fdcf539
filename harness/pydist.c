/* pydist.c - loaded files to installed Python distributions (see pydist.h). */
#include "harness/pydist.h"
#include "lib/buf.h"
#include "lib/err.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
  char *rel;    /* path relative to the site-packages folder, as RECORD writes it */
  char *hash;   /* "sha256=..." or "" */
  size_t dist;  /* index into root->dists */
};
struct dist { char name[128], version[64], dir[4400]; };
struct root {
  char path[4096];
  struct dist *dists;
  size_t ndists;
  struct rec *recs;  /* sorted by rel */
  size_t nrecs;
};
struct pydist {
  struct root *roots;
  size_t n;
};

struct pydist *pydist_new(void) { return DKB_CALLOC(1, sizeof(struct pydist)); }

void pydist_free(struct pydist *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) {
    for (size_t k = 0; k < d->roots[i].nrecs; k++) { free(d->roots[i].recs[k].rel); free(d->roots[i].recs[k].hash); }
    free(d->roots[i].recs);
    free(d->roots[i].dists);
  }
  free(d->roots);
  free(d);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct dkb_buf b;
  dkb_buf_init(&b);
  int bad = dkb_buf_add_file(&b, f);
  fclose(f);
  if (bad || !b.p) { dkb_buf_release(&b); return NULL; }
  return b.p;
}

/* "Name: x" and "Version: y" from the header of a METADATA file (RFC 822 style, ends at a blank line). */
static void read_metadata(const char *dir, struct dist *ds) {
  char path[4500];
  snprintf(path, sizeof path, "%s/METADATA", dir);
  char *t = slurp(path);
  for (char *line = t, *next; line && *line && *line != '\n'; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    else next = line + strlen(line);
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[--n] = '\0';
    if (!strncmp(line, "Name: ", 6) && !ds->name[0]) snprintf(ds->name, sizeof ds->name, "%s", line + 6);
    if (!strncmp(line, "Version: ", 9) && !ds->version[0]) snprintf(ds->version, sizeof ds->version, "%s", line + 9);
  }
  free(t);
}

/* One CSV field at *s (RFC 4180 quoting); advances past its comma. malloc'ed. */
static char *csv_field(const char **s) {
  const char *p = *s;
  struct dkb_buf b;
  dkb_buf_init(&b);
  if (*p == '"') {
    for (p++; *p; p++) {
      if (*p == '"' && p[1] == '"') { dkb_buf_addc(&b, '"'); p++; }
      else if (*p == '"') { p++; break; }
      else dkb_buf_addc(&b, *p);
    }
  } else {
    while (*p && *p != ',') dkb_buf_addc(&b, *p++);
  }
  if (*p == ',') p++;
  *s = p;
  if (!b.p) dkb_buf_adds(&b, "");
  return b.p;
}

static int cmp_rec(const void *a, const void *b) { return strcmp(((const struct rec *)a)->rel, ((const struct rec *)b)->rel); }

static void read_root(struct root *r) {
  DIR *d = opendir(r->path);
  if (!d) return;
  size_t capd = 0, capr = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 11 || strcmp(e->d_name + n - 10, ".dist-info")) continue;
    if (r->ndists == capd) r->dists = DKB_REALLOC(r->dists, (capd = capd ? 2 * capd : 32) * sizeof *r->dists);
    struct dist *ds = &r->dists[r->ndists];
    memset(ds, 0, sizeof *ds);
    snprintf(ds->dir, sizeof ds->dir, "%s/%s", r->path, e->d_name);
    read_metadata(ds->dir, ds);
    char path[4500];
    snprintf(path, sizeof path, "%s/RECORD", ds->dir);
    char *t = slurp(path);
    for (char *line = t, *next; line && *line; line = next) {
      next = strchr(line, '\n');
      if (next) *next++ = '\0';
      else next = line + strlen(line);
      size_t len = strlen(line);
      if (len && line[len - 1] == '\r') line[--len] = '\0';
      if (!len) continue;
      const char *s = line;
      char *rel = csv_field(&s), *hash = csv_field(&s);
      if (r->nrecs == capr) r->recs = DKB_REALLOC(r->recs, (capr = capr ? 2 * capr : 1024) * sizeof *r->recs);
      r->recs[r->nrecs++] = (struct rec){rel, hash, r->ndists};
    }
    free(t);
    r->ndists++;
  }
  closedir(d);
  if (r->nrecs) qsort(r->recs, r->nrecs, sizeof *r->recs, cmp_rec);
}

/* The site-packages (or dist-packages) folder path lies in, or 0. */
static int root_of(const char *path, char out[4096], const char **rel) {
  const char *best = NULL;
  for (const char *m = path; (m = strstr(m, "-packages/")); m++) {
    const char *start = m;
    while (start > path && start[-1] != '/') start--;
    size_t len = (size_t)(m - start) + 9;
    if ((len == 13 && !strncmp(start, "site-packages", 13)) || (len == 13 && !strncmp(start, "dist-packages", 13))) best = m + 9;
  }
  if (!best || (size_t)(best - path) >= 4096) return 0;
  memcpy(out, path, (size_t)(best - path));
  out[best - path] = '\0';
  *rel = best + 1;
  return 1;
}

void pydist_record_hash(const char sha256[65], char out[52]) {
  static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  unsigned char raw[32];
  for (int i = 0; i < 32; i++) {
    unsigned hi = (unsigned)(sha256[2 * i] <= '9' ? sha256[2 * i] - '0' : sha256[2 * i] - 'a' + 10);
    unsigned lo = (unsigned)(sha256[2 * i + 1] <= '9' ? sha256[2 * i + 1] - '0' : sha256[2 * i + 1] - 'a' + 10);
    raw[i] = (unsigned char)(hi << 4 | lo);
  }
  memcpy(out, "sha256=", 7);
  size_t k = 7;
  for (int i = 0; i < 32; i += 3) {
    unsigned v = (unsigned)raw[i] << 16 | (i + 1 < 32 ? (unsigned)raw[i + 1] << 8 : 0) | (i + 2 < 32 ? raw[i + 2] : 0);
    int chars = i + 2 < 32 ? 4 : i + 1 < 32 ? 3 : 2;
    for (int c = 0; c < chars; c++) out[k++] = B64[(v >> (18 - 6 * c)) & 63];
  }
  out[k] = '\0';
}

int pydist_lookup(struct pydist *d, const char *path, const char sha256[65], struct pydist_match *m) {
  char rootp[4096];
  const char *rel;
  if (!root_of(path, rootp, &rel)) return 0;
  struct root *r = NULL;
  for (size_t i = 0; i < d->n && !r; i++)
    if (!strcmp(d->roots[i].path, rootp)) r = &d->roots[i];
  if (!r) {
    d->roots = DKB_REALLOC(d->roots, (d->n + 1) * sizeof *d->roots);
    r = &d->roots[d->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", rootp);
    read_root(r);
  }
  struct rec key = {(char *)rel, NULL, 0};
  const struct rec *hit = r->nrecs ? bsearch(&key, r->recs, r->nrecs, sizeof *r->recs, cmp_rec) : NULL;
  if (!hit) return 0;
  const struct dist *ds = &r->dists[hit->dist];
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", ds->name);
  snprintf(m->version, sizeof m->version, "%s", ds->version);
  snprintf(m->dist_info, sizeof m->dist_info, "%s", ds->dir);
  snprintf(m->record_hash, sizeof m->record_hash, "%s", hit->hash);
  if (strncmp(hit->hash, "sha256=", 7)) {
    m->record_match = -1;
  } else {
    char mine[52];
    pydist_record_hash(sha256, mine);
    m->record_match = !strcmp(mine, hit->hash);
  }
  return 1;
}
