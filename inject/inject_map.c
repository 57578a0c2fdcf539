/* inject_map.c - what the program had loaded: the loader map at the first launch of each call range
 * (dl_iterate_phdr from inside the program: real path and stat identity of every mapped object; dkb
 * trace hashes the files after the program ends and checks the identity did not change), and every
 * module CUPTI reports loaded, hashed here because its bytes exist only in the program's memory
 * (cubins embedded in libraries, JIT and cuModuleLoadData images). */
#include "inject/inject.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long last_adds, last_subs;
static int have_last;

struct names {
  char **v;
  size_t n, cap;
  unsigned long long adds, subs;
  int failed;
};

static int on_object(struct dl_phdr_info *info, size_t size, void *data) {
  struct names *ns = data;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    ns->adds = info->dlpi_adds;
    ns->subs = info->dlpi_subs;
  }
  const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
  if (!strchr(name, '/')) return 0; /* the vDSO has no file */
  if (ns->n == ns->cap) {
    size_t cap = ns->cap ? 2 * ns->cap : 128;
    char **v = realloc(ns->v, cap * sizeof *v);
    if (!v) { ns->failed = 1; return 1; }
    ns->v = v;
    ns->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) { ns->failed = 1; return 1; }
  ns->v[ns->n++] = copy;
  return 0;
}

void map_snapshot(uint64_t range) {
  struct names ns = {0};
  dl_iterate_phdr(on_object, &ns); /* copies names only: the loader lock is held in there */
  pthread_mutex_lock(&map_mu);
  int unchanged = have_last && !ns.failed && ns.adds == last_adds && ns.subs == last_subs;
  if (!ns.failed) { last_adds = ns.adds; last_subs = ns.subs; have_last = 1; }
  pthread_mutex_unlock(&map_mu);
  struct jl j;
  jl_begin(&j, "loadmap");
  jl_u64(&j, "range", range);
  jl_u64(&j, "adds", ns.adds);
  jl_u64(&j, "subs", ns.subs);
  if (ns.failed) jl_bool(&j, "failed", 1);
  if (unchanged) {
    jl_bool(&j, "unchanged", 1);
  } else {
    jl_key(&j, "objects");
    jl_raw(&j, "[", 1);
    for (size_t i = 0; i < ns.n; i++) {
      char real[PATH_MAX];
      struct stat st;
      int ok = realpath(ns.v[i], real) != NULL;
      jl_raw(&j, i ? ",{\"path\":" : "{\"path\":", i ? 9 : 8);
      jl_esc(&j, ok ? real : ns.v[i], strlen(ok ? real : ns.v[i]));
      if (ok && stat(real, &st) == 0) {
        jl_u64(&j, "dev", (uint64_t)st.st_dev);
        jl_u64(&j, "ino", (uint64_t)st.st_ino);
        jl_u64(&j, "size", (uint64_t)st.st_size);
        jl_u64(&j, "mtime_ns", (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec);
      } else {
        jl_bool(&j, "missing", 1); /* deleted or replaced since it was mapped */
      }
      if (!strcmp(ns.v[i], "/proc/self/exe")) jl_bool(&j, "main", 1);
      jl_raw(&j, "}", 1);
    }
    jl_raw(&j, "]", 1);
  }
  jl_commit(&j);
  for (size_t i = 0; i < ns.n; i++) free(ns.v[i]);
  free(ns.v);
}

/* Appends the function symbols of the ELF64 image at p (n bytes may follow it) to j as JSON strings,
 * comma-separated after the first *count; bounds are checked against n because the bytes are whatever
 * the program loaded. Local symbols count too: a kernel in an anonymous namespace or declared static
 * (PyTorch's softmax and random kernels) has internal linkage in its cubin and is still launched by name.
 * -1 when p is not an ELF64 image. */
static int elf_functions(struct jl *j, const unsigned char *p, size_t n, long *count) {
  if (n < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64) return -1;
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > n || (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > n - eh.e_shoff)
    return -1;
  for (unsigned s = 0; s < eh.e_shnum; s++) {
    Elf64_Shdr sh, strh;
    memcpy(&sh, p + eh.e_shoff + (uint64_t)s * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum) continue;
    memcpy(&strh, p + eh.e_shoff + (uint64_t)sh.sh_link * sizeof strh, sizeof strh);
    if (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset || strh.sh_offset > n || strh.sh_size > n - strh.sh_offset) continue;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      memcpy(&sym, p + sh.sh_offset + off, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= strh.sh_size) continue;
      const char *name = (const char *)p + strh.sh_offset + sym.st_name;
      size_t len = strnlen(name, strh.sh_size - sym.st_name);
      if (len == 0 || len == strh.sh_size - sym.st_name) continue; /* empty or not terminated inside the table */
      if ((*count)++) jl_raw(j, ",", 1);
      jl_esc(j, name, len);
    }
  }
  return 0;
}

/* A fatbin container (magic 0xBA55ED50) holds one image per architecture; the uncompressed ELF ones are
 * found at their 8-byte aligned starts (a compressed image shows no ELF magic and gives no symbols). */
static int fatbin_functions(struct jl *j, const unsigned char *p, size_t n, long *count) {
  int any = 0;
  for (size_t off = 8; off + sizeof(Elf64_Ehdr) <= n; off += 8)
    if (!memcmp(p + off, ELFMAG, SELFMAG) && elf_functions(j, p + off, n - off, count) == 0) any = 1;
  return any ? 0 : -1;
}

void map_module_loaded(uint32_t id, const void *bytes, size_t n) {
  struct jl j;
  char hex[65];
  jl_begin(&j, "module");
  jl_str(&j, "ev", "load");
  jl_u64(&j, "id", id);
  jl_u64(&j, "bytes", n);
  if (bytes && n) {
    inject_sha256(bytes, n, hex);
    jl_str(&j, "sha256", hex);
    const unsigned char *p = bytes;
    uint32_t magic = n >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
    int fatbin = magic == 0xBA55ED50u;
    struct jl syms; /* built apart: the array goes in only when some image was ELF */
    jl_begin(&syms, "x");
    syms.n = 0;
    long count = 0;
    int elf = fatbin ? fatbin_functions(&syms, p, n, &count) == 0 : elf_functions(&syms, p, n, &count) == 0;
    jl_str(&j, "format", fatbin ? "fatbin" : elf ? "elf" : "other");
    if (elf && !syms.failed) {
      jl_key(&j, "symbols");
      jl_raw(&j, "[", 1);
      jl_raw(&j, syms.p, syms.n);
      jl_raw(&j, "]", 1);
    }
    jl_release(&syms);
    Dl_info di;
    char real[PATH_MAX];
    if (dladdr(bytes, &di) && di.dli_fname && di.dli_fname[0])
      jl_str(&j, "in_object", realpath(di.dli_fname, real) ? real : di.dli_fname);
  } else {
    jl_str(&j, "sha256", NULL);
  }
  jl_commit(&j);
}

void map_after_fork_child(void) { pthread_mutex_init(&map_mu, NULL); }

void map_module_unloaded(uint32_t id) {
  struct jl j;
  jl_begin(&j, "module");
  jl_str(&j, "ev", "unload");
  jl_u64(&j, "id", id);
  jl_commit(&j);
}
