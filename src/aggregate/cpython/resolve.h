/* aggregate: the code registry and frame resolution for the shared stack
 * table (aggregate/cpython/resolve.c). GIL held for every function here.
 * - lp_resolve_scan: takes a strong reference on the code object of every
 *   node interned since the last scan (so none can die unresolved); `dying`
 *   (may be NULL) is a code object being destroyed: its nodes are resolved
 *   now and retired instead.
 * - lp_resolve_install_hook: code-destruction hook (PyCode_AddWatcher on
 *   3.12+, a PyCode_Type.tp_dealloc wrapper on 3.10-3.11) that drains the
 *   registered source (lp_agg_drain: the sampler's rings) and scans before
 *   an unscanned code object dies.
 * - lp_resolve_node_frame: the frame id of a stack-table node; frames are
 *   (file, function, first line, line) tuples in lp_resolve_frames(). Marker
 *   frames ("[truncated]", "[other]", "[unknown]", ...) are ("<lprof>",
 *   name, 0, 0), spelled here only. */
#ifndef LPROF_AGGREGATE_CPYTHON_RESOLVE_H
#define LPROF_AGGREGATE_CPYTHON_RESOLVE_H

#include <Python.h>

#include "common/base.h"

LP_INTERNAL int lp_resolve_install_hook(void);
LP_INTERNAL void lp_resolve_scan(PyObject *dying);
LP_INTERNAL int lp_resolve_needs_scan(void);
#define LP_RESOLVE_NO_FRAME UINT32_MAX
/* Frame id of node `id` (not a thread root); LP_RESOLVE_NO_FRAME on error. */
LP_INTERNAL uint32_t lp_resolve_node_frame(uint32_t id);
/* Frame id of the marker frame ("<lprof>", name, 0, 0). */
LP_INTERNAL uint32_t lp_resolve_marker(const char *name);
/* The frame tuples, indexed by frame id (borrowed; NULL on error). */
LP_INTERNAL PyObject *lp_resolve_frames(void);
/* Drops every reference, frame and stack (and clears the stack table). */
LP_INTERNAL void lp_resolve_reset(void);

#endif
