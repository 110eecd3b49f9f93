/* aggregate: interned stacks. A stack is a parent-pointer trie of raw frames
 * (code pointer + instruction byte offset) under a per-thread root; a stack
 * id is the id of its leaf node. Each stack that received a value owns one
 * metric row (int64 per lp_metric).
 *
 * Context: intern/add/max may be called from any thread, with or without the
 * GIL, from inside an allocator hook, concurrently: they never call malloc or
 * Python, never lock and never wait (storage is mmap'd once at create, fixed
 * capacity; inserts publish with compare-and-swap). They are NOT meant for
 * signal handlers (the sampler's handler writes to its ring instead).
 * When nodes or rows run out, values go to the overflow stack
 * (LP_STACK_OVERFLOW, exported as one "[other]" frame) and are counted.
 * Design: docs/design-sampler.md. */
#ifndef LPROF_STACKTAB_H
#define LPROF_STACKTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/base.h"
#include "aggregate/metrics.h"
#include "common/rawframe.h" /* lp_rawframe, LP_OFFSET_* */

typedef struct lp_stacktab lp_stacktab;

#define LP_STACK_NONE UINT32_MAX
/* Node 0 is the overflow stack; it always exists. */
#define LP_STACK_OVERFLOW 0u

/* Capacity: max_nodes trie nodes (also the index size / 2), max_rows metric
 * rows. Reserves address space with mmap (pages are touched on use).
 * Returns NULL on failure. Not thread-safe; call once. */
LP_INTERNAL lp_stacktab *lp_stacktab_create(uint32_t max_nodes, uint32_t max_rows);
LP_INTERNAL void lp_stacktab_destroy(lp_stacktab *t);
/* Faults part `part` (LP_PREFAULT_PART bytes) of the hashed index in (8 MiB
 * of huge pages by default, zeroed by the kernel at their first write: 11
 * ms on this project's VM, which the first drain paid with the GIL held,
 * so on the program's time). Returns the number of parts. Changes no
 * entry: safe beside lookups and inserts, on any thread, GIL released; in
 * parts, so that a thread doing it can stop between them. */
#define LP_PREFAULT_PART (2u << 20)
LP_INTERNAL uint32_t lp_stacktab_prefault(lp_stacktab *t, uint32_t part);
/* Forget everything (no concurrent users allowed while it runs). */
LP_INTERNAL void lp_stacktab_clear(lp_stacktab *t);

/* Interns frames[0..n) given LEAF FIRST (frames[0] is the innermost) under
 * the root of `thread` (PyThreadState.thread_id, i.e. threading.get_ident()).
 * truncated != 0 inserts a "[truncated]" marker below the thread root.
 * Returns the stack id, LP_STACK_OVERFLOW when the table is full. */
LP_INTERNAL uint32_t lp_stacktab_intern(lp_stacktab *t, uint64_t thread, const lp_rawframe *frames, size_t n,
                                        int truncated);
/* The child of `stack` for one more frame on the leaf side (how GPU work is
 * hung under its launching stack); same context and overflow rule as
 * intern. */
LP_INTERNAL uint32_t lp_stacktab_extend(lp_stacktab *t, uint32_t stack, void *code, int32_t offset);
/* Atomically adds / maxes a value into the stack's metric row. */
LP_INTERNAL void lp_stacktab_add(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value);
LP_INTERNAL void lp_stacktab_max(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value);
/* Sets a value (snapshots of live/peak bytes). */
LP_INTERNAL void lp_stacktab_set(lp_stacktab *t, uint32_t stack, lp_metric m, int64_t value);

/* For every row: column dst = column a - column b (the memory account's
 * peak snapshot, live bytes at the end). Rows written concurrently may be
 * seen half updated; callers that need one instant hold their own lock
 * around every writer of a and b. */
LP_INTERNAL void lp_stacktab_set_difference(lp_stacktab *t, lp_metric dst, lp_metric a, lp_metric b);
/* Zeroes one column in every row. */
LP_INTERNAL void lp_stacktab_clear_column(lp_stacktab *t, lp_metric m);

/* Marks a node dead: lookups skip it from now on, so a new code object at a
 * recycled address gets new nodes. Called under the GIL by the code
 * registry when a code object with unresolved nodes dies. */
LP_INTERNAL void lp_stacktab_retire(lp_stacktab *t, uint32_t id);

/* ---- readers (any thread; see only fully published nodes and rows) ---- */
typedef struct {
    uint32_t parent; /* LP_STACK_NONE for a thread root */
    int32_t offset;
    void *code; /* thread key for a root (offset == LP_OFFSET_THREAD_ROOT) */
    int valid;  /* 0: id out of range or node not yet published */
} lp_stacknode;

LP_INTERNAL uint32_t lp_stacktab_node_count(const lp_stacktab *t); /* ids are 0..count-1 */
LP_INTERNAL lp_stacknode lp_stacktab_node(const lp_stacktab *t, uint32_t id);
LP_INTERNAL uint32_t lp_stacktab_row_count(const lp_stacktab *t);
/* Row r (0..row_count-1): its stack id and values; returns LP_STACK_NONE for
 * a row not yet published. */
LP_INTERNAL uint32_t lp_stacktab_row(const lp_stacktab *t, uint32_t r, int64_t values[LP_M_COUNT]);
/* Values of a stack (zeros if it has no row). */
LP_INTERNAL void lp_stacktab_get(const lp_stacktab *t, uint32_t stack, int64_t values[LP_M_COUNT]);
/* Thread key of the stack's root (0 for the overflow stack). */
LP_INTERNAL uint64_t lp_stacktab_thread(const lp_stacktab *t, uint32_t stack);
/* Events that went to the overflow stack because nodes or rows ran out. */
LP_INTERNAL uint64_t lp_stacktab_overflows(const lp_stacktab *t);
/* The table's size: its capacities, and the bytes of its reservation that
 * are resident (mincore; 0 if that cannot be told). Not for hot paths. */
typedef struct {
    uint32_t max_nodes, max_rows;
    uint64_t reserved_bytes, resident_bytes;
} lp_stacktab_size;
LP_INTERNAL void lp_stacktab_measure(const lp_stacktab *t, lp_stacktab_size *out);

#endif
