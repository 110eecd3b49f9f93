/* The one list of metric columns (aggregate/metrics.h): every column has a
 * group, and each group's columns are the ones its Python section reads. */
#include "harness.h"

#include <string.h>

#include "aggregate/agg.h"

TEST(every_column_belongs_to_its_section) {
    for (int m = 0; m < LP_M_COUNT; m++) {
        const lp_metric_info *i = &lp_metric_infos[m];
        const char *want = i->group == LP_GROUP_SAMPLING ? "sampling"
                           : i->group == LP_GROUP_MEMORY ? "memory"
                                                         : "gpu";
        CHECK(strcmp(i->group_name, want) == 0);
    }
    CHECK_EQ_INT(lp_metric_infos[LP_M_CPU_PYTHON].group, LP_GROUP_SAMPLING);
    CHECK_EQ_INT(lp_metric_infos[LP_M_SAMPLES].group, LP_GROUP_SAMPLING);
    CHECK_EQ_INT(lp_metric_infos[LP_M_ALLOC_BYTES].group, LP_GROUP_MEMORY);
    CHECK_EQ_INT(lp_metric_infos[LP_M_SURVIVOR_T2].group, LP_GROUP_MEMORY);
    CHECK_EQ_INT(lp_metric_infos[LP_M_GPU_KERNEL].group, LP_GROUP_GPU);
    CHECK_EQ_INT(lp_metric_infos[LP_M_GPU_PEAK].group, LP_GROUP_GPU);
}

TEST(groups_are_contiguous_runs) {
    /* memhooks.c clears ALLOC_BYTES..SURVIVOR_T2, gpu_* the GPU run */
    for (int m = 1; m < LP_M_COUNT; m++) CHECK(lp_metric_infos[m].group >= lp_metric_infos[m - 1].group);
}

/* The memory sampler's statistics and the outside reads' split samples are
 * kept, never shown: the reports' column lists
 * (lprof.model.stacks.INTERNAL_COLUMNS) come from this flag. */
TEST(only_the_sampler_statistics_are_internal) {
    int internal = 0;
    for (int m = 0; m < LP_M_COUNT; m++) internal += lp_metric_infos[m].internal;
    CHECK_EQ_INT(internal, 9);
    CHECK(lp_metric_infos[LP_M_SPLIT_PYTHON].internal && lp_metric_infos[LP_M_SPLIT_SYSTEM].internal);
    CHECK(!lp_metric_infos[LP_M_CPU_SYSTEM].internal);
    CHECK(lp_metric_infos[LP_M_SURVIVORS].internal && lp_metric_infos[LP_M_ALLOC_SAMPLES].internal);
    CHECK(!lp_metric_infos[LP_M_ALLOC_BYTES].internal && !lp_metric_infos[LP_M_PEAK_BYTES].internal);
    CHECK(!lp_metric_infos[LP_M_GPU_PEAK].internal && !lp_metric_infos[LP_M_SAMPLES].internal);
}

RUN_TESTS(every_column_belongs_to_its_section, groups_are_contiguous_runs,
          only_the_sampler_statistics_are_internal)
