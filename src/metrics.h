/* aggregate: the one list of metric columns (X-macro). Every table row, JSON
 * key and Python column header comes from LP_METRICS; add a metric here only.
 * Values are stored as int64: nanoseconds for times (JSON key ends in _s and
 * is exported in seconds), bytes, or counts.
 * X(ID, json_name, unit, merge, description); unit is "ns", "bytes" or
 * "count"; merge is SUM or MAX (how two rows or two profiles combine). */
#ifndef LPROF_METRICS_H
#define LPROF_METRICS_H

#include "base.h"

#define LP_METRICS(X)                                                                  \
    X(CPU_PYTHON, cpu_python_s, "ns", SUM, "CPU time running Python bytecode")        \
    X(CPU_NATIVE, cpu_native_s, "ns", SUM, "CPU time in native code under a line")    \
    X(CPU_SYSTEM, cpu_system_s, "ns", SUM, "CPU time in the kernel (system calls)")   \
    X(WALL, wall_s, "ns", SUM, "wall-clock time (wall mode)")                          \
    X(SAMPLES, samples, "count", SUM, "timer samples, weighted by 1 + overrun")       \
    X(ALLOC_BYTES, alloc_bytes, "bytes", SUM, "bytes allocated (sampled estimate)")   \
    X(ALLOC_COUNT, alloc_count, "count", SUM, "allocations (sampled estimate)")       \
    X(FREED_BYTES, freed_bytes, "bytes", SUM, "bytes freed (sampled estimate)")       \
    X(LIVE_BYTES, live_bytes, "bytes", SUM, "bytes still live at the end")            \
    X(PEAK_BYTES, peak_bytes, "bytes", MAX, "bytes live at the process peak")

typedef enum {
#define LP_METRIC_ENUM_(id, name, unit, merge, desc) LP_M_##id,
    LP_METRICS(LP_METRIC_ENUM_)
#undef LP_METRIC_ENUM_
    LP_M_COUNT
} lp_metric;

typedef enum { LP_MERGE_SUM = 0, LP_MERGE_MAX = 1 } lp_merge_kind;

typedef struct {
    const char *name;   /* JSON key, e.g. "cpu_python_s" */
    const char *unit;   /* "ns", "bytes", "count" */
    lp_merge_kind merge;
    const char *description;
} lp_metric_info;

/* Static table indexed by lp_metric (defined in agg.c). */
extern LP_INTERNAL const lp_metric_info lp_metric_infos[LP_M_COUNT];

#endif
