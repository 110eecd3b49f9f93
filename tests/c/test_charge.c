/* The sample-charging rule (collect/charge.c): which CPU column a sample
 * goes to, and everything a sample adds to its stack. */
#include "harness.h"

#include "collect/charge.h"

static int at_call_answer, at_call_asked;

static int fake_at_call(const lp_sample *s, void *arg) {
    (void)s;
    CHECK(arg == &at_call_answer);
    at_call_asked++;
    return at_call_answer;
}

static lp_metric cpu_of(uint32_t flags, int at_call, int *asked) {
    lp_sample s = {0};
    s.flags = flags;
    s.weight = 1;
    at_call_answer = at_call;
    at_call_asked = 0;
    lp_metric m = lp_charge_cpu_metric(&s, fake_at_call, &at_call_answer);
    *asked = at_call_asked;
    return m;
}

TEST(python_needs_the_gil_and_the_interpreter) {
    int asked;
    CHECK_EQ_INT(cpu_of(LP_SF_GIL | LP_SF_IN_INTERP | LP_SF_IN_EVAL, 1, &asked), LP_M_CPU_PYTHON);
    CHECK_EQ_INT(asked, 0); /* in the eval loop itself: never at a C call */
    CHECK_EQ_INT(cpu_of(LP_SF_GIL | LP_SF_IN_INTERP, 0, &asked), LP_M_CPU_PYTHON);
    CHECK_EQ_INT(asked, 1);
    CHECK_EQ_INT(cpu_of(LP_SF_GIL, 0, &asked), LP_M_CPU_NATIVE);
    CHECK_EQ_INT(asked, 0);
    CHECK_EQ_INT(cpu_of(LP_SF_IN_INTERP | LP_SF_IN_EVAL, 0, &asked), LP_M_CPU_NATIVE);
    CHECK_EQ_INT(cpu_of(0, 0, &asked), LP_M_CPU_NATIVE);
    CHECK_EQ_INT(asked, 0);
}

TEST(outside_the_eval_loop_at_a_call_is_native) {
    int asked;
    CHECK_EQ_INT(cpu_of(LP_SF_GIL | LP_SF_IN_INTERP, 1, &asked), LP_M_CPU_NATIVE);
    CHECK_EQ_INT(asked, 1);
    lp_sample s = {0};
    s.flags = LP_SF_GIL | LP_SF_IN_INTERP;
    CHECK_EQ_INT(lp_charge_cpu_metric(&s, NULL, NULL), LP_M_CPU_PYTHON); /* no check: not at a call */
}

TEST(a_system_call_is_system_time_whatever_else) {
    int asked;
    CHECK_EQ_INT(cpu_of(LP_SF_SYSCALL, 1, &asked), LP_M_CPU_SYSTEM);
    CHECK_EQ_INT(cpu_of(LP_SF_SYSCALL | LP_SF_GIL | LP_SF_IN_INTERP, 1, &asked), LP_M_CPU_SYSTEM);
    CHECK_EQ_INT(asked, 0);
    CHECK_EQ_INT(cpu_of(LP_SF_SYSCALL | LP_SF_GIL | LP_SF_IN_INTERP | LP_SF_IN_EVAL, 0, &asked),
                 LP_M_CPU_SYSTEM);
}

TEST(cpu_mode_sample_adds_its_column_and_count) {
    lp_sample s = {0};
    s.flags = LP_SF_GIL | LP_SF_IN_INTERP | LP_SF_IN_EVAL;
    s.weight = 3; /* two overruns */
    lp_charge c;
    lp_charge_sample(&s, 1000000, LP_MODE_CPU, NULL, NULL, &c);
    CHECK_EQ_INT(c.weight_ns, 3000000);
    CHECK_EQ_INT(c.cpu, LP_M_CPU_PYTHON);
    REQUIRE(c.n == 3);
    CHECK_EQ_INT(c.add[0].metric, LP_M_CPU_PYTHON);
    CHECK_EQ_INT(c.add[0].value, 3000000);
    CHECK_EQ_INT(c.add[1].metric, LP_M_GIL); /* Python time always holds the GIL */
    CHECK_EQ_INT(c.add[1].value, 3000000);
    CHECK_EQ_INT(c.add[2].metric, LP_M_SAMPLES);
    CHECK_EQ_INT(c.add[2].value, 3);
}

