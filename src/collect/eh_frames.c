/* collect: frames and function ranges from the unwind tables (see eh_frames.h). */
#define _GNU_SOURCE 1
#include "collect/eh_frames.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unwind.h>

/* libgcc's lookup of the FDE covering an address. Not in <unwind.h>, so
 * found with dlsym in the library that gives this file _Unwind_Backtrace:
 * that library is this extension's dependency, loaded privately
 * (RTLD_LOCAL), so it is not in the global scope. A runtime without it
 * (LLVM's libunwind) leaves the ranges unknown instead of failing to load. */
struct lp_eh_bases {
    void *tbase, *dbase, *func;
};
typedef const void *(*find_fde_fn)(void *pc, struct lp_eh_bases *bases);

static find_fde_fn find_fde(void) {
    static find_fde_fn fn;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        Dl_info info;
        void *lib = NULL;
        if (dladdr((void *)(uintptr_t)&_Unwind_Backtrace, &info) && info.dli_fname)
            lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        *(void **)&fn = dlsym(lib ? lib : RTLD_DEFAULT, "_Unwind_Find_FDE");
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return fn;
}

/* ---- DWARF pointer encodings (DW_EH_PE_*): only their sizes matter here */

enum { PE_OMIT = 0xff, PE_ALIGNED = 0x50, PE_APPLICATION_MASK = 0x70, PE_FORMAT_MASK = 0x0f };

static int encoded_size(uint8_t enc) {
    switch (enc & PE_FORMAT_MASK) {
        case 0x00: return (int)sizeof(void *); /* absptr */
        case 0x02:
        case 0x0a: return 2; /* udata2, sdata2 */
        case 0x03:
        case 0x0b: return 4; /* udata4, sdata4 */
        case 0x04:
        case 0x0c: return 8; /* udata8, sdata8 */
        default: return -1;  /* uleb128 and others: not used for FDE addresses */
    }
}

static uint64_t read_unsigned(const uint8_t *p, int size) {
    switch (size) {
        case 2: {
            uint16_t v;
            memcpy(&v, p, 2);
            return v;
        }
        case 4: {
            uint32_t v;
            memcpy(&v, p, 4);
            return v;
        }
        default: {
            uint64_t v;
            memcpy(&v, p, 8);
            return v;
        }
    }
}

/* skips one (s)leb128 value; NULL past end */
static const uint8_t *skip_leb(const uint8_t *p, const uint8_t *end) {
    while (p < end && (*p & 0x80)) p++;
    return p < end ? p + 1 : NULL;
}

/* The FDE address encoding its CIE declares ('R' in a "z" augmentation;
 * absptr without one). -1: a CIE lprof does not read. */
static int fde_encoding(const uint8_t *cie) {
    uint32_t len;
    memcpy(&len, cie, 4);
    if (len == 0 || len == 0xffffffffu) return -1;    /* 64-bit DWARF: not in .eh_frame on Linux */
    const uint8_t *p = cie + 8, *end = cie + 4 + len; /* past length and CIE id */
    if (p >= end) return -1;
    uint8_t version = *p++;
    const char *aug = (const char *)p;
    size_t auglen = strnlen(aug, (size_t)(end - p));
    if (auglen == (size_t)(end - p) || strstr(aug, "eh")) return -1;
    p += auglen + 1;
    if (!(p = skip_leb(p, end)) || !(p = skip_leb(p, end))) return -1; /* code, data alignment */
    if (version == 1) p++;                                             /* return register */
    else if (!(p = skip_leb(p, end))) return -1;
    if (aug[0] != 'z') return 0x00;
    if (!(p = skip_leb(p, end))) return -1; /* augmentation data length */
    for (const char *a = aug + 1; *a && p < end; a++) {
        switch (*a) {
            case 'R': return *p;
            case 'L': p++; break;
            case 'P': {
                uint8_t penc = *p++;
                int size = encoded_size(penc);
                if ((penc & PE_APPLICATION_MASK) == PE_ALIGNED || size < 0) return -1;
                p += size;
                break;
            }
            case 'S':
            case 'B':
            case 'G': break;    /* no data */
            default: return -1; /* unknown data size: 'R' cannot be reached */
        }
    }
    return 0x00;
}

int lp_eh_function_range(uintptr_t pc, uintptr_t *start, uintptr_t *end) {
    find_fde_fn find = find_fde();
    struct lp_eh_bases bases = {0};
    const uint8_t *fde = find ? find((void *)pc, &bases) : NULL;
    if (fde == NULL) return -1;
    uint32_t len;
    int32_t cie_offset;
    memcpy(&len, fde, 4);
    memcpy(&cie_offset, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_offset <= 0) return -1;
    int enc = fde_encoding(fde + 4 - cie_offset);
    if (enc < 0 || enc == PE_OMIT) return -1;
    int size = encoded_size((uint8_t)enc);
    if (size < 0 || (uint32_t)(4 + 2 * size) > len) return -1;
    /* past pc_begin (its value is bases.func, decoded by libgcc) */
    uint64_t range = read_unsigned(fde + 8 + size, size);
    uintptr_t lo = (uintptr_t)bases.func, hi = lo + (uintptr_t)range;
    if (pc < lo || pc >= hi) return -1;
    *start = lo;
    *end = hi;
    return 0;
}

typedef struct {
    lp_eh_frame *out;
    int max, n, skip;
} walk;

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg) {
    walk *w = arg;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (ip == 0 || w->n >= w->max) return _URC_END_OF_STACK;
    if (w->skip > 0) {
        w->skip--;
        return _URC_NO_REASON;
    }
    lp_eh_frame *f = &w->out[w->n++];
    f->ip = ip;
    /* the context pairs a frame's ip with the CFA of the frame it called,
     * which is this frame's stack pointer at that call */
    f->sp = (uintptr_t)_Unwind_GetCFA(ctx);
    f->start = f->end = 0;
    /* ip - 1: inside the call (a call at a function's very end returns past it) */
    lp_eh_function_range(ip - 1, &f->start, &f->end);
    return _URC_NO_REASON;
}

__attribute__((noinline)) int lp_eh_frames_here(lp_eh_frame *out, int max) {
    if (max <= 0) return 0;
    walk w = {out, max, 0, 1}; /* the walk starts in this function: skip it */
    _Unwind_Backtrace(on_frame, &w);
    return w.n;
}
