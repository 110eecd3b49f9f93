/* aggregate: the code registry and frame resolution for the shared stack
 * table (pyresolve.c). GIL held for every function here.
 * - lp_resolve_scan: takes a strong reference on the code object of every
 *   node interned since the last scan (so none can die unresolved); `dying`
 *   (may be NULL) is a code object being destroyed: its nodes are resolved
 *   now and retired instead.
 * - lp_resolve_install_hook: code-destruction hook (PyCode_AddWatcher on
 *   3.12+, a PyCode_Type.tp_dealloc wrapper on 3.9-3.11) that drains the
 *   sampler rings and scans before an unscanned code object dies.
 * - lp_resolve_snapshot: (frames, stacks) lists for the profile dict. */
#ifndef LPROF_PYRESOLVE_H
#define LPROF_PYRESOLVE_H

#include <Python.h>

#include "base.h"

LP_INTERNAL int lp_resolve_install_hook(void);
LP_INTERNAL void lp_resolve_scan(PyObject *dying);
LP_INTERNAL int lp_resolve_needs_scan(void);
/* Drains the sampler rings into the stack table (defined in pysampler.c). */
LP_INTERNAL uint64_t lp_pysampler_drain_rings(void);
LP_INTERNAL int lp_pysampler_has_pending_rings(void);
/* Returns a new (frames, stacks) tuple or NULL with an exception. */
LP_INTERNAL PyObject *lp_resolve_snapshot(void);
/* Adds fold_rows() (pysampler_export.c). */
LP_INTERNAL int lp_pyexport_init(PyObject *module);
/* Drops every reference, frame and stack (and clears the stack table). */
LP_INTERNAL void lp_resolve_reset(void);

#endif