TEST(gil_time_is_the_time_the_thread_held_it) {
    lp_sample s = {0};
    s.flags = LP_SF_GIL; /* native code that kept the GIL (a C call that does not release it) */
    s.weight = 2;
    lp_charge c;
    lp_charge_sample(&s, 1000, LP_MODE_WALL, NULL, NULL, &c);
    CHECK_EQ_INT(c.cpu, LP_M_CPU_NATIVE);
    REQUIRE(c.n == 4);
    CHECK_EQ_INT(c.add[1].metric, LP_M_WALL);
    CHECK_EQ_INT(c.add[2].metric, LP_M_GIL);
    CHECK_EQ_INT(c.add[2].value, 2000);
    CHECK_EQ_INT(c.add[3].metric, LP_M_SAMPLES);
    s.flags = 0; /* released it (a blocking call, hashing a large buffer): no GIL time */
    lp_charge_sample(&s, 1000, LP_MODE_CPU, NULL, NULL, &c);
    REQUIRE(c.n == 2);
    CHECK_EQ_INT(c.add[0].metric, LP_M_CPU_NATIVE);
    CHECK_EQ_INT(c.add[1].metric, LP_M_SAMPLES);
}

TEST(wall_mode_sample_adds_wall_time_too) {
    lp_sample s = {0};
    s.flags = LP_SF_SYSCALL;
    s.weight = 1;
    lp_charge c;
    lp_charge_sample(&s, 5000, LP_MODE_WALL, NULL, NULL, &c);
    CHECK_EQ_INT(c.cpu, LP_M_CPU_SYSTEM);
    REQUIRE(c.n == 3);
    CHECK_EQ_INT(c.add[0].metric, LP_M_CPU_SYSTEM);
    CHECK_EQ_INT(c.add[0].value, 5000);
    CHECK_EQ_INT(c.add[1].metric, LP_M_WALL);
    CHECK_EQ_INT(c.add[1].value, 5000);
    CHECK_EQ_INT(c.add[2].metric, LP_M_SAMPLES);
    CHECK_EQ_INT(c.add[2].value, 1);
}

TEST(detached_sample_is_wall_time_and_capped_native_cpu) {
    lp_sample s = {0};
    s.flags = LP_SF_DETACHED | LP_SF_GIL | LP_SF_IN_INTERP;
    s.weight = 2;
    s.cpu_ns = 1500;
    lp_charge c;
    at_call_asked = 0;
    lp_charge_sample(&s, 1000, LP_MODE_WALL, fake_at_call, &at_call_answer, &c);
    CHECK_EQ_INT(at_call_asked, 0);
    CHECK_EQ_INT(c.cpu, LP_M_COUNT);
    REQUIRE(c.n == 3);
    CHECK_EQ_INT(c.add[0].metric, LP_M_WALL);
    CHECK_EQ_INT(c.add[0].value, 2000);
    CHECK_EQ_INT(c.add[1].metric, LP_M_CPU_NATIVE);
    CHECK_EQ_INT(c.add[1].value, 1500);
    CHECK_EQ_INT(c.add[2].metric, LP_M_SAMPLES);
    CHECK_EQ_INT(c.add[2].value, 2);
    s.cpu_ns = 9999; /* more CPU than the sample's weight: capped at it */
    lp_charge_sample(&s, 1000, LP_MODE_WALL, NULL, NULL, &c);
    CHECK_EQ_INT(c.add[1].value, 2000);
    s.cpu_ns = 0; /* no CPU time: wall time and the count only */
    lp_charge_sample(&s, 1000, LP_MODE_WALL, NULL, NULL, &c);
    REQUIRE(c.n == 2);
    CHECK_EQ_INT(c.add[0].metric, LP_M_WALL);
    CHECK_EQ_INT(c.add[1].metric, LP_M_SAMPLES);
}

/* A sample limited to what its thread's CPU clock allowed: its CPU and GIL
 * time in proportion, its count whole; a limit at or above its weight, or
 * below 0, changes nothing or takes all its time. */
