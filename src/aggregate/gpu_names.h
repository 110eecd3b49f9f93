/* aggregate: interned names of GPU work (kernel names, "[memcpy HtoD]", ...)
 * that stack-table nodes point to (LP_OFFSET_GPU_OP). A name lives for the
 * process, so a node interned before a reset can still be resolved.
 *
 * Context: any thread, GIL or not (GPU runtimes call back on their own
 * threads); takes a short spin lock, never calls malloc (one fixed arena,
 * mapped once). Not for signal handlers. */
#ifndef LPROF_AGGREGATE_GPU_NAMES_H
#define LPROF_AGGREGATE_GPU_NAMES_H

#include <stddef.h>

#include "common/base.h"

/* The interned copy of name[0..len) (bytes after a NUL are dropped); the
 * same pointer for the same text. Names longer than LP_GPU_NAME_MAX are cut
 * there. NULL when the arena is full or could not be mapped. */
LP_INTERNAL const char *lp_gpu_name(const char *name, size_t len);
#define LP_GPU_NAME_MAX 4096

/* Communication or compute: 1 if `name` (a kernel name as the runtime
 * gives it, Itanium-mangled or not, or as demangled) is a collective
 * library's kernel, 0 otherwise. The one list of what counts as
 * communication is LP_GPU_COMM_PATTERNS in gpu_names.c (NCCL/RCCL,
 * oneCCL's Level Zero kernels); the join charges such kernels' time to
 * GPU_COMM as well as GPU_KERNEL, and Python asks the same function
 * (_lprof.gpu_is_comm) for the timeline's names. Pure: any thread, no lock. */
LP_INTERNAL int lp_gpu_name_is_comm(const char *name);

#endif
