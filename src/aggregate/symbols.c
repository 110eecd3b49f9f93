/* aggregate: native symbolization (see symbols.h). Objects come from
 * dl_iterate_phdr (re-read when an address falls in none we know: a library
 * loaded since); their function symbols from the ELF file, mapped read-only
 * and kept mapped so names point into it. A direct-mapped cache in front
 * answers repeated addresses (the drain asks for every native frame of
 * every sample). dladdr is not used: it scans a whole symbol table per call
 * (libtorch's has hundreds of thousands) and names the nearest exported
 * symbol even for an address far past its end. */
#define _GNU_SOURCE 1
#include "aggregate/symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    uintptr_t start, size;
    uint32_t name; /* offset in the object's string table */
} function;

typedef struct {
    uintptr_t bias;   /* load bias: symbol values + bias = addresses */
    uintptr_t lo, hi; /* extent of its executable segments */
    char *path;
    int loaded; /* symbols read (or found unreadable) */
    void *map;
    size_t map_len;
    const char *strtab;
    size_t strtab_len;
    function *fns;
    size_t nfns;
} object;

typedef struct {
    uintptr_t addr; /* 0: empty */
    int32_t obj;    /* -1: in no object */
    int32_t fn;     /* -1: in no function */
} cache_entry;

#define CACHE_SLOTS 65536u

static struct {
    object *objs;
    size_t n, cap;
    cache_entry *cache;
} Y;

/* ---- objects ------------------------------------------------------------ */

static char *object_path(const char *name) {
    if (name && name[0]) return strdup(name);
    char buf[4096]; /* the main program */
    ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (len <= 0) return strdup("[executable]");
    buf[len] = 0;
    return strdup(buf);
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (lo >= hi) return 0;
    for (size_t k = 0; k < Y.n; k++)
        if (Y.objs[k].lo == lo && Y.objs[k].hi == hi) return 0; /* known */
    if (Y.n == Y.cap) {
        size_t cap = Y.cap ? Y.cap * 2 : 64;
        object *o = realloc(Y.objs, cap * sizeof *o);
        if (!o) return 1;
        Y.objs = o;
        Y.cap = cap;
    }
    object *o = &Y.objs[Y.n];
    memset(o, 0, sizeof *o);
    o->bias = info->dlpi_addr;
    o->lo = lo;
    o->hi = hi;
    o->path = object_path(info->dlpi_name);
    if (!o->path) return 1;
    Y.n++;
    return 0;
}

static int object_of(uintptr_t addr) {
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < Y.n; k++)
            if (addr >= Y.objs[k].lo && addr < Y.objs[k].hi) return (int)k;
        if (pass == 0) dl_iterate_phdr(add_object, NULL);
    }
    return -1;
}

/* ---- symbol tables -------------------------------------------------------- */

static int by_start(const void *a, const void *b) {
    const function *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->size < y->size ? 1 : (x->size > y->size ? -1 : 0); /* sized alias first */
}

static int in_file(size_t off, size_t len, size_t file_len) {
    return off <= file_len && len <= file_len - off;
}

/* A sizeless symbol of a full .symtab (hand-written assembly; _init, the
 * .init section's label) reaches at most to its section's end: past it lie
 * the PLT's stubs, which are no function of its (they were named _init).
 * The next symbol ends it sooner (the lookup takes the last start). */
static uintptr_t to_section_end(const ElfW(Ehdr) * eh, const ElfW(Shdr) * sh, const ElfW(Sym) * sym) {
    if (sym->st_shndx >= eh->e_shnum) return 0; /* SHN_ABS and the other special indexes */
    const ElfW(Shdr) *sec = &sh[sym->st_shndx];
    if (sym->st_value < sec->sh_addr || sym->st_value >= sec->sh_addr + sec->sh_size) return 0;
    return (uintptr_t)(sec->sh_addr + sec->sh_size - sym->st_value);
}

