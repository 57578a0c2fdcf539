/* trace_dumps.c - the dumps a trace searches, matched to call ranges by call key digest (see trace_dumps.h). */
#include "harness/trace_dumps.h"
#include "harness/check.h"
#include "harness/dump_read.h"
#include "lib/err.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void add_dump(struct trace_dumps *t, const char *dir) {
  struct dump_call d;
  struct dkb_err e;
  char sha[65] = "";
  if (dump_read_index(dir, &d, &e) == 0) {
    memcpy(sha, d.call_key_sha256, 65);
    dump_call_release(&d);
  } else {
    t->malformed = 1; /* no call key to match on: kept so the summary can say it */
  }
  t->d = DKB_REALLOC(t->d, (t->n + 1) * sizeof *t->d);
  t->d[t->n].dir = DKB_STRDUP(dir);
  memcpy(t->d[t->n].sha, sha, 65);
  t->n++;
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void trace_dumps_find(struct trace_dumps *t, const char *dir) {
  char idx[4200];
  struct stat st;
  snprintf(idx, sizeof idx, "%s/index.json", dir);
  if (stat(idx, &st) == 0) { add_dump(t, dir); return; }
  DIR *d = opendir(dir);
  if (!d) return;
  char **sub = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s/index.json", dir, e->d_name);
    if (stat(p, &st) == 0) {
      sub = DKB_REALLOC(sub, (n + 1) * sizeof *sub);
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      sub[n++] = DKB_STRDUP(p);
    }
  }
  closedir(d);
  if (n) qsort(sub, n, sizeof *sub, cmp_cstr);
  for (size_t i = 0; i < n; i++) { add_dump(t, sub[i]); free(sub[i]); }
  free(sub);
}

json_t *trace_dumps_checked(struct trace_dumps *t, const char *sha) {
  json_t *dumps = json_array();
  for (size_t i = 0; sha && i < t->n; i++) {
    if (strcmp(t->d[i].sha, sha)) continue;
    json_t *rep = NULL;
    struct check_summary s;
    struct dkb_err e;
    dkb_err_clear(&e);
    if (check_dump(t->d[i].dir, &rep, &s, &e)) {
      char msg[2048];
      dkb_err_format(&e, msg, sizeof msg);
      t->malformed = 1;
      json_array_append_new(dumps, json_pack("{s:s,s:s}", "dir", t->d[i].dir, "error", msg));
      continue;
    }
    if (!s.passed) t->failed = 1;
    json_array_append_new(dumps, json_pack("{s:s,s:s,s:b,s:o}", "dir", t->d[i].dir, "call_key_sha256",
                                           s.call_key_sha256, "passed", s.passed, "report", rep));
  }
  return json_pack("{s:o,s:s}", "dumps", dumps, "limit",
                   "a dump declares the same call key; dkb cannot prove its output is the output of the kernels observed in the range");
}

json_t *trace_dumps_json(const struct trace_dumps *t) {
  json_t *dumps = json_array();
  for (size_t i = 0; i < t->n; i++)
    json_array_append_new(dumps, json_pack("{s:s,s:o}", "dir", t->d[i].dir, "call_key_sha256",
                                           t->d[i].sha[0] ? json_string(t->d[i].sha) : json_null()));
  return dumps;
}

void trace_dumps_release(struct trace_dumps *t) {
  for (size_t i = 0; i < t->n; i++) free(t->d[i].dir);
  free(t->d);
  memset(t, 0, sizeof *t);
}
