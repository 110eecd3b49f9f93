/* binding: a call of the program's with lprof's Python code before and
 * after it, none of it on the stack while the call runs (a C frame adds no
 * Python frame: tracebacks, warnings and stack samples see the caller). */
#ifndef LPROF_CALL_AROUND_H
#define LPROF_CALL_AROUND_H

#include <Python.h>

#include "common/base.h"

/* token = before(); fn(*args, **kw); after(token), also when fn raised;
 * fn's result or its exception, untouched. An error of before (token None)
 * or after is cleared: the program's call goes on. kw may be NULL. */
LP_INTERNAL PyObject *lp_call_around(PyObject *before, PyObject *after, PyObject *fn, PyObject *args,
                                     PyObject *kw);

#endif
