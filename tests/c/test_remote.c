/* collect/remote: line tables of 3.10 and 3.11+ decoded as CPython lays
 * them out, malformed ones refused; reads of addresses that cannot be read. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect/remote/remote.h"

#include <stddef.h>
#include <stdio.h>
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
        0x80 | (13 << 3) | 0, 0x02,                   /* 1 unit, no column, line +1 */
        0x80 | (11 << 3) | 2, 4,           8,         /* 3 units, one-line form, +1 */
        0x80 | (3 << 3) | 1,  7,                      /* 2 units, short form, same line */
        0x80 | (14 << 3) | 0, 0x05,        0,   1, 1, /* 1 unit, long form, line -2 */
        0x80 | (15 << 3) | 1,                         /* 2 units, no location */
        0x80 | (13 << 3) | 0, 0x40 | 0x08, 0x01       /* 1 unit, line +(8 | 1 << 6) >> 1 = +36 */
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
    const uint8_t cut_varint[] = {0x80 | (13 << 3), 0x40}; /* continuation, then the end */
    CHECK_EQ_INT(lp_remote_line_of(cut_varint, sizeof cut_varint, 1, LP_REMOTE_FRAMES_311, 0), -1);
    const uint8_t cut_columns[] = {0x80 | (10 << 3), 1}; /* one of two column bytes */
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

/* ---- a walk over structures faked in this process (it reads itself) ---- */

typedef struct {
    _Alignas(8) uint32_t state;
    uint32_t pad;
    int64_t length;
    char data[16];
} fake_str;
typedef struct {
    _Alignas(8) int64_t size;
    uint8_t sval[8];
} fake_bytes;
typedef struct {
    _Alignas(8) uint64_t pad;
    const char *tp_name;
} fake_type;
typedef struct {
    _Alignas(8) uint64_t ob_type, filename, name, linetable;
    int32_t firstlineno, pad;
    uint8_t code[16];
} fake_code;
typedef struct {
    _Alignas(8) uint64_t previous, code, instr;
    uint8_t owner, is_entry;
} fake_frame;
typedef struct {
    _Alignas(8) uint64_t next, tid, ntid, frame;
} fake_ts;
typedef struct {
    _Alignas(8) uint64_t next, threads_head;
} fake_interp;

#define U(p)          ((uint64_t)(uintptr_t)(p))
#define COMPACT_ASCII ((1u << 2) | (1u << 5) | (1u << 6)) /* kind 1, compact, ascii */

static const lp_remote_layout fake_layout = {
    .version_hex = 0x030D0000,
    .frame_model = LP_REMOTE_FRAMES_313,
    .rt_interpreters_head = 0,
    .is_next = offsetof(fake_interp, next),
    .is_threads_head = offsetof(fake_interp, threads_head),
    .ts_next = offsetof(fake_ts, next),
    .ts_thread_id = offsetof(fake_ts, tid),
    .ts_native_thread_id = offsetof(fake_ts, ntid),
    .ts_frame = offsetof(fake_ts, frame),
    .cframe_current_frame = LP_REMOTE_ABSENT,
    .fr_previous = offsetof(fake_frame, previous),
    .fr_code = offsetof(fake_frame, code),
    .fr_instr = offsetof(fake_frame, instr),
    .fr_owner = offsetof(fake_frame, owner),
    .co_filename = offsetof(fake_code, filename),
    .co_name = offsetof(fake_code, name),
    .co_qualname = LP_REMOTE_ABSENT,
    .co_linetable = offsetof(fake_code, linetable),
    .co_firstlineno = offsetof(fake_code, firstlineno),
    .co_code_adaptive = offsetof(fake_code, code),
    .ob_type = 0,
    .tp_name = offsetof(fake_type, tp_name),
    .bytes_size = 0,
    .bytes_sval = offsetof(fake_bytes, sval),
    .u_state = 0,
    .u_length = offsetof(fake_str, length),
    .u_ascii_size = offsetof(fake_str, data),
    .u_compact_size = offsetof(fake_str, data),
    .fr_localsplus = LP_REMOTE_ABSENT,
    .co_localsplusnames = LP_REMOTE_ABSENT,
    .tuple_size = LP_REMOTE_ABSENT,
    .tuple_item = LP_REMOTE_ABSENT,
    .float_fval = LP_REMOTE_ABSENT,
    .long_size = LP_REMOTE_ABSENT,
    .long_digits = LP_REMOTE_ABSENT,
};

