/* common: the frame vocabulary every stage shares. Collectors capture raw
 * frames (collect/), the stack table interns them (aggregate/stacktab.h),
 * the resolver and the exports read them back (aggregate/cpython/resolve.c,
 * export/). Plain data, no functions. */
#ifndef LPROF_COMMON_RAWFRAME_H
#define LPROF_COMMON_RAWFRAME_H

#include <stdint.h>

/* One frame as captured on a hot path. A Python frame: the code object's
 * address (PyCodeObject*, not referenced) and the byte offset of the
 * instruction, ready for PyCode_Addr2Line. A native frame (lprof --native):
 * the instruction address in code, offset LP_OFFSET_NATIVE. flags are what
 * the capture saw (not part of the stack's identity: interning ignores them). */
typedef struct {
    void *code;
    int32_t offset;
    uint32_t flags;
} lp_rawframe;

/* The Python frame was entered from C: one native call of the eval loop runs
 * it and the frames leafward of it up to the previous entry frame (how
 * aggregate/splice.c places Python frames in the native stack). */
#define LP_RAWFRAME_ENTRY 1u

/* Marker frames have code == NULL and one of these offsets (a stack-table
 * node's offset field). */
#define LP_OFFSET_THREAD_ROOT INT32_MIN       /* root node; code field holds the thread key */
#define LP_OFFSET_TRUNCATED   (INT32_MIN + 1) /* frames dropped on the root side */
#define LP_OFFSET_OVERFLOW    (INT32_MIN + 2) /* the "[other]" bucket */
#define LP_OFFSET_NATIVE      (INT32_MIN + 3) /* a native frame: code is its address */
/* GPU work (a kernel, a copy, a memset) as the leaf of the stack that
 * launched it: code is its name, a NUL-terminated string interned by
 * aggregate/gpu_names.h (alive for the process). */
#define LP_OFFSET_GPU_OP (INT32_MIN + 4)
/* A marker under which GPU work of threads without Python frames is charged
 * to the stack of the thread that started it (code NULL). */
#define LP_OFFSET_GPU_ORPHAN (INT32_MIN + 5)
/* A marker under which the CPU time of threads the sampler does not sample
 * (threads without Python: BLAS, OpenMP, a C library's workers) is charged
 * to the stack of the Python thread in native code then; alone under thread
 * 0: such time no Python thread was there to take (collect/other_threads.h). */
#define LP_OFFSET_OTHER_THREADS (INT32_MIN + 6)
/* A marker under which GPU work launched by autograd's backward for a node
 * is charged to the stack of the forward line that created the node
 * ("[backward]", collect/cpython/gpu.c; code NULL). */
#define LP_OFFSET_GPU_BACKWARD (INT32_MIN + 7)
/* A marker between a CUDA graph replay's stack and the captured stack of
 * the graph node a kernel ran from ("[graph replay]",
 * aggregate/gpu_graph.h; code NULL). */
#define LP_OFFSET_GPU_GRAPH (INT32_MIN + 8)

#endif