TEST(a_limited_sample_keeps_its_count_and_loses_time_in_proportion) {
    lp_sample s = {0};
    s.flags = LP_SF_GIL | LP_SF_IN_INTERP | LP_SF_IN_EVAL;
    s.weight = 4;
    lp_charge c;
    lp_charge_sample(&s, 1000, LP_MODE_CPU, NULL, NULL, &c);
    REQUIRE(c.n == 3);
    lp_charge_limit(&c, 5000);
    CHECK_EQ_INT(c.add[0].metric, LP_M_CPU_PYTHON);
    CHECK_EQ_INT(c.add[0].value, 4000);
    lp_charge_limit(&c, 1000);
    CHECK_EQ_INT(c.weight_ns, 1000);
    CHECK_EQ_INT(c.add[0].value, 1000);
    CHECK_EQ_INT(c.add[1].metric, LP_M_GIL);
    CHECK_EQ_INT(c.add[1].value, 1000);
    CHECK_EQ_INT(c.add[2].metric, LP_M_SAMPLES);
    CHECK_EQ_INT(c.add[2].value, 4);
    lp_charge_limit(&c, -5);
    CHECK_EQ_INT(c.weight_ns, 0);
    CHECK_EQ_INT(c.add[0].value, 0);
    CHECK_EQ_INT(c.add[2].value, 4);
}

TEST(an_outside_read_is_its_cpu_time_python_or_native_by_its_leaf) {
    /* read from outside as it ran: no PC, so the leaf decides; its weight
     * is the CPU time it covers, held with the GIL */
    for (int at_call = 0; at_call <= 1; at_call++) {
        lp_sample s = {0};
        s.flags = LP_SF_OUTSIDE | LP_SF_GIL;
        s.weight = 1;
        s.cpu_ns = 130000;
        at_call_answer = at_call;
        at_call_asked = 0;
        lp_charge c;
        lp_charge_sample(&s, 100000, LP_MODE_CPU, fake_at_call, &at_call_answer, &c);
        CHECK_EQ_INT(at_call_asked, 1);
        CHECK_EQ_INT(c.cpu, at_call ? LP_M_CPU_NATIVE : LP_M_CPU_PYTHON);
        CHECK_EQ_INT(c.weight_ns, 130000);
        REQUIRE(c.n == 3);
        CHECK_EQ_INT(c.add[0].metric, c.cpu);
        CHECK_EQ_INT(c.add[0].value, 130000);
        CHECK_EQ_INT(c.add[1].metric, LP_M_GIL);
        CHECK_EQ_INT(c.add[1].value, 130000);
        CHECK_EQ_INT(c.add[2].metric, LP_M_SAMPLES);
        CHECK_EQ_INT(c.add[2].value, 1);
    }
}

TEST(a_split_sample_charges_only_its_kind_of_time) {
    /* beside outside reads: the PC's rule picks a split column, which gets
     * the split period; no CPU column, no sample count, no weight to limit */
    const struct {
        uint32_t flags;
        lp_metric want;
    } cases[] = {
        {LP_SF_GIL | LP_SF_IN_INTERP | LP_SF_IN_EVAL, LP_M_SPLIT_PYTHON},
        {LP_SF_GIL, LP_M_SPLIT_NATIVE},
        {LP_SF_GIL | LP_SF_SYSCALL, LP_M_SPLIT_SYSTEM},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lp_sample s = {0};
        s.flags = cases[i].flags | LP_SF_SPLIT;
        s.weight = 1;
        s.cpu_ns = 4000000;
        lp_charge c;
        lp_charge_sample(&s, 100000, LP_MODE_CPU, NULL, NULL, &c);
        CHECK_EQ_INT(c.cpu, LP_M_COUNT);
        CHECK_EQ_INT(c.weight_ns, 0);
        REQUIRE(c.n == 1);
        CHECK_EQ_INT(c.add[0].metric, cases[i].want);
        CHECK_EQ_INT(c.add[0].value, 4000000);
    }
}

RUN_TESTS(a_split_sample_charges_only_its_kind_of_time,
          an_outside_read_is_its_cpu_time_python_or_native_by_its_leaf,
          python_needs_the_gil_and_the_interpreter, outside_the_eval_loop_at_a_call_is_native,
          a_system_call_is_system_time_whatever_else, cpu_mode_sample_adds_its_column_and_count,
          wall_mode_sample_adds_wall_time_too, detached_sample_is_wall_time_and_capped_native_cpu,
          gil_time_is_the_time_the_thread_held_it,
          a_limited_sample_keeps_its_count_and_loses_time_in_proportion)
