/* aggregate: the stack table as the profile's stack model, for every
 * collector at once (sampler and memory share the table). Its Python
 * functions and their results are described in snapshot.c.
 * Building it: every stack-table node is resolved (resolve.c) and interned
 * into a trie keyed by (parent, frame), so that two raw frames on the same
 * line, or the same stack on two threads, share nodes. lprof's own launcher
 * frames (files under the launcher folder) are cut here and only here: the
 * innermost one and everything rootward of it; a stack made only of them is
 * lprof's own work and is left out. So is a stack where lprof's command
 * (its frames from the root, after the frames that called it: the console
 * script, runpy) calls code outside lprof other than through a program
 * entry (the runner's functions that run the program): an import or a
 * threading call of lprof's own start or end, sampled, would otherwise
 * begin a stack of its own once lprof's frames were cut. Rows that land on
 * the same (node, thread) combine by their columns' merge kinds. GIL held
 * throughout.
 *
 * By job: snap_build.c builds the trie and the rows, snap_cut.c holds the
 * rule that cuts lprof's own frames, snap_timeline.c the sample and GPU
 * timelines' columns, snap_tasks.c the task split's, snap_rows.c the row form, snap_containers.h the map
 * and vector they use, snapshot.c the Python functions. This header is
 * what they share. */
#ifndef LPROF_AGGREGATE_CPYTHON_SNAP_H
#define LPROF_AGGREGATE_CPYTHON_SNAP_H

#include "cpython/module.h"

#include <stdint.h>

#include "aggregate/agg.h"
#include "aggregate/cpython/snap_containers.h"

#define ROOT    -1 /* the trie's root: no frame yet */
#define CUT     -2 /* launcher frames cut: what follows starts at the root */
#define UNSET   -3
#define CALLER  -4 /* only the frames that called lprof's command so far */
#define COMMAND -5 /* lprof's command from the root, no program entry yet */
#define OWN     -6 /* code lprof's command called for itself: left out */

/* What a resolved frame is to the cut (snap.kinds) */
enum { KIND_UNKNOWN, KIND_OTHER, KIND_LAUNCHER, KIND_ENTRY, KIND_CALLER };

/* One snapshot being built (snap_build.c); the timelines map nodes with it. */
typedef struct {
    lp_stacktab *tab;
    PyObject *rframes; /* resolve.c's frame tuples */
    PyObject *frames;  /* output frames (only those used) */
    int32_t *fmap;     /* resolve frame id -> output frame id, -1 unknown */
    uint8_t *kinds;    /* resolve frame id -> KIND_* */
    size_t fmap_cap;
    int32_t *rnode;    /* stack-table node -> trie node, ROOT, UNSET or a cut state */
    idmap trie;        /* (parent, frame) -> trie node */
    vec parent, frame; /* the trie */
    idmap rowmap;      /* (trie node, thread) -> output row */
    vec row_node, row_thread, values;
} snap;

/* snap_build.c */
/* The model now (stacks_snapshot's tuple); NULL with an exception. */
LP_INTERNAL PyObject *snap_take(uint64_t origin_ns);
/* Room in fmap/kinds for resolve frame ids below n; -1 out of memory. */
LP_INTERNAL int snap_ensure_fmap(snap *s, size_t n);
/* Trie node of stack-table node id (its ancestors first); UNSET on error or
 * for a node not yet published. */
LP_INTERNAL int32_t snap_map_node(snap *s, uint32_t id, uint32_t count);
LP_INTERNAL PyObject *snap_bytes_of(const vec *v);

/* snap_cut.c: the launcher frames' cut (the header comment above) */
LP_INTERNAL int snap_kind_of(snap *s, uint32_t rf);
/* 1 when the frame is output under *out; 0 when the node takes state *out. */
LP_INTERNAL int snap_next_state(int32_t up, int kind, int32_t *out);
/* set_launcher_dir's folder (NULL: cut nothing); -1 out of memory. */
LP_INTERNAL int snap_set_launcher_dir(const char *dir);
/* set_launcher_roles' sets; takes both references. */
LP_INTERNAL void snap_set_launcher_roles(PyObject *callers, PyObject *entries);

/* snap_timeline.c: the timelines as columns; Py_None when empty, NULL with
 * an exception. Call after the rows: they map nodes with s. */
LP_INTERNAL PyObject *snap_timeline_columns(snap *s, uint32_t count, uint64_t origin_ns);
LP_INTERNAL PyObject *snap_gpu_columns(snap *s, uint32_t count, uint64_t origin_ns);

/* snap_tasks.c: the task split's pairs as columns (node int32 into the
 * trie, thread uint64, task uint32, values int64 per metric as the rows',
 * pairs refused for want of room); Py_None when there are none, NULL with
 * an exception. Call after the rows. */
LP_INTERNAL PyObject *snap_task_columns(snap *s, uint32_t count);

/* snap_rows.c: stacks_rows(...) */
LP_INTERNAL PyObject *snap_rows(PyObject *self, PyObject *args);

#endif