static fake_type code_type = {0, "code"}, list_type = {0, "list"};
static fake_str file_str = {COMPACT_ASCII, 0, 6, "mod.py"}, func_str = {COMPACT_ASCII, 0, 4, "func"};
/* units 0-1 at firstlineno+1, 2-3 at +3 (no-column entries) */
static fake_bytes table = {4, {0x80 | (13 << 3) | 1, 0x02, 0x80 | (13 << 3) | 1, 0x04}};
static fake_code code;

typedef struct {
    int threads, frames, bad_threads, last_line;
    char last_func[16];
} tally;

static int t_thread(void *ctx, uint64_t tid, uint64_t ntid) {
    (void)tid;
    (void)ntid;
    ((tally *)ctx)->threads++;
    return 0;
}
static int t_frame(void *ctx, const char *file, const char *func, int line) {
    tally *t = ctx;
    t->frames++;
    t->last_line = line;
    snprintf(t->last_func, sizeof t->last_func, "%s", func);
    return strcmp(file, "mod.py") != 0; /* a wrong file name stops the walk */
}
static int t_end(void *ctx, int status) {
    if (status != LP_REMOTE_OK) ((tally *)ctx)->bad_threads++;
    return 0;
}

static int walk_fake(fake_interp *interp, tally *t) {
    static uint64_t runtime_head;
    runtime_head = U(interp);
    memset(t, 0, sizeof *t);
    code = (fake_code){U(&code_type), U(&file_str), U(&func_str), U(&table), 10, 0, {0}};
    lp_remote_sink sink = {.thread = t_thread, .frame = t_frame, .end_thread = t_end, .ctx = t};
    return lp_remote_walk(getpid(), U(&runtime_head), &fake_layout, &sink);
}

TEST(walk_reads_frames_and_lines) {
    static fake_frame outer, inner;
    static fake_ts ts;
    static fake_interp interp;
    outer = (fake_frame){0, U(&code), U(code.code) + 0, 0};
    inner = (fake_frame){U(&outer), U(&code), U(code.code) + 4, 0}; /* unit 2 */
    ts = (fake_ts){0, 1, 2, U(&inner)};
    interp = (fake_interp){0, U(&ts)};
    tally t;
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK);
    CHECK_EQ_INT(t.threads, 1);
    CHECK_EQ_INT(t.frames, 2);
    CHECK_EQ_INT(t.last_line, 11); /* outer, unit 0: firstlineno + 1 */
    CHECK(strcmp(t.last_func, "func") == 0);
    CHECK_EQ_INT(t.bad_threads, 0);
    /* a C-stack entry frame (owner 3) is skipped */
    outer.owner = 3;
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK);
    CHECK_EQ_INT(t.frames, 1);
    CHECK_EQ_INT(t.last_line, 13);
}

/* the entry sink (lprof dump --native): the index of each frame after
 * which it was called, the outermost frame of one eval call, and the
 * address of the entry frame that ended it (3.12+) */
typedef struct {
    tally t;
    int n, at[8];
    uint64_t shim[8];
} entries;
static int t_entry(void *ctx, uint64_t shim) {
    entries *e = ctx;
    if (e->n < 8) {
        e->shim[e->n] = shim;
        e->at[e->n++] = e->t.frames - 1;
    }
    return 0;
}
static int walk_entries(fake_interp *interp, const lp_remote_layout *L, entries *e) {
    static uint64_t runtime_head;
    runtime_head = U(interp);
    memset(e, 0, sizeof *e);
    code = (fake_code){U(&code_type), U(&file_str), U(&func_str), U(&table), 10, 0, {0}};
    lp_remote_sink sink = {
        .thread = t_thread, .frame = t_frame, .end_thread = t_end, .entry = t_entry, .ctx = e};
    return lp_remote_walk(getpid(), U(&runtime_head), L, &sink);
}

