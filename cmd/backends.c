/* backends.c - `dkb backends`: every backend dkb can run here, its own and those of loaded plugins
 * (harness/backends.h), with what it admits, its version and where it comes from. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "harness/backends.h"

static void print_human(const struct backend_set *s) {
  printf("dkb backends: %zu (priority order decides auto selection)\n", s->n);
  size_t order[DISPATCH_MAX_BACKENDS];
  backend_set_priority_order(s, order);
  for (size_t i = 0; i < s->n; i++) {  /* as auto considers them: the first eligible one wins */
    const struct backend_info *b = &s->v[order[i]];
    printf("  %-22s priority %-4d version %s\n", b->t->name, (int)b->t->priority, b->t->version);
    if (b->t->role && *b->t->role) printf("  %-22s %s\n", "", b->t->role);
    printf("  %-22s admits: %s\n", "", b->t->admits && *b->t->admits ? b->t->admits : "(not described; see a run's admission reasons)");
    if (!b->lib) {
      printf("  %-22s source: built into dkb\n", "");
      continue;
    }
    printf("  %-22s source: plugin %s %s (ABI %u)\n", "", b->lib->table->name, b->lib->table->version,
           b->lib->table->abi_version);
    printf("  %-22s binary: %s, sha256 %s, %lld bytes\n", "", b->lib->realpath, b->lib->sha256, b->lib->bytes);
    const json_t *up = json_object_get(b->lib->manifest, "upstream");
    if (up)
      printf("  %-22s upstream: %s %s, archive %s sha256 %s\n", "", json_string_value(json_object_get(up, "package")),
             json_string_value(json_object_get(up, "version")), json_string_value(json_object_get(up, "archive")),
             json_string_value(json_object_get(up, "archive_sha256")));
  }
}

/* usage: dkb backends [--json] [--plugin PATH]... */
int cmd_backends(int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'}, {"plugin", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};
  const char *plugins[BACKENDS_MAX_PLUGINS];
  size_t nplugins = 0;
  int as_json = 0, c;
  while ((c = cmd_getopt(argc, argv, opts, "backends")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
    if (c == 'p') {
      if (nplugins == BACKENDS_MAX_PLUGINS) return cmd_usage_error("backends", "at most %d --plugin options", BACKENDS_MAX_PLUGINS);
      plugins[nplugins++] = cmd_optarg;
    }
  }
  if (cmd_optind < argc) return cmd_usage_error("backends", "unexpected argument '%s'", argv[cmd_optind]);
  struct dkb_err err;
  dkb_err_clear(&err);
  struct backend_set *s = DKB_CALLOC(1, sizeof *s);
  if (backend_set_open(s, plugins, nplugins, &err)) {
    free(s);
    return cmd_report_err(&err);
  }
  int rc = DKB_OK;
  if (as_json) {
    json_t *doc = json_pack("{s:s,s:i,s:o}", "schema", "dkb.backends/v1", "abi_version", (int)DKB_BACKEND_ABI_VERSION,
                            "backends", backend_set_to_json(s));
    rc = cmd_print_json(doc);
  } else {
    print_human(s);
  }
  backend_set_close(s);
  free(s);
  return rc;
}
