/* preflight.c - `dkb preflight`: which evidence levels can this host produce? Reads the host without a
 * CUDA context (harness/preflight.h) and prints the terminal state, the highest level and the reasons. */
#include <getopt.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "evidence/bundle.h"
#include "harness/preflight.h"

static void print_lib(const char *label, const struct preflight_lib *l) {
  if (!l->found) printf("  %-22s not found\n", label);
  else printf("  %-22s %s (%s%s)\n", label, l->path, l->where, l->on_loader_path ? "" : ", not on the loader path");
}

static void print_human(const struct preflight *p) {
  printf("dkb preflight: %s, evidence up to level %d\n", p->terminal, p->max_level);
  printf("  %-22s %s %s %s\n", "os", p->sysname, p->release, p->machine);
  if (p->driver_present) printf("  %-22s %s\n", "nvidia driver", p->driver_version[0] ? p->driver_version : p->driver_text);
  else printf("  %-22s not loaded (no /proc/driver/nvidia/version)\n", "nvidia driver");
  if (!p->ngpus) printf("  %-22s none listed\n", "gpus");
  for (size_t i = 0; i < p->ngpus; i++) printf("  %-22s %s %s\n", i ? "" : "gpus", p->gpus[i].bus_id, p->gpus[i].model);
  if (!p->ndev) printf("  %-22s none\n", "device nodes");
  for (size_t i = 0; i < p->ndev; i++) printf("  %-22s %s\n", i ? "" : "device nodes", p->dev_nodes[i]);
  print_lib("libcuda.so.1", &p->libcuda);
  print_lib("libcudart", &p->libcudart);
  print_lib("libcupti", &p->libcupti);
  print_lib("libnvidia-ml.so.1", &p->libnvml);
  printf("  %-22s %s\n", "nvidia-smi", p->nvidia_smi ? p->nvidia_smi_path : "not on PATH");
  printf("  %-22s %s%s\n", "NVTX_INJECTION64_PATH", p->nvtx_set ? p->nvtx : "unset",
         p->nvtx_set && !p->nvtx_exists ? " (missing)" : "");
  char admin[16] = "unknown", paranoid[16] = "unknown";
  if (p->rm_profiling_admin_only >= 0) snprintf(admin, sizeof admin, "%d", p->rm_profiling_admin_only);
  if (p->perf_event_paranoid_known) snprintf(paranoid, sizeof paranoid, "%d", p->perf_event_paranoid);
  printf("  %-22s RmProfilingAdminOnly %s, perf_event_paranoid %s, uid %d\n", "profiling", admin, paranoid, p->uid);
  if (p->nreasons) printf("reasons:\n");
  for (size_t i = 0; i < p->nreasons; i++)
    printf("  %s %s: %s\n", p->reasons[i].blocking ? "blocking" : "note    ", p->reasons[i].id, p->reasons[i].detail);
}

/* usage: dkb preflight [--json] [--require-level N] */
int cmd_preflight(int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'}, {"require-level", required_argument, NULL, 'r'}, {NULL, 0, NULL, 0}};
  int as_json = 0, require = -1, c;
  while ((c = cmd_getopt(argc, argv, opts, "preflight")) != -1) {
    if (c == '?') return DKB_USAGE;
    if (c == 'j') as_json = 1;
    if (c == 'r' && cmd_parse_level("preflight", "--require-level", cmd_optarg, &require)) return DKB_USAGE;
  }
  if (cmd_optind < argc) return cmd_usage_error("preflight", "unexpected argument '%s'", argv[cmd_optind]);
  struct preflight_opts o;
  struct preflight p;
  struct dkb_err err;
  dkb_err_clear(&err);
  preflight_opts_host(&o);
  if (preflight_inspect(&o, &p, &err)) return cmd_report_err(&err);
  int rc = DKB_OK;
  if (as_json) {
    json_t *doc = preflight_to_json(&p);
    json_object_set_new(doc, "schema", json_string("dkb.preflight/v1"));
    /* argv - 1 is main()'s argv: meta.argv records the whole command line */
    json_object_set_new(doc, "meta", bundle_meta_new(argc + 1, argv - 1));
    json_object_set_new(doc, "required_level", require >= 0 ? json_integer(require) : json_null());
    rc = cmd_print_json(doc);
  } else {
    print_human(&p);
  }
  if (rc == DKB_OK && require > p.max_level) {
    fflush(stdout);
    fprintf(stderr, "dkb: error: this host can produce evidence up to level %d (%s), level %d was required\n",
            p.max_level, p.terminal, require);
    rc = DKB_ENV;
  }
  return rc;
}