TEST(walk_marks_entry_frames) {
    static fake_frame f0, f1, shim1, f2, shim2;
    static fake_ts ts;
    static fake_interp interp;
    entries e;
    /* 3.12+: the frame just inside an entry frame (owner 3) ends its group */
    shim2 = (fake_frame){0, 0, 0, 3, 0};
    f2 = (fake_frame){U(&shim2), U(&code), U(code.code), 0, 0};
    shim1 = (fake_frame){U(&f2), 0, 0, 3, 0};
    f1 = (fake_frame){U(&shim1), U(&code), U(code.code), 0, 0};
    f0 = (fake_frame){U(&f1), U(&code), U(code.code), 0, 0};
    ts = (fake_ts){0, 1, 2, U(&f0)};
    interp = (fake_interp){0, U(&ts)};
    lp_remote_layout L = fake_layout;
    L.fr_is_entry = LP_REMOTE_ABSENT;
    CHECK_EQ_INT(walk_entries(&interp, &L, &e), LP_REMOTE_OK);
    CHECK_EQ_INT(e.t.frames, 3);
    CHECK_EQ_INT(e.n, 2);
    CHECK_EQ_INT(e.at[0], 1);
    CHECK_EQ_INT(e.at[1], 2);
    CHECK(e.shim[0] == U(&shim1) && e.shim[1] == U(&shim2)); /* what 3.14+'s merge looks for on the C stack */
    /* a second entry frame in a row (3.14's base frame after the last shim) ends no group */
    static fake_frame base;
    base = (fake_frame){0, 0, 0, 3, 0};
    shim2.previous = U(&base);
    CHECK_EQ_INT(walk_entries(&interp, &L, &e), LP_REMOTE_OK);
    CHECK_EQ_INT(e.n, 2);
    CHECK(e.shim[1] == U(&shim2));
    /* 3.11: the frame's is_entry byte, no entry frames of their own */
    f0 = (fake_frame){U(&f1), U(&code), U(code.code), 0, 0};
    f1 = (fake_frame){U(&f2), U(&code), U(code.code), 0, 1};
    f2 = (fake_frame){0, U(&code), U(code.code), 0, 1};
    L.fr_is_entry = offsetof(fake_frame, is_entry);
    CHECK_EQ_INT(walk_entries(&interp, &L, &e), LP_REMOTE_OK);
    CHECK_EQ_INT(e.t.frames, 3);
    CHECK_EQ_INT(e.n, 2);
    CHECK_EQ_INT(e.at[0], 1);
    CHECK_EQ_INT(e.at[1], 2);
    CHECK(e.shim[0] == 0 && e.shim[1] == 0); /* no entry frame to give */
    /* 3.10: one eval call per frame */
    L.frame_model = LP_REMOTE_FRAMES_310;
    L.fr_is_entry = LP_REMOTE_ABSENT;
    CHECK_EQ_INT(walk_entries(&interp, &L, &e), LP_REMOTE_OK);
    CHECK_EQ_INT(e.n, 3);
    CHECK_EQ_INT(e.at[0], 0);
    CHECK_EQ_INT(e.at[2], 2);
}

TEST(walk_is_bounded_on_cycles) {
    static fake_frame loop;
    static fake_ts ts;
    static fake_interp interp;
    tally t;
    /* a frame that is its own caller: LP_REMOTE_MAX_DEPTH frames, then the next thread */
    loop = (fake_frame){0, U(&code), U(code.code), 0};
    loop.previous = U(&loop);
    ts = (fake_ts){0, 1, 2, U(&loop)};
    interp = (fake_interp){0, U(&ts)};
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK);
    CHECK_EQ_INT(t.threads, 1);
    CHECK_EQ_INT(t.frames, LP_REMOTE_MAX_DEPTH);
    /* a thread that is its own next (no frames): LP_REMOTE_MAX_THREADS of it */
    ts = (fake_ts){0, 1, 2, 0};
    ts.next = U(&ts);
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK);
    CHECK_EQ_INT(t.threads, LP_REMOTE_MAX_THREADS);
    /* an interpreter that is its own next (no threads): LP_REMOTE_MAX_INTERPS of it */
    interp = (fake_interp){0, 0};
    interp.next = U(&interp);
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK);
    CHECK_EQ_INT(t.threads, 0);
}

