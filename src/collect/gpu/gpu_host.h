/* collect: what a GPU collector needs from the interpreter side: the stack
 * id of the launching thread's Python stack, interned in the stack table.
 * Implemented in collect/cpython/gpu.c (the sampler's GIL-free frame walk
 * on the calling thread; a thread without Python frames is charged to the
 * main thread's stack under an "[other thread]" marker). Called on the
 * thread that launches GPU work, GIL held or not; no Python API. */
#ifndef LPROF_COLLECT_GPU_HOST_H
#define LPROF_COLLECT_GPU_HOST_H

#include <stdint.h>

typedef struct {
    uint32_t (*launch_stack)(void);
} lp_gpu_host;

#endif
