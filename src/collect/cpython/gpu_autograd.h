/* binding: which forward line created each autograd node, for lprof --gpu
 * with PyTorch (python/lprof/collect/gpu_backward.py; docs/design-gpu.md,
 * "Backward on the forward lines"). After each op of the program's forward
 * pass, the autograd node the op made gets a pre-hook that, when autograd
 * runs the node's backward, sets the running thread's backward origin to the
 * stack of the line that made it; the GPU launch callback reads it. */
#ifndef LPROF_COLLECT_CPYTHON_GPU_AUTOGRAD_H
#define LPROF_COLLECT_CPYTHON_GPU_AUTOGRAD_H

#include <stdint.h>

#include "cpython/module.h"

/* The calling thread's backward origin: the stack id of the forward line
 * whose node's backward the thread runs, LP_STACK_NONE when none. Any
 * thread, GIL or not (a thread-local read). */
LP_INTERNAL uint32_t lp_gpu_autograd_origin(void);
/* Forgets the calling thread's origin and the counters (gpu_reset). */
LP_INTERNAL void lp_gpu_autograd_reset(void);
/* Adds the gpu_autograd_* / gpu_backward_* functions to _lprof. */
LP_INTERNAL int lp_pygpu_autograd_init(PyObject *module);

#endif
