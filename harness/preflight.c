/* preflight.c - host inspection without a CUDA context (see preflight.h). Everything here reads files,
 * folders and `ldconfig -p`; nothing calls CUDA, CUPTI or NVML, and nothing is dlopen'ed. */
#include "harness/preflight.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

void preflight_opts_host(struct preflight_opts *o) {
  memset(o, 0, sizeof *o);
  o->root = "";
  o->ld_library_path = getenv("LD_LIBRARY_PATH");
  o->path_env = getenv("PATH");
  o->nvtx_injection = getenv("NVTX_INJECTION64_PATH");
  o->use_ldconfig = 1;
  o->use_linked = 1;
  o->uid = (int)geteuid();
}

/* root + path */
static void rooted(char *out, size_t n, const struct preflight_opts *o, const char *path) {
  snprintf(out, n, "%s%s", o->root ? o->root : "", path);
}

static int is_file(const struct preflight_opts *o, const char *path) {
  char full[PREFLIGHT_PATH_MAX * 2];
  struct stat st;
  rooted(full, sizeof full, o, path);
  return stat(full, &st) == 0 && S_ISREG(st.st_mode);
}

/* First line (or whole small file) of root+path into out; -1 when unreadable. */
static int read_text(const struct preflight_opts *o, const char *path, char *out, size_t n) {
  char full[PREFLIGHT_PATH_MAX * 2];
  rooted(full, sizeof full, o, path);
  FILE *f = fopen(full, "r");
  if (!f) return -1;
  size_t k = fread(out, 1, n - 1, f);
  out[k] = '\0';
  fclose(f);
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* fn(host path, ctx) for every existing path under root that matches pattern (a host path whose
 * components may hold shell wildcards; names starting with '.' match only a literal '.'), in sorted
 * order. glob(3) does this, but glibc's (2.36) frees its list twice when an allocation fails inside it
 * (tests/failalloc.py found it): one folder at a time with fnmatch instead. */
static void match_paths(const struct preflight_opts *o, const char *done, const char *rest,
                        void (*fn)(const char *path, void *ctx), void *ctx, int depth) {
  while (*rest == '/') rest++;
  char path[PREFLIGHT_PATH_MAX], full[PREFLIGHT_PATH_MAX * 2];
  struct stat st;
  if (!*rest) {
    rooted(full, sizeof full, o, done);
    if (stat(full, &st) == 0) fn(done, ctx);
    return;
  }
  size_t n = strcspn(rest, "/");
  char comp[256];
  if (n >= sizeof comp || depth > 32) return;
  memcpy(comp, rest, n);
  comp[n] = '\0';
  if (!comp[strcspn(comp, "*?[")]) {  /* a plain name */
    if (snprintf(path, sizeof path, "%s/%s", done, comp) < (int)sizeof path) match_paths(o, path, rest + n, fn, ctx, depth + 1);
    return;
  }
  rooted(full, sizeof full, o, done[0] ? done : "/");
  DIR *d = opendir(full);
  if (!d) return;
  char (*names)[256] = NULL;
  size_t k = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strlen(e->d_name) < 256 && !fnmatch(comp, e->d_name, FNM_PERIOD)) {
      names = DKB_REALLOC(names, (k + 1) * sizeof *names);
      snprintf(names[k++], sizeof names[0], "%s", e->d_name);
    }
  closedir(d);
  qsort(names, k, sizeof *names, cmp_str);
  for (size_t i = 0; i < k; i++)
    if (snprintf(path, sizeof path, "%s/%s", done, names[i]) < (int)sizeof path) match_paths(o, path, rest + n, fn, ctx, depth + 1);
  free(names);
}

