/* The outside reads' CPU split (aggregate/cpu_split.c): a line's split
 * samples divide each of its rows' CPU time, the total kept exactly. */
#include "harness.h"

#include "aggregate/cpu_split.h"

static void row_of(int64_t row[LP_M_COUNT], int64_t python, int64_t native, int64_t sp, int64_t sn,
                   int64_t ss) {
    for (int m = 0; m < LP_M_COUNT; m++) row[m] = 0;
    row[LP_M_CPU_PYTHON] = python;
    row[LP_M_CPU_NATIVE] = native;
    row[LP_M_SPLIT_PYTHON] = sp;
    row[LP_M_SPLIT_NATIVE] = sn;
    row[LP_M_SPLIT_SYSTEM] = ss;
    row[LP_M_GIL] = python + native;
}

TEST(a_lines_rows_are_divided_as_its_split_samples_found) {
    /* two rows of one line (two call paths): 8 split samples between them,
     * 2 Python, 2 native, 4 system */
    int64_t a[LP_M_COUNT], b[LP_M_COUNT];
    row_of(a, 600, 0, 2, 0, 3);
    row_of(b, 100, 300, 0, 2, 1);
    lp_cpu_split line = {{0, 0, 0}};
    lp_cpu_split_gather(&line, a);
    lp_cpu_split_gather(&line, b);
    CHECK_EQ_INT(line.ns[0], 2);
    CHECK_EQ_INT(line.ns[1], 2);
    CHECK_EQ_INT(line.ns[2], 4);
    lp_cpu_split_apply(a, &line);
    lp_cpu_split_apply(b, &line);
    CHECK_EQ_INT(a[LP_M_CPU_PYTHON], 150);
    CHECK_EQ_INT(a[LP_M_CPU_NATIVE], 150);
    CHECK_EQ_INT(a[LP_M_CPU_SYSTEM], 300);
    CHECK_EQ_INT(b[LP_M_CPU_PYTHON], 100);
    CHECK_EQ_INT(b[LP_M_CPU_NATIVE], 100);
    CHECK_EQ_INT(b[LP_M_CPU_SYSTEM], 200);
    /* spent: the split columns are cleared, the rest untouched */
    CHECK_EQ_INT(a[LP_M_SPLIT_PYTHON] + a[LP_M_SPLIT_NATIVE] + a[LP_M_SPLIT_SYSTEM], 0);
    CHECK_EQ_INT(b[LP_M_SPLIT_SYSTEM], 0);
    CHECK_EQ_INT(a[LP_M_GIL], 600);
}

TEST(the_total_is_kept_exactly_when_the_shares_do_not_divide_it) {
    int64_t r[LP_M_COUNT];
    row_of(r, 1000, 1, 1, 1, 1);
    lp_cpu_split line = {{1, 1, 1}};
    lp_cpu_split_apply(r, &line);
    CHECK_EQ_INT(r[LP_M_CPU_PYTHON] + r[LP_M_CPU_NATIVE] + r[LP_M_CPU_SYSTEM], 1001);
    CHECK(r[LP_M_CPU_PYTHON] == 333 && r[LP_M_CPU_NATIVE] == 333);
}

TEST(a_line_without_split_samples_keeps_the_reads_rule) {
    int64_t r[LP_M_COUNT];
    row_of(r, 700, 300, 0, 0, 0);
    lp_cpu_split none = {{0, 0, 0}};
    lp_cpu_split_apply(r, &none);
    CHECK_EQ_INT(r[LP_M_CPU_PYTHON], 700);
    CHECK_EQ_INT(r[LP_M_CPU_NATIVE], 300);
    CHECK_EQ_INT(r[LP_M_CPU_SYSTEM], 0);
}

TEST(a_row_without_cpu_time_gets_none_and_loses_its_split) {
    /* a split sample on a row no read reached: no time to divide */
    int64_t r[LP_M_COUNT];
    row_of(r, 0, 0, 5, 0, 0);
    lp_cpu_split line = {{5, 0, 0}};
    lp_cpu_split_apply(r, &line);
    CHECK_EQ_INT(r[LP_M_CPU_PYTHON] + r[LP_M_CPU_NATIVE] + r[LP_M_CPU_SYSTEM], 0);
    CHECK_EQ_INT(r[LP_M_SPLIT_PYTHON], 0);
}

TEST(ten_minutes_of_ns_times_ns_do_not_overflow) {
    int64_t r[LP_M_COUNT];
    row_of(r, 600000000000LL, 0, 0, 0, 0);
    lp_cpu_split line = {{150000000000LL, 450000000000LL, 0}};
    lp_cpu_split_apply(r, &line);
    CHECK_EQ_INT(r[LP_M_CPU_PYTHON], 150000000000LL);
    CHECK_EQ_INT(r[LP_M_CPU_NATIVE], 450000000000LL);
    CHECK_EQ_INT(r[LP_M_CPU_SYSTEM], 0);
}

RUN_TESTS(a_lines_rows_are_divided_as_its_split_samples_found,
          the_total_is_kept_exactly_when_the_shares_do_not_divide_it,
          a_line_without_split_samples_keeps_the_reads_rule,
          a_row_without_cpu_time_gets_none_and_loses_its_split, ten_minutes_of_ns_times_ns_do_not_overflow)
