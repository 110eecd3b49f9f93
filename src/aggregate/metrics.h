/* aggregate: the one list of metric columns (X-macro). Every table row, JSON
 * key and Python column header comes from LP_METRICS; add a metric here only.
 * Values are stored as int64 in their unit: "ns" (the name ends in _s: shown
 * in seconds), "bytes", "count", "milli" (thousandths of a count), "ms" and
 * "ms2" (the survivors' time moments the leak rule reads).
 * X(ID, name, unit, merge, group, audience, description); merge is SUM or
 * MAX: how two rows of the same stack combine when profiles merge (a peak is
 * a maximum); group is the collector whose section the column feeds
 * (SAMPLING, MEMORY, GPU): Python reads each section's column list from it
 * (_lprof.metric_groups(), lprof.model.sections), never declares its own;
 * audience is SHOWN (a quantity reports show per line) or INTERNAL (kept for
 * the memory sampler's statistics, which the leak rule reads, or the
 * outside reads' split samples, which a snapshot spends on the CPU columns
 * and leaves out: aggregate/cpu_split.h; _lprof.internal_metrics()).
 * The memory columns run from ALLOC_BYTES to SURVIVOR_T2 in this order
 * (memhooks.c clears that range when a memory run starts). The GPU columns
 * run from GPU_KERNEL to GPU_BACKWARD (collect/gpu/, aggregate/gpu_*.c). */
#ifndef LPROF_METRICS_H
#define LPROF_METRICS_H

#include <stdbool.h>

#include "common/base.h"

/* one metric a row, the columns lined up by hand */
/* clang-format off */
#define LP_METRICS(X)                                                                                      \
    X(CPU_PYTHON, cpu_python_s, "ns", SUM, SAMPLING, SHOWN, "CPU time running Python bytecode")            \
    X(CPU_NATIVE, cpu_native_s, "ns", SUM, SAMPLING, SHOWN, "CPU time in native code under a line")        \
    X(CPU_SYSTEM, cpu_system_s, "ns", SUM, SAMPLING, SHOWN, "CPU time in the kernel (system calls)")       \
    X(WALL, wall_s, "ns", SUM, SAMPLING, SHOWN, "wall-clock time (wall mode)")                             \
    X(SAMPLES, samples, "count", SUM, SAMPLING, SHOWN, "timer samples, weighted by 1 + overrun")           \
    X(WAIT, wait_s, "ns", SUM, SAMPLING, SHOWN, "time coroutines waited at an await (wall mode, 3.12+)")   \
    X(GIL, gil_s, "ns", SUM, SAMPLING, SHOWN, "part of the sampled time the thread held the GIL")          \
    X(SPLIT_PYTHON, split_python_s, "ns", SUM, SAMPLING, INTERNAL, "split samples in Python bytecode")    \
    X(SPLIT_NATIVE, split_native_s, "ns", SUM, SAMPLING, INTERNAL, "split samples in native code")        \
    X(SPLIT_SYSTEM, split_system_s, "ns", SUM, SAMPLING, INTERNAL, "split samples in the kernel")         \
    X(ALLOC_BYTES, alloc_bytes, "bytes", SUM, MEMORY, SHOWN, "bytes allocated (sampled estimate)")         \
    X(ALLOC_COUNT, alloc_count, "milli", SUM, MEMORY, SHOWN, "allocations (sampled estimate)")             \
    X(PYTHON_BYTES, python_bytes, "bytes", SUM, MEMORY, SHOWN, "part of alloc_bytes from the PyMem hooks") \
    X(FREED_BYTES, freed_bytes, "bytes", SUM, MEMORY, SHOWN, "bytes freed (sampled estimate)")             \
    X(LIVE_BYTES, live_bytes, "bytes", SUM, MEMORY, SHOWN, "bytes still live at the end")                  \
    X(PEAK_BYTES, peak_bytes, "bytes", MAX, MEMORY, SHOWN, "bytes live at the process peak")               \
    X(ALLOC_SAMPLES, alloc_samples, "count", SUM, MEMORY, INTERNAL, "sampled allocations")                 \
    X(FREE_SAMPLES, free_samples, "count", SUM, MEMORY, INTERNAL, "sampled allocations freed again")       \
    X(SURVIVORS, survivors, "count", SUM, MEMORY, INTERNAL, "sampled blocks still live at the end")        \
    X(SURVIVOR_BYTES, survivor_bytes, "bytes", SUM, MEMORY, INTERNAL, "bytes those blocks stand for")      \
    X(SURVIVOR_T, survivor_t_ms, "ms", SUM, MEMORY, INTERNAL, "sum of their allocation times")             \
    X(SURVIVOR_T2, survivor_t2_ms2, "ms2", SUM, MEMORY, INTERNAL, "sum of their squared allocation times") \
    X(GPU_KERNEL, gpu_kernel_s, "ns", SUM, GPU, SHOWN, "GPU kernel time on the device")                    \
    X(GPU_COPY, gpu_copy_s, "ns", SUM, GPU, SHOWN, "GPU memcpy and memset time on the device")             \
    X(GPU_KERNELS, gpu_kernels, "count", SUM, GPU, SHOWN, "GPU kernels executed")                          \
    X(GPU_LAUNCHES, gpu_launches, "count", SUM, GPU, SHOWN, "GPU API calls that queued work")              \
    X(GPU_H2D, gpu_h2d_bytes, "bytes", SUM, GPU, SHOWN, "bytes copied host to device")                     \
    X(GPU_D2H, gpu_d2h_bytes, "bytes", SUM, GPU, SHOWN, "bytes copied device to host")                     \
    X(GPU_D2D, gpu_d2d_bytes, "bytes", SUM, GPU, SHOWN, "bytes copied within or between devices")          \
    X(GPU_ALLOC, gpu_alloc_bytes, "bytes", SUM, GPU, SHOWN, "device memory allocated")                     \
    X(GPU_PEAK, gpu_peak_bytes, "bytes", MAX, GPU, SHOWN, "device memory live at the device's peak")       \
    X(GPU_COMM, gpu_comm_s, "ns", SUM, GPU, SHOWN, "part of GPU time spent in collectives (NCCL, oneCCL)") \
    X(GPU_BACKWARD, gpu_backward_s, "ns", SUM, GPU, SHOWN,                                                 \
      "part of GPU time run by backward for the line's ops")

typedef enum {
#define LP_METRIC_ENUM_(id, name, unit, merge, group, audience, desc) LP_M_##id,
    LP_METRICS(LP_METRIC_ENUM_)
#undef LP_METRIC_ENUM_
        LP_M_COUNT
} lp_metric;
/* clang-format on */

typedef enum { LP_MERGE_SUM = 0, LP_MERGE_MAX = 1 } lp_merge_kind;

/* The section a column feeds (its name is the group's lower-case name). */
typedef enum { LP_GROUP_SAMPLING = 0, LP_GROUP_MEMORY = 1, LP_GROUP_GPU = 2 } lp_metric_group;

typedef struct {
    const char *name; /* JSON key, e.g. "cpu_python_s" */
    const char *unit; /* "ns", "bytes", "count" */
    lp_merge_kind merge;
    lp_metric_group group;
    const char *group_name; /* "sampling", "memory", "gpu" */
    bool internal;          /* audience INTERNAL: never a report's column */
    const char *description;
} lp_metric_info;

/* Static table indexed by lp_metric (defined in agg.c). */
extern LP_INTERNAL const lp_metric_info lp_metric_infos[LP_M_COUNT];

#endif