TEST(walk_survives_bad_frames) {
    static fake_code not_code;
    static fake_frame bad_type, unmapped, misaligned;
    static fake_ts t1, t2, t3;
    static fake_interp interp;
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(page != MAP_FAILED);
    munmap(page, 4096);
    not_code = (fake_code){U(&list_type), U(&file_str), U(&func_str), U(&table), 1, 0, {0}};
    bad_type = (fake_frame){0, U(&not_code), U(not_code.code), 0};
    unmapped = (fake_frame){0, U(page), U(page), 0};
    misaligned = (fake_frame){0, U(&code) + 1, U(code.code), 0};
    t3 = (fake_ts){0, 3, 3, U(&misaligned)};
    t2 = (fake_ts){U(&t3), 2, 2, U(&unmapped)};
    t1 = (fake_ts){U(&t2), 1, 1, U(&bad_type)};
    interp = (fake_interp){0, U(&t1)};
    tally t;
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_OK); /* each thread cut, the walk goes on */
    CHECK_EQ_INT(t.threads, 3);
    CHECK_EQ_INT(t.frames, 0);
    CHECK_EQ_INT(t.bad_threads, 3);
    /* an interpreter list that leads into nothing is the walk's error */
    interp.threads_head = U(page);
    CHECK_EQ_INT(walk_fake(&interp, &t), LP_REMOTE_BADREAD);
}

/* 3.14+: f_executable a _PyStackRef (tag bits 0-1), frame owners 3 and 4 run no code */
TEST(walk_clears_stackref_tags) {
    static fake_frame outer, inner, base;
    static fake_ts ts;
    static fake_interp interp;
    lp_remote_layout L = fake_layout;
    L.version_hex = 0x030E0000;
    L.frame_model = LP_REMOTE_FRAMES_314;
    base = (fake_frame){0, U(&code) | 1, U(code.code), 3};             /* the thread's base frame */
    outer = (fake_frame){U(&base), U(&code) | 1, U(code.code) + 0, 0}; /* a borrowed reference */
    inner = (fake_frame){U(&outer), U(&code), U(code.code) + 4, 4};    /* a C-stack entry frame */
    static fake_frame top;
    top = (fake_frame){U(&inner), U(&code), U(code.code) + 4, 0}; /* unit 2 */
    ts = (fake_ts){0, 1, 2, U(&top)};
    interp = (fake_interp){0, U(&ts)};
    static uint64_t runtime_head;
    runtime_head = U(&interp);
    tally t;
    memset(&t, 0, sizeof t);
    code = (fake_code){U(&code_type), U(&file_str), U(&func_str), U(&table), 10, 0, {0}};
    lp_remote_sink sink = {.thread = t_thread, .frame = t_frame, .end_thread = t_end, .ctx = &t};
    CHECK_EQ_INT(lp_remote_walk(getpid(), U(&runtime_head), &L, &sink), LP_REMOTE_OK);
    CHECK_EQ_INT(t.frames, 2); /* top and outer; inner (owner 4) and base (3) skipped */
    CHECK_EQ_INT(t.last_line, 11);
    CHECK_EQ_INT(t.bad_threads, 0);
    /* the same tagged pointer under the 3.13 model is a misaligned one: the thread is cut */
    L.frame_model = LP_REMOTE_FRAMES_313;
    memset(&t, 0, sizeof t);
    CHECK_EQ_INT(lp_remote_walk(getpid(), U(&runtime_head), &L, &sink), LP_REMOTE_OK);
    CHECK_EQ_INT(t.frames, 1);
    CHECK_EQ_INT(t.bad_threads, 1);
}

/* ---- _Py_DebugOffsets tables faked in this process ---------------------- */

/* a table of `words` words: every offset word k holds k, every section size
 * `size`; the cookie, version and free_threaded as given */
static void fake_debug(uint64_t *w, size_t words, uint64_t version, uint64_t free_threaded, const int *sizes,
                       size_t nsizes) {
    for (size_t k = 0; k < words; k++) w[k] = k;
    memcpy(&w[0], "xdebugpy", 8);
    w[1] = version;
    w[2] = free_threaded;
    for (size_t i = 0; i < nsizes; i++) w[sizes[i]] = 4096;
}

