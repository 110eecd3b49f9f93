/* collect/remote: lprof dump --native's merge of native and Python frames,
 * on faked stacks (innermost first): eval calls replaced by their Python
 * groups, disagreements falling back to what is known. */
#include <stdint.h>

#include "collect/remote/native_merge.h"

#include "harness.h"

/* the merged stack as a string: n<i> for a native frame, p<i> for Python */
static const char *merged(const uint8_t *ev, int nn, int trunc, const uint8_t *entry, int npy,
                          int *mismatch) {
    static char buf[256];
    lp_nmerge_item out[32];
    int n = lp_nmerge(ev, nn, trunc, entry, npy, out, 32, mismatch);
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at + 8 < sizeof buf; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%c%d", i ? " " : "", out[i].kind ? 'p' : 'n',
                               out[i].index);
    return buf;
}

TEST(eval_names) {
    CHECK(lp_nmerge_is_eval("_PyEval_EvalFrameDefault"));
    CHECK(lp_nmerge_is_eval("_PyEval_EvalFrameDefault.cold"));
    CHECK(!lp_nmerge_is_eval("_PyEval_EvalFrameDefaultX"));
    CHECK(!lp_nmerge_is_eval("PyEval_EvalCode"));
    CHECK(!lp_nmerge_is_eval(""));
    CHECK(!lp_nmerge_is_eval(NULL));
}

TEST(each_eval_call_runs_its_group) {
    /* clock_nanosleep, time_sleep, eval (runs p0 p1), call, eval (p2), main */
    const uint8_t ev[] = {0, 0, 1, 0, 1, 0};
    const uint8_t entry[] = {0, 1, 1};
    int mm = -1;
    CHECK(strcmp(merged(ev, 6, 0, entry, 3, &mm), "n0 n1 p0 p1 n3 p2 n5") == 0);
    CHECK_EQ_INT(mm, 0);
}

TEST(one_frame_per_eval_call_as_310) {
    const uint8_t ev[] = {0, 1, 1, 1, 0};
    const uint8_t entry[] = {1, 1, 1};
    int mm = -1;
    CHECK(strcmp(merged(ev, 5, 0, entry, 3, &mm), "n0 p0 p1 p2 n4") == 0);
    CHECK_EQ_INT(mm, 0);
}

TEST(disagreement_falls_back) {
    int mm = 0;
    /* two eval calls, one Python group */
    const uint8_t ev[] = {0, 1, 0, 1, 0};
    const uint8_t one[] = {0, 1};
    CHECK(strcmp(merged(ev, 5, 0, one, 2, &mm), "n0 p0 p1") == 0);
    CHECK_EQ_INT(mm, 1);
    /* Python frames left over, the native walk complete */
    const uint8_t ev1[] = {0, 1, 0};
    const uint8_t two[] = {1, 1};
    CHECK(strcmp(merged(ev1, 3, 0, two, 2, &mm), "n0 p0 p1") == 0);
    CHECK_EQ_INT(mm, 1);
    /* ... but appended in order when the native walk was cut at its limit */
    CHECK(strcmp(merged(ev1, 3, 1, two, 2, &mm), "n0 p0 n2 p1") == 0);
    CHECK_EQ_INT(mm, 0);
}

TEST(no_python_and_bounded_output) {
    int mm = -1;
    const uint8_t ev[] = {0, 0};
    CHECK(strcmp(merged(ev, 2, 0, NULL, 0, &mm), "n0 n1") == 0);
    CHECK_EQ_INT(mm, 0);
    const uint8_t ev4[] = {0, 0, 0, 0};
    lp_nmerge_item out[2];
    CHECK_EQ_INT(lp_nmerge(ev4, 4, 0, NULL, 0, out, 2, &mm), 2);
}

RUN_TESTS(eval_names, each_eval_call_runs_its_group, one_frame_per_eval_call_as_310, disagreement_falls_back,
          no_python_and_bounded_output)
