/* code_memo: known code objects across outside reads (collect/code_memo.h):
 * what is put is found until forgotten, forgetting one leaves the others
 * findable past it, and a table full of forgotten slots starts over. */
#include <stdint.h>

#include "harness.h"
#include "collect/code_memo.h"

static lp_code_memo memo;
static char codes[1000]; /* their addresses are the fake code objects */

TEST(put_is_found_until_forgotten) {
    lp_code_memo_clear(&memo);
    int32_t ft = -1;
    CHECK(!lp_code_memo_get(&memo, &codes[1], &ft));
    lp_code_memo_put(&memo, &codes[1], 7);
    REQUIRE(lp_code_memo_get(&memo, &codes[1], &ft));
    CHECK_EQ_INT(ft, 7);
    lp_code_memo_forget(&memo, &codes[1]);
    CHECK(!lp_code_memo_get(&memo, &codes[1], &ft));
    CHECK(!lp_code_memo_get(&memo, NULL, &ft));
}

TEST(forgetting_one_keeps_the_others_findable) {
    lp_code_memo_clear(&memo);
    for (int i = 0; i < 300; i++) lp_code_memo_put(&memo, &codes[i * 3], i);
    for (int i = 0; i < 300; i += 2) lp_code_memo_forget(&memo, &codes[i * 3]);
    int ok = 1;
    for (int i = 0; i < 300; i++) {
        int32_t ft = -1;
        int found = lp_code_memo_get(&memo, &codes[i * 3], &ft);
        if (found != (i % 2) || (found && ft != i)) ok = 0;
    }
    CHECK(ok);
}

TEST(a_full_table_starts_over) {
    lp_code_memo_clear(&memo);
    for (int i = 0; i < 1000; i++) {
        lp_code_memo_put(&memo, &codes[i], i);
        lp_code_memo_forget(&memo, &codes[i]);
    }
    CHECK(memo.used <= LP_CODE_MEMO_SLOTS / 4 * 3);
    lp_code_memo_put(&memo, &codes[5], 55);
    int32_t ft = -1;
    CHECK(lp_code_memo_get(&memo, &codes[5], &ft) && ft == 55);
}

RUN_TESTS(put_is_found_until_forgotten, forgetting_one_keeps_the_others_findable, a_full_table_starts_over)