TEST(debug_offsets_of_each_version) {
    static uint64_t w[128];
    lp_remote_layout L;
    uint64_t version = 0;
    /* the section-size words of 3.13, 3.14, 3.15 (from their headers) */
    static const int s313[] = {3, 6, 19, 28, 34, 44, 46, 50, 53, 56, 59, 61, 64, 67, 71};
    static const int s314[] = {3, 6, 22, 31, 39, 50, 52, 56, 59, 62, 66, 69, 71, 74, 77, 81, 83};
    static const int s315[] = {3, 6, 22, 39, 47, 58, 60, 66, 68, 71, 74, 78, 81, 83, 86, 89, 94, 99};
    fake_debug(w, 73, 0x030D05F0, 0, s313, LP_ARRAY_LEN(s313));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_OK);
    CHECK(version == 0x030D05F0 && L.frame_model == LP_REMOTE_FRAMES_313);
    CHECK(L.ts_next == 21 && L.ts_frame == 23 && L.fr_previous == 29 && L.fr_owner == 33);
    CHECK(L.co_code_adaptive == 43 && L.u_ascii_size == 70 && L.u_compact_size == 86);

    fake_debug(w, 95, 0x030E0AF0, 0, s314, LP_ARRAY_LEN(s314));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_OK);
    CHECK(L.version_hex == 0x030E0AF0 && L.frame_model == LP_REMOTE_FRAMES_314);
    CHECK(L.rt_interpreters_head == 5 && L.is_next == 8 && L.is_threads_head == 9);
    CHECK(L.ts_next == 24 && L.ts_frame == 26 && L.ts_thread_id == 27 && L.ts_native_thread_id == 28);
    CHECK(L.fr_previous == 32 && L.fr_code == 33 && L.fr_instr == 34 && L.fr_localsplus == 35 &&
          L.fr_owner == 36);
    CHECK(L.co_filename == 40 && L.co_name == 41 && L.co_qualname == 42 && L.co_linetable == 43 &&
          L.co_firstlineno == 44 && L.co_localsplusnames == 46 && L.co_code_adaptive == 48);
    CHECK(L.ob_type == 51 && L.tp_name == 53 && L.tuple_item == 57 && L.tuple_size == 58);
    CHECK(L.float_fval == 70 && L.long_size == 72 && L.long_digits == 73);
    CHECK(L.bytes_size == 75 && L.bytes_sval == 76);
    CHECK(L.u_state == 78 && L.u_length == 79 && L.u_ascii_size == 80 && L.u_compact_size == 96);

    fake_debug(w, 111, 0x030F02F0, 0, s315, LP_ARRAY_LEN(s315));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_OK);
    CHECK(L.frame_model == LP_REMOTE_FRAMES_314);
    CHECK(L.ts_next == 24 && L.ts_frame == 26 && L.ts_thread_id == 30 && L.ts_native_thread_id == 31);
    CHECK(L.fr_previous == 40 && L.fr_code == 41 && L.fr_instr == 42 && L.fr_localsplus == 43 &&
          L.fr_owner == 44);
    CHECK(L.co_filename == 48 && L.co_qualname == 50 && L.co_linetable == 51 && L.co_firstlineno == 52 &&
          L.co_localsplusnames == 54 && L.co_code_adaptive == 56);
    CHECK(L.ob_type == 59 && L.tp_name == 61 && L.tuple_item == 69 && L.tuple_size == 70);
    CHECK(L.float_fval == 82 && L.long_size == 84 && L.long_digits == 85);
    CHECK(L.bytes_size == 87 && L.bytes_sval == 88);
    /* 3.15 says sizeof(PyCompactUnicodeObject) itself (word 93) */
    CHECK(L.u_state == 90 && L.u_length == 91 && L.u_ascii_size == 92 && L.u_compact_size == 93);

    /* free-threaded, a version not known, no cookie, an offset past its struct */
    fake_debug(w, 111, 0x030F02F0, 1, s315, LP_ARRAY_LEN(s315));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_FREE_THREADED);
    fake_debug(w, 111, 0x031000F0, 0, s315, LP_ARRAY_LEN(s315));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_VERSION);
    CHECK(version == 0x031000F0);
    fake_debug(w, 111, 0x030C00F0, 0, s315, LP_ARRAY_LEN(s315));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_VERSION);
    fake_debug(w, 95, 0x030E0AF0, 0, s314, LP_ARRAY_LEN(s314));
    w[26] = 5000; /* thread_state.current_frame past sizeof(PyThreadState) */
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_VERSION);
    /* a 3.15 table read with 3.14's indexes: sizes where offsets are, refused */
    fake_debug(w, 111, 0x030E0AF0, 0, s315, LP_ARRAY_LEN(s315));
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_VERSION);
    memcpy(&w[0], "notdebug", 8);
    CHECK_EQ_INT(lp_remote_layout_from_debug(getpid(), U(w), &L, &version), LP_REMOTE_NODEBUG);
}

RUN_TESTS(line_table_310, line_table_311, malformed_tables_give_no_line, reads_are_checked,
          walk_marks_entry_frames, walk_reads_frames_and_lines, walk_is_bounded_on_cycles,
          walk_survives_bad_frames, walk_clears_stackref_tags, debug_offsets_of_each_version)