static void add_reason(struct preflight *p, int blocking, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_reason(struct preflight *p, int blocking, const char *id, const char *fmt, ...) {
  if (p->nreasons == sizeof p->reasons / sizeof p->reasons[0]) return;
  struct preflight_reason *r = &p->reasons[p->nreasons++];
  snprintf(r->id, sizeof r->id, "%s", id);
  r->blocking = blocking;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------------------------------------- */
/* Driver, GPUs, device nodes, profiling permissions.                                               */

static void inspect_driver(const struct preflight_opts *o, struct preflight *p) {
  char text[4096];
  if (read_text(o, "/proc/driver/nvidia/version", text, sizeof text)) return;
  p->driver_present = 1;
  text[strcspn(text, "\n")] = '\0';
  snprintf(p->driver_text, sizeof p->driver_text, "%.*s", (int)sizeof p->driver_text - 1, text);
  /* the first token shaped like 580.159.04 */
  for (char *t = strtok(text, " \t"); t; t = strtok(NULL, " \t")) {
    int dots = 0, ok = isdigit((unsigned char)t[0]);
    for (char *c = t; ok && *c; c++) {
      if (*c == '.') dots++;
      else if (!isdigit((unsigned char)*c)) ok = 0;
    }
    if (ok && dots >= 1) { snprintf(p->driver_version, sizeof p->driver_version, "%s", t); break; }
  }
}

static void inspect_gpus(const struct preflight_opts *o, struct preflight *p) {
  char dir[PREFLIGHT_PATH_MAX * 2];
  rooted(dir, sizeof dir, o, "/proc/driver/nvidia/gpus");
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) && p->ngpus < sizeof p->gpus / sizeof p->gpus[0]) {
    if (e->d_name[0] == '.') continue;
    struct preflight_gpu *g = &p->gpus[p->ngpus++];
    snprintf(g->bus_id, sizeof g->bus_id, "%.*s", (int)sizeof g->bus_id - 1, e->d_name);
    char info[PREFLIGHT_PATH_MAX], text[4096];
    snprintf(info, sizeof info, "/proc/driver/nvidia/gpus/%s/information", e->d_name);
    if (!read_text(o, info, text, sizeof text)) {
      char *m = strstr(text, "Model:");
      if (m) {
        m += 6;
        while (*m == ' ' || *m == '\t') m++;
        snprintf(g->model, sizeof g->model, "%.*s", (int)strcspn(m, "\n"), m);
      }
    }
  }
  if (d) closedir(d);
  qsort(p->gpus, p->ngpus, sizeof p->gpus[0], cmp_str);
  rooted(dir, sizeof dir, o, "/dev");
  d = opendir(dir);
  while (d && (e = readdir(d)) && p->ndev < sizeof p->dev_nodes / sizeof p->dev_nodes[0]) {
    if (strncmp(e->d_name, "nvidia", 6)) continue;
    snprintf(p->dev_nodes[p->ndev++], sizeof p->dev_nodes[0], "/dev/%.*s", (int)sizeof p->dev_nodes[0] - 6, e->d_name);
    const char *num = e->d_name + 6;
    int all_digits = *num != '\0';
    for (const char *c = num; *c; c++) all_digits &= isdigit((unsigned char)*c) != 0;
    p->gpu_nodes += all_digits;
  }
  if (d) closedir(d);
  qsort(p->dev_nodes, p->ndev, sizeof p->dev_nodes[0], cmp_str);
}

static void inspect_profiling(const struct preflight_opts *o, struct preflight *p) {
  char text[8192];
  p->rm_profiling_admin_only = -1;
  if (!read_text(o, "/proc/driver/nvidia/params", text, sizeof text)) {
    char *m = strstr(text, "RmProfilingAdminOnly:");
    if (m) p->rm_profiling_admin_only = atoi(m + strlen("RmProfilingAdminOnly:"));
  }
  if (!read_text(o, "/proc/sys/kernel/perf_event_paranoid", text, sizeof text)) {
    p->perf_event_paranoid_known = 1;
    p->perf_event_paranoid = atoi(text);
  }
  p->uid = o->uid;
}

/* ---------------------------------------------------------------------------------------------- */
/* Libraries: the loader's search path, searched as files.                                          */

struct search {
  char dir[64][PREFLIGHT_PATH_MAX];
  char where[64][24];
  int on_path[64];
  size_t n;
};

