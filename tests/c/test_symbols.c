/* aggregate/symbols.c: addresses to function names from the object's own
 * symbol table, and no name where no function holds the address. */
#define _GNU_SOURCE 1
#include "aggregate/symbols.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static uintptr_t exe_base;
static int first_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    exe_base = info->dlpi_addr; /* the first object is the executable */
    return 1;
}

/* The address of a section of this executable, or 0. */
static uintptr_t section_address(const char *want) {
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    uintptr_t out = 0;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        const ElfW(Ehdr) *eh = (const void *)buf;
        const ElfW(Shdr) *sh = (const void *)(buf + eh->e_shoff);
        const char *names = buf + sh[eh->e_shstrndx].sh_offset;
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (!strcmp(names + sh[i].sh_name, want) && sh[i].sh_size > 8) out = exe_base + sh[i].sh_addr;
    }
    free(buf);
    fclose(f);
    return out;
}

static __attribute__((noinline)) int static_function(int x) { return x * 3 + 1; }

TEST(functions_are_named) {
    lp_symbol s;
    lp_symbols_lookup((uintptr_t)&static_function + 1, &s);
    REQUIRE(s.name != NULL);
    CHECK(strcmp(s.name, "static_function") == 0);
    CHECK(s.start == (uintptr_t)&static_function);
    CHECK(s.object != NULL);
    CHECK_EQ_INT(static_function(1), 4);
}

/* The PLT's stubs follow .init, whose label _init has no size: they were
 * named _init (a sample in a stub, calling into another library). */
TEST(plt_stubs_are_not_named_after_init) {
    dl_iterate_phdr(first_object, NULL);
    uintptr_t plt = section_address(".plt");
    REQUIRE(plt != 0);
    lp_symbol s;
    lp_symbols_lookup(plt + 4, &s);
    CHECK(s.name == NULL || strcmp(s.name, "_init") != 0);
    CHECK(s.object != NULL); /* still in the executable: shown as object+offset */
    lp_symbol init;
    uintptr_t at_init = section_address(".init");
    if (at_init) {
        lp_symbols_lookup(at_init, &init); /* the label itself still names its section */
        CHECK(init.name != NULL && strcmp(init.name, "_init") == 0);
    }
    printf("%s", ""); /* a call through the PLT, so the executable has one */
}

RUN_TESTS(functions_are_named, plt_stubs_are_not_named_after_init)
