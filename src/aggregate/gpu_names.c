/* aggregate: the GPU name arena (see gpu_names.h). An open-addressing index
 * of offsets into one bump-allocated arena, both mapped once with
 * MAP_NORESERVE (pages are touched as names arrive). */
#define _GNU_SOURCE
#include "aggregate/gpu_names.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "common/own_map.h"
#include "common/spinlock.h"

#define INDEX_SLOTS (1u << 17) /* at most half full: 65536 names */
#define ARENA_BYTES ((size_t)32 << 20)

static struct {
    int lock;
    int failed;
    char *arena; /* [size_t hash][len bytes + NUL] records */
    size_t used;
    uint32_t *index; /* arena offset + 1 of a record, 0 = empty */
    size_t count;
} N;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* A fork while a GPU runtime's thread holds the lock must not leave the
 * child's copy locked forever. */
static void lock_for_fork(void) { lp_spin_lock(&N.lock); }
static void unlock_after_fork(void) { lp_spin_unlock(&N.lock); }

static int map_once(void) {
    if (N.arena) return 0;
    if (N.failed) return -1;
    size_t total = ARENA_BYTES + INDEX_SLOTS * sizeof(uint32_t);
    void *m = lp_own_map(total, MAP_NORESERVE);
    if (m == MAP_FAILED) {
        N.failed = 1;
        return -1;
    }
    N.arena = m;
    N.index = (uint32_t *)((char *)m + ARENA_BYTES);
    N.used = 8; /* offset 0 is never a record: 0 marks an empty slot */
    return 0;
}

/* Called once, before the first lookup (not under the lock). */
static void register_fork_handlers(void) {
    static int done;
    if (!__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        (void)pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

const char *lp_gpu_name(const char *name, size_t len) {
    if (!name) return NULL;
    const char *nul = memchr(name, '\0', len);
    if (nul) len = (size_t)(nul - name);
    if (len > LP_GPU_NAME_MAX) len = LP_GPU_NAME_MAX;
    uint64_t h = hash_bytes(name, len);
    const char *out = NULL;
    register_fork_handlers();
    lp_spin_lock(&N.lock);
    if (map_once() == 0) {
        uint32_t i = (uint32_t)h & (INDEX_SLOTS - 1);
        for (;; i = (i + 1) & (INDEX_SLOTS - 1)) {
            uint32_t at = N.index[i];
            if (at == 0) break;
            const char *rec = N.arena + at - 1;
            uint64_t rh;
            memcpy(&rh, rec, sizeof rh);
            const char *text = rec + sizeof rh;
            if (rh == h && strncmp(text, name, len) == 0 && text[len] == '\0') {
                out = text;
                break;
            }
        }
        size_t need = (sizeof(uint64_t) + len + 1 + 7) & ~(size_t)7;
        if (!out && (N.count + 1) * 2 <= INDEX_SLOTS && N.used + need <= ARENA_BYTES) {
            char *rec = N.arena + N.used;
            memcpy(rec, &h, sizeof h);
            memcpy(rec + sizeof h, name, len);
            rec[sizeof h + len] = '\0';
            N.index[i] = (uint32_t)(N.used + 1);
            N.used += need;
            N.count++;
            out = rec + sizeof h;
        }
    }
    lp_spin_unlock(&N.lock);
    return out;
}

/* What counts as communication (docs/design-gpu.md, "Collectives"): the
 * start of the kernel's own identifier (after any mangling prefix, return
 * type or namespace), matched case-sensitively. Extend here only.
 * - NCCL (and RCCL, its ROCm port): every device kernel of a collective
 *   or of send/recv is ncclKernel_... (NCCL 2.x before 2.19),
 *   ncclDevKernel_... (2.19 on: ncclDevKernel_AllReduce_Sum_f32_RING_LL),
 *   its device functions ncclDevFunc_..., or ncclFunction_... (older).
 * - oneCCL on Level Zero: its kernels are named
 *   <collective>_execution_<type>_<op> (allreduce_execution_float32_sum);
 *   one prefix per collective. */
#define LP_GPU_COMM_PATTERNS(X)   \
    X("ncclKernel")               \
    X("ncclDevKernel")            \
    X("ncclDevFunc")              \
    X("ncclFunction")             \
    X("allreduce_execution")      \
    X("allgatherv_execution")     \
    X("allgather_execution")      \
    X("alltoallv_execution")      \
    X("alltoall_execution")       \
    X("reduce_scatter_execution") \
    X("reduce_execution")         \
    X("bcast_execution")          \
    X("broadcast_execution")

static const char *const comm_patterns[] = {
#define LP_COMM_ENTRY_(p) p,
    LP_GPU_COMM_PATTERNS(LP_COMM_ENTRY_)
#undef LP_COMM_ENTRY_
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int comm_prefix(const char *id) {
    for (size_t i = 0; i < sizeof comm_patterns / sizeof *comm_patterns; i++)
        if (strncmp(id, comm_patterns[i], strlen(comm_patterns[i])) == 0) return 1;
    return 0;
}

int lp_gpu_name_is_comm(const char *name) {
    if (!name) return 0;
    if (name[0] == '_' && name[1] == 'Z') {
        /* Itanium mangling: _Z [L] <len><id> or _Z N [quals] <len><id>... (each
         * nested name's parts are tried: a namespaced kernel) */
        const char *p = name + 2;
        if (*p == 'L') p++;
        int nested = *p == 'N';
        if (nested) p++;
        while (*p == 'K' || *p == 'V' || *p == 'r') p++;
        for (int part = 0; part < 8 && is_digit(*p); part++) {
            size_t len = 0;
            while (is_digit(*p) && len < 100000) len = len * 10 + (size_t)(*p++ - '0');
            if (strnlen(p, len) < len) return 0;
            if (comm_prefix(p)) return 1;
            if (!nested) return 0;
            p += len;
        }
        return 0;
    }
    /* demangled or plain: skip a return type ("void "), then try each
     * "::"-separated part of the qualified name before any '(' or '<' */
    const char *p = name;
    if (strncmp(p, "void ", 5) == 0) p += 5;
    for (int part = 0; part < 8; part++) {
        if (comm_prefix(p)) return 1;
        const char *stop = p + strcspn(p, "(<:");
        if (stop[0] != ':' || stop[1] != ':') return 0;
        p = stop + 2;
    }
    return 0;
}