static int has_stubs(const char *dir) {
  return strstr(dir, "/stubs/") || (strlen(dir) >= 6 && !strcmp(dir + strlen(dir) - 6, "/stubs"));
}

static void search_add(struct search *s, const char *dir, const char *where, int on_path) {
  if (!dir[0] || has_stubs(dir) || s->n == sizeof s->dir / sizeof s->dir[0]) return;
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->dir[i], dir)) return;
  snprintf(s->dir[s->n], sizeof s->dir[0], "%s", dir);
  snprintf(s->where[s->n], sizeof s->where[0], "%s", where);
  s->on_path[s->n++] = on_path;
}

static void read_ld_conf(const struct preflight_opts *o, const char *conf, struct search *s, int depth);
struct ld_include {
  const struct preflight_opts *o;
  struct search *s;
  int depth;
};
static void read_included(const char *path, void *ctx) {
  struct ld_include *i = ctx;
  read_ld_conf(i->o, path, i->s, i->depth);
}
static void add_toolkit(const char *path, void *ctx) { search_add(ctx, path, "cuda_toolkit", 0); }

/* Folders of /etc/ld.so.conf, following include globs (relative ones from /etc), depth-limited. */
static void read_ld_conf(const struct preflight_opts *o, const char *conf, struct search *s, int depth) {
  char full[PREFLIGHT_PATH_MAX * 2], line[PREFLIGHT_PATH_MAX];
  rooted(full, sizeof full, o, conf);
  FILE *f = fopen(full, "r");
  if (!f || depth > 4) { if (f) fclose(f); return; }
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "#\n")] = '\0';
    char *t = line;
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) t[--n] = '\0';
    if (!*t || !strncmp(t, "hwcap", 5)) continue;
    if (!strncmp(t, "include", 7) && (t[7] == ' ' || t[7] == '\t')) {
      char *pat = t + 8;
      while (*pat == ' ' || *pat == '\t') pat++;
      char rel[PREFLIGHT_PATH_MAX];
      snprintf(rel, sizeof rel, "%s%s", *pat == '/' ? "" : "/etc/", pat);
      struct ld_include inc = {o, s, depth + 1};
      match_paths(o, "", rel, read_included, &inc, 0);
      continue;
    }
    search_add(s, t, "ld.so.conf", 1);
  }
  fclose(f);
}

static void build_search(const struct preflight_opts *o, const struct preflight *p, struct search *s) {
  char buf[8192];
  if (o->ld_library_path) {
    snprintf(buf, sizeof buf, "%s", o->ld_library_path);
    for (char *save = NULL, *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save))
      search_add(s, t, "LD_LIBRARY_PATH", 1);
  }
  read_ld_conf(o, "/etc/ld.so.conf", s, 0);
  const char *triplet = !strcmp(p->machine, "aarch64") ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  char d[128];
  snprintf(d, sizeof d, "/lib/%s", triplet);
  search_add(s, d, "default", 1);
  snprintf(d, sizeof d, "/usr/lib/%s", triplet);
  search_add(s, d, "default", 1);
  search_add(s, "/lib64", "default", 1);
  search_add(s, "/usr/lib64", "default", 1);
  search_add(s, "/lib", "default", 1);
  search_add(s, "/usr/lib", "default", 1);
  /* not searched by the loader unless listed above: reported so that a misconfigured path is visible */
  search_add(s, "/usr/local/nvidia/lib64", "nvidia", 0);
  search_add(s, "/usr/local/nvidia/lib", "nvidia", 0);
  match_paths(o, "", "/usr/local/cuda*/lib64", add_toolkit, s, 0);
}

/* 1 when file name `name` is the library: exact soname, or "libX.so.*" matching any version. */
static int soname_match(const char *pattern, const char *name) {
  size_t n = strlen(pattern);
  if (n >= 2 && !strcmp(pattern + n - 2, ".*")) return !strncmp(name, pattern, n - 1) && name[n - 1] != '\0';
  return !strcmp(name, pattern);
}

