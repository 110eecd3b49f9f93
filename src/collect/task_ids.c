/* collect: live asyncio tasks' serials by address (task_ids.h). Linear
 * probing over a fixed array; a removed slot becomes a tombstone that a
 * later insert may take, so that a finder never stops early at a hole. A
 * slot is published key last (release), so a finder that sees the key sees
 * its serial. */
#include "collect/task_ids.h"

#include "common/hash.h"

#define FREE      ((uintptr_t)0)
#define TOMBSTONE ((uintptr_t)1) /* never a task's address: objects are aligned */

static struct {
    uintptr_t key;
    uint32_t serial;
} slots[LP_TASK_IDS_SLOTS];
static uint32_t next_serial = 1;
static uint64_t refused;

static uint32_t home(uintptr_t addr) {
    return (uint32_t)lp_hash_mix64((uint64_t)addr) & (LP_TASK_IDS_SLOTS - 1);
}

uint32_t lp_task_ids_find(uintptr_t addr) {
    if (addr <= TOMBSTONE) return 0;
    uint32_t at = home(addr);
    for (uint32_t i = 0; i < LP_TASK_IDS_PROBES; i++, at = (at + 1) & (LP_TASK_IDS_SLOTS - 1)) {
        uintptr_t k = __atomic_load_n(&slots[at].key, __ATOMIC_ACQUIRE);
        if (k == addr) return __atomic_load_n(&slots[at].serial, __ATOMIC_RELAXED);
        if (k == FREE) return 0;
    }
    return 0;
}

uint32_t lp_task_ids_insert(uintptr_t addr) {
    if (addr <= TOMBSTONE) return 0;
    uint32_t found = lp_task_ids_find(addr);
    if (found) return found;
    uint32_t at = home(addr);
    for (uint32_t i = 0; i < LP_TASK_IDS_PROBES; i++, at = (at + 1) & (LP_TASK_IDS_SLOTS - 1)) {
        uintptr_t k = slots[at].key;
        if (k != FREE && k != TOMBSTONE) continue;
        uint32_t serial = next_serial;
        /* read by lp_task_ids_given on any thread; 4 G tasks later 0 stays "none" */
        __atomic_store_n(&next_serial, next_serial + 1 == 0 ? 1 : next_serial + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&slots[at].serial, serial, __ATOMIC_RELAXED);
        __atomic_store_n(&slots[at].key, addr, __ATOMIC_RELEASE);
        return serial;
    }
    refused++;
    return 0;
}

void lp_task_ids_remove(uintptr_t addr) {
    if (addr <= TOMBSTONE) return;
    uint32_t at = home(addr);
    for (uint32_t i = 0; i < LP_TASK_IDS_PROBES; i++, at = (at + 1) & (LP_TASK_IDS_SLOTS - 1)) {
        uintptr_t k = slots[at].key;
        if (k == addr) {
            __atomic_store_n(&slots[at].key, TOMBSTONE, __ATOMIC_RELEASE);
            return;
        }
        if (k == FREE) return;
    }
}

uint64_t lp_task_ids_refused(void) { return refused; }

uint32_t lp_task_ids_given(void) { return __atomic_load_n(&next_serial, __ATOMIC_RELAXED) - 1; }
