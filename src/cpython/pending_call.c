/* binding: see pending_call.h. */
#include <Python.h>
#if PY_VERSION_HEX >= 0x030C0000
#define Py_BUILD_CORE 1
#undef _PyGC_FINALIZED             /* the internal headers define it again (-Werror) */
#include "internal/pycore_ceval.h" /* _PyEval_AddPendingCall */
#undef Py_BUILD_CORE
#endif

#include "cpython/pending_call.h"

int lp_pending_call_any_thread(int (*fn)(void *), void *arg) {
#if PY_VERSION_HEX >= 0x030C0000
    /* the last argument, 0: not the main thread's own queue (3.12 calls it
     * mainthreadonly, 3.13+ flags) but the interpreter's, which every
     * thread of it runs */
    return _PyEval_AddPendingCall(PyInterpreterState_Main(), fn, arg, 0) == 0 ? 0 : -1;
#else
    return Py_AddPendingCall(fn, arg);
#endif
}