static void lib_set(struct preflight_lib *l, const char *path, const char *where, int on_path) {
  l->found = 1;
  l->on_loader_path = on_path;
  snprintf(l->path, sizeof l->path, "%.*s", (int)sizeof l->path - 1, path);
  snprintf(l->where, sizeof l->where, "%s", where);
}

/* The loader cache as `ldconfig -p` prints it: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1". */
static void search_ldconfig(const struct preflight *p, struct preflight_lib *l) {
  static const char *const tools[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig", NULL};
  const char *arch = !strcmp(p->machine, "x86_64") ? "x86-64" : !strcmp(p->machine, "aarch64") ? "AArch64" : NULL;
  for (int t = 0; tools[t]; t++) {
    if (access(tools[t], X_OK)) continue;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "%s -p 2>/dev/null", tools[t]);
    FILE *f = popen(cmd, "r");
    if (!f) return;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
      char name[512], flags[256], path[PREFLIGHT_PATH_MAX];
      if (sscanf(line, " %511s (%255[^)]) => %1023s", name, flags, path) != 3) continue;
      if (!soname_match(l->soname, name) || has_stubs(path)) continue;
      if (arch && !strstr(flags, arch)) continue;
      if (!l->found) lib_set(l, path, "ld.so.cache", 1);
    }
    pclose(f);
    return;
  }
}

/* Searches the folders with the given on_path flag (and `where`, unless NULL) in order. */
static void search_dirs(const struct preflight_opts *o, const struct search *s, struct preflight_lib *l, int on_path,
                        const char *where) {
  for (size_t i = 0; i < s->n && !l->found; i++) {
    if (s->on_path[i] != on_path || (where && strcmp(s->where[i], where))) continue;
    char full[PREFLIGHT_PATH_MAX * 2];
    rooted(full, sizeof full, o, s->dir[i]);
    DIR *d = opendir(full);
    struct dirent *e;
    char best[256] = "";
    while (d && (e = readdir(d)))
      if (soname_match(l->soname, e->d_name) && (!best[0] || strcmp(e->d_name, best) < 0))
        snprintf(best, sizeof best, "%s", e->d_name);
    if (d) closedir(d);
    if (best[0]) {
      char path[PREFLIGHT_PATH_MAX * 2];
      snprintf(path, sizeof path, "%s/%s", s->dir[i], best);
      lib_set(l, path, s->where[i], on_path);
    }
  }
}

struct linked_ctx {
  struct preflight_lib *libs[2];
};

static int linked_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct linked_ctx *c = data;
  const char *name = info->dlpi_name;
  if (!name || !*name) return 0;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  for (int i = 0; i < 2; i++)
    if (!c->libs[i]->found && soname_match(c->libs[i]->soname, base)) {
      char real[PREFLIGHT_PATH_MAX];
      lib_set(c->libs[i], realpath(name, real) ? real : name, "linked", 1);
    }
  return 0;
}

static void inspect_libraries(const struct preflight_opts *o, struct preflight *p) {
  p->libcuda.soname = "libcuda.so.1";
  p->libcudart.soname = "libcudart.so.*";
  p->libcupti.soname = "libcupti.so.*";
  p->libnvml.soname = "libnvidia-ml.so.1";
  if (o->use_linked) {
    /* already mapped by the executable (DT_NEEDED): listing them loads nothing */
    struct linked_ctx c = {{&p->libcudart, &p->libcupti}};
    dl_iterate_phdr(linked_cb, &c);
  }
  struct search s;
  memset(&s, 0, sizeof s);
  build_search(o, p, &s);
  struct preflight_lib *libs[] = {&p->libcuda, &p->libcudart, &p->libcupti, &p->libnvml};
  for (int i = 0; i < 4; i++) {
    struct preflight_lib *l = libs[i];
    /* the loader's order: LD_LIBRARY_PATH, its cache, the default folders; then off-path folders */
    search_dirs(o, &s, l, 1, "LD_LIBRARY_PATH");
    if (!l->found && o->use_ldconfig) search_ldconfig(p, l);
    search_dirs(o, &s, l, 1, NULL);
    search_dirs(o, &s, l, 0, NULL);
  }
}

