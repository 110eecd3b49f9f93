/* export_folded: sorted, merged, sanitized folded text; flame rectangles. */
#include <stdlib.h>

#include "export/folded.h"
#include "harness.h"

static char *fold_to_string(lp_folded *f) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    lp_folded_write(f, m);
    fclose(m);
    return buf;
}

TEST(folded_text_sorted_merged_sanitized) {
    const char *names[] = {"main (a.py:1)", "f (a.py:5)", "g;h (b.py:2)", "f (a.py:5)", "x\ny (c.py:9)"};
    /* stacks root first; name ids 1 and 3 have the same text and merge */
    uint32_t ids[] = {0, 1, 0, 2, 0, 3, 0, 4, 0};
    size_t offsets[] = {0, 2, 4, 6, 8, 9, 9};
    int64_t values[] = {10, 5, 7, 3, 2, 99};
    const char *err = NULL;
    lp_folded *f = lp_folded_build(names, 5, ids, offsets, values, 6, &err);
    REQUIRE(f != NULL);
    char *text = fold_to_string(f);
    const char *expected = "main (a.py:1) 2\n"
                           "main (a.py:1);f (a.py:5) 17\n"
                           "main (a.py:1);g_h (b.py:2) 5\n"
                           "main (a.py:1);x_y (c.py:9) 3\n";
    CHECK(strcmp(text, expected) == 0);
    if (strcmp(text, expected) != 0) fprintf(stderr, "got:\n%s", text);
    CHECK_EQ_INT(lp_folded_count(f), 4);
    CHECK_EQ_INT(lp_folded_total(f), 27);
    free(text);

    size_t n = 0;
    lp_flame_rect *r = lp_folded_flame(f, 0, &n);
    REQUIRE(r != NULL);
    /* main spans everything at depth 0; f has width 17 at depth 1 */
    int saw_main = 0, saw_f = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].depth == 0) {
            saw_main++;
            CHECK_EQ_INT(r[i].width, 27);
            CHECK_EQ_INT(r[i].x, 0);
        }
        if (r[i].depth == 1 && r[i].width == 17) {
            saw_f++;
            CHECK_EQ_INT(r[i].x, 2);
        }
    }
    CHECK_EQ_INT(saw_main, 1);
    CHECK_EQ_INT(saw_f, 1);
    CHECK_EQ_INT(n, 4);
    free(r);
    r = lp_folded_flame(f, 10, &n); /* only main (27) and f (17) */
    CHECK_EQ_INT(n, 2);
    free(r);
    lp_folded_free(f);
}

TEST(bad_id_is_an_error) {
    const char *names[] = {"a (x:1)"};
    uint32_t ids[] = {3};
    size_t offsets[] = {0, 1};
    int64_t values[] = {1};
    const char *err = NULL;
    CHECK(lp_folded_build(names, 1, ids, offsets, values, 1, &err) == NULL);
    CHECK(err != NULL && strstr(err, "range") != NULL);
}

RUN_TESTS(folded_text_sorted_merged_sanitized, bad_id_is_an_error)
