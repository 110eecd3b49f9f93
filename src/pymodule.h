/* binding: each Python-facing component adds its functions to the module.
 * One init per component keeps pymodule.c free of component logic. */
#ifndef LPROF_PYMODULE_H
#define LPROF_PYMODULE_H

#include <Python.h>

#include "base.h"

/* Each returns 0 on success, -1 with a Python exception set. */
LP_INTERNAL int lp_pytracer_init(PyObject *module);  /* pytracer.c: lprof -l */
LP_INTERNAL int lp_pysampler_init(PyObject *module); /* pysampler.c: sampling */
LP_INTERNAL int lp_pymemory_init(PyObject *module);  /* pymemory.c: memory */

#endif
