/* binding: placeholder until this component lands; adds no functions. */
#include "pymodule.h"

int lp_pymemory_init(PyObject *module) {
    (void)module;
    return 0;
}
