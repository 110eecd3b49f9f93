/* binding: each Python-facing component adds its functions to the module.
 * One init per component keeps cpython/module.c free of component logic. */
#ifndef LPROF_PYMODULE_H
#define LPROF_PYMODULE_H

#include <Python.h>

#include "common/base.h"

/* Each returns 0 on success, -1 with a Python exception set. */
LP_INTERNAL int lp_pytracer_init(PyObject *module);       /* collect/cpython/tracer.c: lprof -l */
LP_INTERNAL int lp_pysampler_init(PyObject *module);      /* collect/cpython/sampler.c: sampling */
LP_INTERNAL int lp_pymemory_init(PyObject *module);       /* collect/cpython/memory.c: memory */
LP_INTERNAL int lp_pygpu_init(PyObject *module);          /* collect/cpython/gpu.c: --gpu */
LP_INTERNAL int lp_pyawaits_init(PyObject *module);       /* collect/cpython/awaits.c: await waits (3.12+) */
LP_INTERNAL int lp_pystacks_init(PyObject *module);       /* aggregate/cpython/snapshot.c: the stack model */
LP_INTERNAL int lp_pyexport_init(PyObject *module);       /* export/cpython/fold_rows.c: fold_rows */
LP_INTERNAL int lp_pyemergency_init(PyObject *module);    /* export/cpython/emergency_py.c: faults */
LP_INTERNAL int lp_pyremote_init(PyObject *module);       /* collect/cpython/remote_py.c: lprof dump */
LP_INTERNAL int lp_pyfork_warning_init(PyObject *module); /* cpython/fork_warning.c: os.fork's warning */

#endif
