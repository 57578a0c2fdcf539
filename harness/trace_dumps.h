/* trace_dumps.h - the dumps `dkb trace` searches (--dump DIR, and its own dumps/; harness/trace_bundle.h): each dump folder, or
 * every one directly in a folder (name order), read for its call key digest; a call range declaring the
 * same digest gets each such dump checked (harness/check.h) and its report kept. */
#ifndef DKB_TRACE_DUMPS_H
#define DKB_TRACE_DUMPS_H

#include <stddef.h>

#include <jansson.h>

struct trace_dump {
  char *dir;
  char sha[65];  /* its call key digest; "" when its index could not be read */
};

struct trace_dumps {
  struct trace_dump *d;
  size_t n;
  int malformed;  /* a dump's index, or a matching dump, could not be read */
  int failed;     /* a matching dump failed its check */
};

/* Adds DIR when it is a dump, else every dump directly in it; a folder with none adds nothing. */
void trace_dumps_find(struct trace_dumps *t, const char *dir);
/* The bundle's "checked": every dump of call key digest `sha` (NULL: none) checked. */
json_t *trace_dumps_checked(struct trace_dumps *t, const char *sha);
/* The summary's "dumps": [{dir, call_key_sha256}]. */
json_t *trace_dumps_json(const struct trace_dumps *t);
void trace_dumps_release(struct trace_dumps *t);

#endif
