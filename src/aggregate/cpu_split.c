/* aggregate: the CPU split of outside reads (see cpu_split.h). */
#include "aggregate/cpu_split.h"

static const lp_metric split_cols[3] = {LP_M_SPLIT_PYTHON, LP_M_SPLIT_NATIVE, LP_M_SPLIT_SYSTEM};

void lp_cpu_split_gather(lp_cpu_split *line, const int64_t row[LP_M_COUNT]) {
    for (int k = 0; k < 3; k++) line->ns[k] += row[split_cols[k]];
}

void lp_cpu_split_apply(int64_t row[LP_M_COUNT], const lp_cpu_split *line) {
    int64_t found = line->ns[0] + line->ns[1] + line->ns[2];
    int64_t cpu = row[LP_M_CPU_PYTHON] + row[LP_M_CPU_NATIVE] + row[LP_M_CPU_SYSTEM];
    for (int k = 0; k < 3; k++) row[split_cols[k]] = 0;
    if (found <= 0 || cpu <= 0) return;
    /* long double: a 10-minute run's ns times ns overflow int64 */
    int64_t python = (int64_t)((long double)cpu * (long double)line->ns[0] / (long double)found);
    int64_t native = (int64_t)((long double)cpu * (long double)line->ns[1] / (long double)found);
    row[LP_M_CPU_PYTHON] = python;
    row[LP_M_CPU_NATIVE] = native;
    row[LP_M_CPU_SYSTEM] = cpu - python - native;
}
