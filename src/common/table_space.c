/* common: see table_space.h. */
#include "common/table_space.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "common/own_map.h"

uint32_t lp_env_cap(const char *name, uint32_t dflt, uint32_t max) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end) return dflt;
    return v > max ? max : (uint32_t)v;
}

int lp_table_reserve(void **table, size_t *have, size_t bytes) {
    if (*table && bytes > *have) {
        lp_own_unmap(*table, *have);
        *table = NULL;
    }
    if (!*table) {
        void *m = lp_own_map(bytes, MAP_NORESERVE);
        if (m == MAP_FAILED) {
            *have = 0;
            return -1;
        }
        *table = m;
        *have = bytes;
    }
    return 0;
}
