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

TEST(eval_calls_found_by_their_entry_frames_314) {
    /* the main thread of Debian's 3.14: clock_nanosleep, time_sleep, the
     * eval loop's unnamed cold part (entry frame on its stack), its
     * caller; stacks grow down, so each caller's sp is higher */
    const uint64_t sp[] = {0x1000, 0x1040, 0x1100, 0x1500, 0x1600};
    const uint64_t shim[] = {0x1200};
    uint8_t ev[5];
    lp_nmerge_eval_by_stack(sp, 5, shim, 1, ev);
    const uint8_t want[] = {0, 0, 1, 0, 0};
    CHECK(memcmp(ev, want, 5) == 0);
    /* the bounds: from a frame's own sp (included) to its caller's (not) */
    const uint64_t at_sp[] = {0x1100}, at_caller[] = {0x1500};
    lp_nmerge_eval_by_stack(sp, 5, at_sp, 1, ev);
    CHECK(ev[2] && !ev[1] && !ev[3]);
    lp_nmerge_eval_by_stack(sp, 5, at_caller, 1, ev);
    CHECK(!ev[2] && ev[3]);
    /* two eval calls, two shims; merged as with named frames */
    const uint64_t two[] = {0x1050, 0x1520};
    lp_nmerge_eval_by_stack(sp, 5, two, 2, ev);
    const uint8_t want2[] = {0, 1, 0, 1, 0};
    CHECK(memcmp(ev, want2, 5) == 0);
    const uint8_t entry[] = {0, 1, 1};
    int mm = -1;
    CHECK(strcmp(merged(ev, 5, 0, entry, 3, &mm), "n0 p0 p1 n2 p2 n4") == 0);
    CHECK_EQ_INT(mm, 0);
}

TEST(stack_rule_finds_nothing_where_it_cannot_know) {
    uint8_t ev[4];
    /* the outermost frame: no known end to its part of the stack */
    const uint64_t sp[] = {0x1000, 0x1100, 0x1200, 0x1300};
    const uint64_t past[] = {0x1310};
    lp_nmerge_eval_by_stack(sp, 4, past, 1, ev);
    CHECK(!ev[0] && !ev[1] && !ev[2] && !ev[3]);
    /* an sp not read (0), or callers' sps out of order (a confused unwind) */
    const uint64_t bad[] = {0, 0x1100, 0x1080, 0x1300};
    const uint64_t in[] = {0x10, 0x1090, 0x1200};
    lp_nmerge_eval_by_stack(bad, 4, in, 3, ev);
    CHECK(!ev[0] && !ev[1] && ev[2] && !ev[3]);
    /* 3.10/3.11 give no shims (0): nothing */
    const uint64_t none[] = {0, 0};
    lp_nmerge_eval_by_stack(sp, 4, none, 2, ev);
    CHECK(!ev[0] && !ev[1] && !ev[2] && !ev[3]);
    /* a shim in no frame: one eval call fewer than groups, so a mismatch */
    const uint64_t lost[] = {0x1150, 0x5000};
    lp_nmerge_eval_by_stack(sp, 4, lost, 2, ev);
    const uint8_t entry[] = {1, 1};
    int mm = 0;
    CHECK(strcmp(merged(ev, 4, 0, entry, 2, &mm), "n0 p0 p1") == 0);
    CHECK_EQ_INT(mm, 1);
}

RUN_TESTS(eval_names, each_eval_call_runs_its_group, one_frame_per_eval_call_as_310, disagreement_falls_back,
          no_python_and_bounded_output, eval_calls_found_by_their_entry_frames_314,
          stack_rule_finds_nothing_where_it_cannot_know)
