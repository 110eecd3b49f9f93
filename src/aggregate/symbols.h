/* aggregate: native addresses to function names, off the hot path (the
 * drain and the resolver, one thread at a time: the GIL holder). Each loaded
 * object that appears in a stack has its ELF symbol table read once from its
 * file (.symtab where the file has one, else the .dynsym that stripped
 * libraries keep), mapped read-only, its functions sorted by address. An
 * address inside no function symbol keeps its own value; the resolver then
 * names it "object+0xoffset". */
#ifndef LPROF_AGGREGATE_SYMBOLS_H
#define LPROF_AGGREGATE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"

typedef struct {
    const char *object;      /* path of the loaded object; NULL: in no object */
    const char *name;        /* the symbol as stored (C++ names mangled); NULL: none */
    uintptr_t start;         /* the function's first address; addr itself if none */
    uintptr_t object_offset; /* addr - the object's load base */
} lp_symbol;

/* Fills *out for addr. Strings live until lp_symbols_reset. */
LP_INTERNAL void lp_symbols_lookup(uintptr_t addr, lp_symbol *out);
/* The readable form of a symbol name: C++ names demangled (through the C++
 * runtime's __cxa_demangle where one can be loaded), others copied. malloc'd;
 * NULL when out of memory. */
LP_INTERNAL char *lp_symbols_demangle(const char *name);
/* Unmaps every symbol table (no lookups may run). */
LP_INTERNAL void lp_symbols_reset(void);

#endif
