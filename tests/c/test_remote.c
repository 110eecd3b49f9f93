/* collect/remote: line tables of 3.10 and 3.11+ decoded as CPython lays
 * them out, malformed ones refused; reads of addresses that cannot be read. */
#include <unistd.h>

#include "collect/remote/remote.h"
#include "harness.h"

TEST(line_table_310) {
    /* 6 bytes at +0 lines, 4 bytes at +2, 2 bytes with no line, 4 bytes at -1 */
    const uint8_t t[] = {6, 0, 4, 2, 2, (uint8_t)-128, 4, (uint8_t)-1};
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 0), 10);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 2), 10);  /* byte 4 */
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 3), 12);  /* byte 6 */
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 5), -1);  /* byte 10 */
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 6), 11);  /* byte 12 */
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, 8), -1);  /* past the end */
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 10, LP_REMOTE_FRAMES_310, -1), 10); /* not started */
}

TEST(line_table_311) {
    const uint8_t t[] = {
        0x80 | (13 << 3) | 0, 0x02,             /* 1 unit, no column, line +1 */
        0x80 | (11 << 3) | 2, 4, 8,             /* 3 units, one-line form, +1 */
        0x80 | (3 << 3) | 1, 7,                 /* 2 units, short form, same line */
        0x80 | (14 << 3) | 0, 0x05, 0, 1, 1,    /* 1 unit, long form, line -2 */
        0x80 | (15 << 3) | 1,                   /* 2 units, no location */
        0x80 | (13 << 3) | 0, 0x40 | 0x08, 0x01 /* 1 unit, line +(8 | 1 << 6) >> 1 = +36 */
    };
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 0), 6);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 1), 7);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 3), 7);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 5), 7);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 6), 5);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 7), -1);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 9), 41);
    CHECK_EQ_INT(lp_remote_line_of(t, sizeof t, 5, LP_REMOTE_FRAMES_311, 10), -1);
}

TEST(malformed_tables_give_no_line) {
    const uint8_t no_high_bit[] = {0x05, 0x80};
    CHECK_EQ_INT(lp_remote_line_of(no_high_bit, sizeof no_high_bit, 1, LP_REMOTE_FRAMES_311, 0), -1);
    const uint8_t cut_varint[] = {0x80 | (13 << 3), 0x40};  /* continuation, then the end */
    CHECK_EQ_INT(lp_remote_line_of(cut_varint, sizeof cut_varint, 1, LP_REMOTE_FRAMES_311, 0), -1);
    const uint8_t cut_columns[] = {0x80 | (10 << 3), 1};     /* one of two column bytes */
    CHECK_EQ_INT(lp_remote_line_of(cut_columns, sizeof cut_columns, 1, LP_REMOTE_FRAMES_311, 0), -1);
    const uint8_t endless[] = {0x80 | (13 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
    CHECK_EQ_INT(lp_remote_line_of(endless, sizeof endless, 1, LP_REMOTE_FRAMES_311, 0), -1);
    CHECK_EQ_INT(lp_remote_line_of(NULL, 0, 1, LP_REMOTE_FRAMES_311, 0), -1);
}

TEST(reads_are_checked) {
    static uint64_t word = 0x1122334455667788ull;
    uint64_t got = 0;
    CHECK_EQ_INT(lp_remote_read(getpid(), (uint64_t)(uintptr_t)&word, &got, sizeof got), LP_REMOTE_OK);
    CHECK(got == word);
    CHECK_EQ_INT(lp_remote_read(getpid(), 0, &got, sizeof got), LP_REMOTE_BADREAD);
    CHECK_EQ_INT(lp_remote_read(getpid(), 4096, &got, sizeof got), LP_REMOTE_BADREAD);
    CHECK_EQ_INT(lp_remote_read(getpid(), 0x0000800000000000ull - 4, &got, sizeof got), LP_REMOTE_BADREAD);
    /* a walk with a layout that says nothing is refused before any read */
    lp_remote_layout empty = {0};
    lp_remote_sink sink = {0};
    CHECK_EQ_INT(lp_remote_walk(getpid(), 4096, &empty, &sink), LP_REMOTE_LAYOUT);
}

RUN_TESTS(line_table_310, line_table_311, malformed_tables_give_no_line, reads_are_checked)