static void inspect_tools(const struct preflight_opts *o, struct preflight *p) {
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", o->path_env ? o->path_env : "");
  for (char *save = NULL, *t = strtok_r(buf, ":", &save); t && !p->nvidia_smi; t = strtok_r(NULL, ":", &save)) {
    char path[PREFLIGHT_PATH_MAX], full[PREFLIGHT_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/nvidia-smi", t);
    rooted(full, sizeof full, o, path);
    if (is_file(o, path) && access(full, X_OK) == 0) {
      p->nvidia_smi = 1;
      snprintf(p->nvidia_smi_path, sizeof p->nvidia_smi_path, "%s", path);
    }
  }
  if (o->nvtx_injection) {
    p->nvtx_set = 1;
    snprintf(p->nvtx, sizeof p->nvtx, "%s", o->nvtx_injection);
    p->nvtx_exists = is_file(o, o->nvtx_injection);
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* The mapping to a terminal state and a level.                                                     */

static void grade(struct preflight *p) {
  int cuda = 1, gpu = 1, profiler = 1;
  if (!p->driver_present) {
    cuda = 0;
    add_reason(p, 1, "nvidia_driver_not_loaded",
               "/proc/driver/nvidia/version is absent: no NVIDIA kernel driver, so the CUDA runtime cannot initialize");
  }
  if (!p->libcuda.found) {
    cuda = 0;
    add_reason(p, 1, "libcuda_not_found", "libcuda.so.1 (the driver library the CUDA runtime loads) is not on the loader path or in the usual folders (stubs excluded)");
  } else if (!p->libcuda.on_loader_path) {
    cuda = 0;
    add_reason(p, 1, "libcuda_off_loader_path", "libcuda.so.1 is at %s but that folder is not on the loader path: add it to LD_LIBRARY_PATH", p->libcuda.path);
  }
  if (cuda && !p->ngpus && !p->gpu_nodes) {
    gpu = 0;
    add_reason(p, 1, "no_gpu_device", "the driver lists no GPU in /proc/driver/nvidia/gpus and there is no /dev/nvidia<N> node");
  } else if (cuda && p->ngpus && !p->gpu_nodes) {
    add_reason(p, 0, "device_nodes_missing", "the driver lists %zu GPU%s but /dev has no /dev/nvidia<N> node yet (nvidia-modprobe may create it on first use)",
               p->ngpus, p->ngpus == 1 ? "" : "s");
  }
  if (!p->libcupti.found) {
    profiler = 0;
    add_reason(p, 1, "libcupti_not_found", "no libcupti.so.*: kernel execution cannot be traced (level 5)");
  }
  if (p->nvtx_set && !p->nvtx_exists) {
    profiler = 0;
    add_reason(p, 1, "nvtx_injection_missing", "NVTX_INJECTION64_PATH names %s, which does not exist: NVTX ranges cannot reach a profiler", p->nvtx);
  } else if (p->nvtx_set && !strstr(p->nvtx, "libcupti")) {
    add_reason(p, 0, "nvtx_injection_foreign", "NVTX_INJECTION64_PATH is set to %s (another tool's injection): dkb keeps it, and CUPTI may not see the call's NVTX range", p->nvtx);
  }
  if (!p->libnvml.found || !p->libnvml.on_loader_path)
    add_reason(p, 0, "nvml_unavailable", "libnvidia-ml.so.1 is not on the loader path: clocks and throttle reasons will not be recorded (optional at level 6)");
  if (p->rm_profiling_admin_only == 1 && p->uid != 0)
    add_reason(p, 0, "counters_restricted", "RmProfilingAdminOnly is 1 and dkb is not root: profiler counters will be unavailable (optional at level 6)");
  if (!p->nvidia_smi) add_reason(p, 0, "nvidia_smi_missing", "nvidia-smi is not on PATH (informational: dkb does not need it)");
  if (!cuda) { p->terminal = "cuda_runtime_unavailable"; p->max_level = 2; }
  else if (!gpu) { p->terminal = "no_gpu"; p->max_level = 2; }
  else if (!profiler) { p->terminal = "profiler_unavailable"; p->max_level = 4; }
  else { p->terminal = "ready"; p->max_level = 6; }
}

int preflight_inspect(const struct preflight_opts *o, struct preflight *p, struct dkb_err *err) {
  (void)err;
  memset(p, 0, sizeof *p);
  struct utsname u;
  if (uname(&u) == 0) {
    snprintf(p->sysname, sizeof p->sysname, "%.*s", (int)sizeof p->sysname - 1, u.sysname);
    snprintf(p->release, sizeof p->release, "%s", u.release);
    snprintf(p->machine, sizeof p->machine, "%.*s", (int)sizeof p->machine - 1, u.machine);
    snprintf(p->hostname, sizeof p->hostname, "%s", u.nodename);
  }
  inspect_driver(o, p);
  inspect_gpus(o, p);
  inspect_profiling(o, p);
  inspect_libraries(o, p);
  inspect_tools(o, p);
  grade(p);
  return 0;
}

static json_t *str_or_null(int have, const char *s) { return have ? json_string(s) : json_null(); }

static json_t *lib_json(const struct preflight_lib *l) {
  return json_pack("{s:s,s:b,s:b,s:o,s:o}", "soname", l->soname, "found", l->found, "on_loader_path", l->on_loader_path,
                   "path", str_or_null(l->found, l->path), "where", str_or_null(l->found, l->where));
}

json_t *preflight_to_json(const struct preflight *p) {
  json_t *gpus = json_array(), *nodes = json_array(), *reasons = json_array();
  for (size_t i = 0; i < p->ngpus; i++)
    json_array_append_new(gpus, json_pack("{s:s,s:s}", "bus_id", p->gpus[i].bus_id, "model", p->gpus[i].model));
  for (size_t i = 0; i < p->ndev; i++) json_array_append_new(nodes, json_string(p->dev_nodes[i]));
  for (size_t i = 0; i < p->nreasons; i++)
    json_array_append_new(reasons, json_pack("{s:s,s:s,s:b}", "id", p->reasons[i].id, "detail", p->reasons[i].detail,
                                             "blocking", p->reasons[i].blocking));
  return json_pack(
      "{s:{s:s,s:s,s:s,s:s},s:{s:b,s:o,s:o},s:o,s:o,s:{s:o,s:o,s:o,s:o},s:{s:b,s:o},s:{s:b,s:o,s:o},"
      "s:{s:o,s:o,s:i},s:s,s:i,s:o}",
      "host", "os", p->sysname, "release", p->release, "machine", p->machine, "hostname", p->hostname,
      "driver", "present", p->driver_present, "version", str_or_null(p->driver_version[0], p->driver_version),
      "text", str_or_null(p->driver_present, p->driver_text),
      "gpus", gpus, "device_nodes", nodes,
      "libraries", "libcuda", lib_json(&p->libcuda), "libcudart", lib_json(&p->libcudart), "libcupti",
      lib_json(&p->libcupti), "libnvidia_ml", lib_json(&p->libnvml),
      "nvidia_smi", "found", p->nvidia_smi, "path", str_or_null(p->nvidia_smi, p->nvidia_smi_path),
      "nvtx_injection64_path", "set", p->nvtx_set, "value", str_or_null(p->nvtx_set, p->nvtx), "exists",
      p->nvtx_set ? json_boolean(p->nvtx_exists) : json_null(),
      "profiling", "rm_profiling_admin_only",
      p->rm_profiling_admin_only >= 0 ? json_integer(p->rm_profiling_admin_only) : json_null(), "perf_event_paranoid",
      p->perf_event_paranoid_known ? json_integer(p->perf_event_paranoid) : json_null(), "effective_uid", p->uid,
      "terminal", p->terminal, "max_level", p->max_level, "reasons", reasons);
}