/* The function symbols of one section (SHT_SYMTAB or SHT_DYNSYM), or 0. */
static int read_table(object *o, const ElfW(Ehdr) * eh, const ElfW(Shdr) * sh, unsigned type) {
    const char *base = o->map;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != type || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *str = &sh[sh[i].sh_link];
        if (!in_file(sh[i].sh_offset, sh[i].sh_size, o->map_len) ||
            !in_file(str->sh_offset, str->sh_size, o->map_len))
            continue;
        const ElfW(Sym) *syms = (const ElfW(Sym) *)(const void *)(base + sh[i].sh_offset);
        size_t count = sh[i].sh_size / sizeof(ElfW(Sym));
        function *fns = malloc((count ? count : 1) * sizeof *fns);
        if (!fns) return 0;
        size_t n = 0;
        for (size_t k = 0; k < count; k++) {
            unsigned t = ELF64_ST_TYPE(syms[k].st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || syms[k].st_shndx == SHN_UNDEF ||
                syms[k].st_value == 0 || syms[k].st_name >= str->sh_size)
                continue;
            fns[n].start = (uintptr_t)syms[k].st_value + o->bias;
            fns[n].size = (uintptr_t)syms[k].st_size;
            fns[n].name = syms[k].st_name;
            if (!fns[n].size && type == SHT_SYMTAB) fns[n].size = to_section_end(eh, sh, &syms[k]);
            n++;
        }
        if (n == 0) {
            free(fns);
            return 0;
        }
        qsort(fns, n, sizeof *fns, by_start);
        o->fns = fns;
        o->nfns = n;
        o->strtab = base + str->sh_offset;
        o->strtab_len = str->sh_size;
        return 1;
    }
    return 0;
}

static void load_symbols(object *o) {
    o->loaded = 1;
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return;
    o->map = map;
    o->map_len = (size_t)st.st_size;
    const ElfW(Ehdr) *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        !in_file(eh->e_shoff, (size_t)eh->e_shnum * sizeof(ElfW(Shdr)), o->map_len))
        return;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)((const char *)map + eh->e_shoff);
    if (!read_table(o, eh, sh, SHT_SYMTAB)) read_table(o, eh, sh, SHT_DYNSYM);
}

/* Index of the function holding addr, or -1. */
static int function_of(object *o, uintptr_t addr) {
    if (!o->loaded) load_symbols(o);
    size_t lo = 0, hi = o->nfns; /* first function starting after addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->fns[mid].start <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const function *f = &o->fns[lo - 1];
    /* Sizeless here: a .dynsym symbol (a stripped object: the functions
     * between two exported ones are missing, so it cannot say where it ends)
     * or one outside any section: unnamed is true, a neighbour's name not */
    if (!f->size) return -1;
    return addr < f->start + f->size ? (int)(lo - 1) : -1;
}

/* ---- lookup --------------------------------------------------------------- */

void lp_symbols_lookup(uintptr_t addr, lp_symbol *out) {
    if (!Y.cache) Y.cache = calloc(CACHE_SLOTS, sizeof *Y.cache);
    cache_entry *c = Y.cache ? &Y.cache[(addr ^ (addr >> 16)) & (CACHE_SLOTS - 1)] : NULL;
    int obj, fn;
    if (c && c->addr == addr) {
        obj = c->obj;
        fn = c->fn;
    } else {
        obj = object_of(addr);
        fn = obj >= 0 ? function_of(&Y.objs[obj], addr) : -1;
        if (c) *c = (cache_entry){addr, obj, fn};
    }
    out->object = NULL;
    out->name = NULL;
    out->start = addr;
    out->object_offset = 0;
    if (obj < 0) return;
    const object *o = &Y.objs[obj];
    out->object = o->path;
    out->object_offset = addr - o->bias;
    if (fn < 0) return;
    out->name = o->strtab + o->fns[fn].name;
    out->start = o->fns[fn].start;
}

typedef char *(*demangler)(const char *, char *, size_t *, int *);

char *lp_symbols_demangle(const char *name) {
    static demangler demangle;
    static int looked;
    if (name[0] == '_' && name[1] == 'Z' && !looked) {
        looked = 1;
        *(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!demangle) { /* no C++ runtime loaded yet: load one, privately */
            void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h) *(void **)&demangle = dlsym(h, "__cxa_demangle");
        }
    }
    if (demangle && name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *readable = demangle(name, NULL, NULL, &status);
        if (readable && status == 0) return readable;
        free(readable);
    }
    return strdup(name);
}

void lp_symbols_reset(void) {
    for (size_t k = 0; k < Y.n; k++) {
        object *o = &Y.objs[k];
        free(o->fns);
        if (o->map) munmap(o->map, o->map_len);
        free(o->path);
    }
    free(Y.objs);
    free(Y.cache);
    memset(&Y, 0, sizeof Y);
}
