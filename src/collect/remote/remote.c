/* collect/remote: see remote.h (contract) and docs/design-remote.md. */
#define _GNU_SOURCE 1
#include "collect/remote/remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* ---- reading ------------------------------------------------------------ */

/* x86-64 user addresses are below 2^47; objects the walker follows are at
 * least 8-byte aligned (frames, thread states, PyObjects). */
#define USER_TOP 0x0000800000000000ull

static int ptr_ok(uint64_t p) { return p >= 4096 && p < USER_TOP && (p & 7u) == 0; }

int lp_remote_read(pid_t pid, uint64_t addr, void *dst, size_t n) {
    if (n == 0) return LP_REMOTE_OK;
    if (addr == 0 || addr >= USER_TOP || n > USER_TOP - addr) return LP_REMOTE_BADREAD;
    struct iovec local = {.iov_base = dst, .iov_len = n};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = n};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n) return LP_REMOTE_OK;
    if (got < 0) {
        if (errno == ESRCH) return LP_REMOTE_NOPROC;
        if (errno == EPERM) return LP_REMOTE_NOPERM;
    }
    return LP_REMOTE_BADREAD; /* EFAULT, EIO, or a short read across a hole */
}

static int read_u64(pid_t pid, uint64_t addr, uint64_t *out) {
    return lp_remote_read(pid, addr, out, sizeof *out);
}

/* a pointer field at base+off: 0 (a list's end) is fine, anything else must pass ptr_ok */
static int read_ptr(pid_t pid, uint64_t base, uint64_t off, uint64_t *out) {
    if (off == LP_REMOTE_ABSENT || off > 1u << 20) return LP_REMOTE_LAYOUT;
    int rc = read_u64(pid, base + off, out);
    if (rc != LP_REMOTE_OK) return rc;
    if (*out != 0 && !ptr_ok(*out)) return LP_REMOTE_BADREAD;
    return LP_REMOTE_OK;
}

/* ---- the debug offsets (3.13+) ------------------------------------------- */

/* _Py_DebugOffsets as 64-bit words: the cookie, the version, free_threaded,
 * then sections of uint64_t, each its struct's size followed by offsets in
 * it. 3.14 and 3.15 added fields inside sections, so each version has its
 * own word indexes (from that version's pycore_runtime.h, 3.13, or
 * pycore_debug_offsets.h, 3.14+). D_* names the words the reader takes;
 * each is checked against its section's size word (an offset inside the
 * struct), so an index table that does not fit the target is refused. */
enum {
    D_RT_INTERPRETERS_HEAD,
    D_IS_NEXT,
    D_IS_THREADS_HEAD,
    D_TS_NEXT,
    D_TS_CURRENT_FRAME,
    D_TS_THREAD_ID,
    D_TS_NATIVE_THREAD_ID,
    D_IF_PREVIOUS,
    D_IF_EXECUTABLE,
    D_IF_INSTR_PTR,
    D_IF_LOCALSPLUS,
    D_IF_OWNER,
    D_CO_FILENAME,
    D_CO_NAME,
    D_CO_QUALNAME,
    D_CO_LINETABLE,
    D_CO_FIRSTLINENO,
    D_CO_LOCALSPLUSNAMES,
    D_CO_CODE_ADAPTIVE,
    D_OB_TYPE,
    D_TP_NAME,
    D_TUPLE_OB_ITEM,
    D_TUPLE_OB_SIZE,
    D_FLOAT_OB_FVAL,
    D_LONG_LV_TAG,
    D_LONG_OB_DIGIT,
    D_BYTES_OB_SIZE,
    D_BYTES_OB_SVAL,
    D_U_STATE,
    D_U_LENGTH,
    D_U_ASCII_SIZE,
    D_FIELDS
};

/* the section-size word of each section the fields above are in */
enum { S_RT, S_IS, S_TS, S_IF, S_CO, S_OB, S_TP, S_TUPLE, S_FLOAT, S_LONG, S_BYTES, S_U, S_COUNT };

static const uint8_t d_section[D_FIELDS] = {
    [D_RT_INTERPRETERS_HEAD] = S_RT,
    [D_IS_NEXT] = S_IS,
    [D_IS_THREADS_HEAD] = S_IS,
    [D_TS_NEXT] = S_TS,
    [D_TS_CURRENT_FRAME] = S_TS,
    [D_TS_THREAD_ID] = S_TS,
    [D_TS_NATIVE_THREAD_ID] = S_TS,
    [D_IF_PREVIOUS] = S_IF,
    [D_IF_EXECUTABLE] = S_IF,
    [D_IF_INSTR_PTR] = S_IF,
    [D_IF_LOCALSPLUS] = S_IF,
    [D_IF_OWNER] = S_IF,
    [D_CO_FILENAME] = S_CO,
    [D_CO_NAME] = S_CO,
    [D_CO_QUALNAME] = S_CO,
    [D_CO_LINETABLE] = S_CO,
    [D_CO_FIRSTLINENO] = S_CO,
    [D_CO_LOCALSPLUSNAMES] = S_CO,
    [D_CO_CODE_ADAPTIVE] = S_CO,
    [D_OB_TYPE] = S_OB,
    [D_TP_NAME] = S_TP,
    [D_TUPLE_OB_ITEM] = S_TUPLE,
    [D_TUPLE_OB_SIZE] = S_TUPLE,
    [D_FLOAT_OB_FVAL] = S_FLOAT,
    [D_LONG_LV_TAG] = S_LONG,
    [D_LONG_OB_DIGIT] = S_LONG,
    [D_BYTES_OB_SIZE] = S_BYTES,
    [D_BYTES_OB_SVAL] = S_BYTES,
    [D_U_STATE] = S_U,
    [D_U_LENGTH] = S_U,
    [D_U_ASCII_SIZE] = S_U,
};

#define D_WORDS_MAX 112
#define D_NONE      0 /* word 0 is the cookie: no field's index */

typedef struct debug_table {
    uint16_t minor; /* 3.minor */
    uint16_t words; /* the table's length in words (all read at once) */
    uint16_t frame_model;
    uint8_t field[D_FIELDS];  /* word index of each field */
    uint8_t section[S_COUNT]; /* word index of each section's size */
    uint8_t compact_size;     /* sizeof(PyCompactUnicodeObject), or D_NONE */
} debug_table;

/* 3.13: pycore_runtime.h; 3.14, 3.15: pycore_debug_offsets.h (3.14 added
 * interpreter_state.threads_main, code_object_generation, tlbc_generation,
 * frame stackpointer, tlbc_index, co_tlbc, set_object; 3.15 thread_state's
 * base_frame, last_profiled_frame(_seq), holds_gil, gil_requested,
 * current_exception, exc_state, a section err_stackitem, tp_basicsize,
 * tp_dictoffset, heap_type_object, compactunicodeobject_size, gc frame
 * and generation stats) */
static const debug_table debug_tables[] = {
    {13,
     73,
     LP_REMOTE_FRAMES_313,
     {5,  8,  9,  21, 23, 24, 25, 29, 30, 31, 32, 33, 35, 36, 37, 38,
      39, 41, 43, 45, 47, 51, 52, 60, 62, 63, 65, 66, 68, 69, 70},
     {3, 6, 19, 28, 34, 44, 46, 50, 59, 61, 64, 67},
     D_NONE},
    {14,
     95,
     LP_REMOTE_FRAMES_314,
     {5,  8,  9,  24, 26, 27, 28, 32, 33, 34, 35, 36, 40, 41, 42, 43,
      44, 46, 48, 51, 53, 57, 58, 70, 72, 73, 75, 76, 78, 79, 80},
     {3, 6, 22, 31, 39, 50, 52, 56, 69, 71, 74, 77},
     D_NONE},
    {15,
     111,
     LP_REMOTE_FRAMES_314,
     {5,  8,  9,  24, 26, 30, 31, 40, 41, 42, 43, 44, 48, 49, 50, 51,
      52, 54, 56, 59, 61, 69, 70, 82, 84, 85, 87, 88, 90, 91, 92},
     {3, 6, 22, 39, 47, 58, 60, 68, 81, 83, 86, 89},
     93},
};

int lp_remote_layout_from_debug(pid_t pid, uint64_t runtime_addr, lp_remote_layout *out,
                                uint64_t *version_hex) {
    uint64_t w[D_WORDS_MAX];
    uint64_t head[3]; /* cookie, version, free_threaded */
    int rc = lp_remote_read(pid, runtime_addr, head, sizeof head);
    if (rc != LP_REMOTE_OK) return rc;
    if (memcmp(&head[0], "xdebugpy", 8) != 0) return LP_REMOTE_NODEBUG;
    *version_hex = head[1];
    if ((head[1] >> 24) != 3) return LP_REMOTE_VERSION;
    const debug_table *T = NULL;
    for (size_t i = 0; i < LP_ARRAY_LEN(debug_tables); i++)
        if (debug_tables[i].minor == ((head[1] >> 16) & 0xFF)) T = &debug_tables[i];
    if (T == NULL) return LP_REMOTE_VERSION;
    if (head[2] != 0) return LP_REMOTE_FREE_THREADED;
    rc = lp_remote_read(pid, runtime_addr, w, (size_t)T->words * 8);
    if (rc != LP_REMOTE_OK) return rc;
    uint64_t f[D_FIELDS];
    for (int i = 0; i < D_FIELDS; i++) {
        f[i] = w[T->field[i]];
        /* an offset inside its struct, and the struct's size a sane one */
        uint64_t size = w[T->section[d_section[i]]];
        if (size > (1u << 24) || f[i] >= size) return LP_REMOTE_VERSION;
    }
    uint64_t compact = T->compact_size != D_NONE ? w[T->compact_size]
                                                 /* PyASCIIObject + utf8_length + utf8 */
                                                 : f[D_U_ASCII_SIZE] + 16;
    if (compact < f[D_U_ASCII_SIZE] || compact >= w[T->section[S_U]]) return LP_REMOTE_VERSION;
    lp_remote_layout L = {
        .version_hex = head[1],
        .frame_model = T->frame_model,
        .rt_interpreters_head = f[D_RT_INTERPRETERS_HEAD],
        .is_next = f[D_IS_NEXT],
        .is_threads_head = f[D_IS_THREADS_HEAD],
        .ts_next = f[D_TS_NEXT],
        .ts_thread_id = f[D_TS_THREAD_ID],
        .ts_native_thread_id = f[D_TS_NATIVE_THREAD_ID],
        .ts_frame = f[D_TS_CURRENT_FRAME],
        .cframe_current_frame = LP_REMOTE_ABSENT,
        .fr_previous = f[D_IF_PREVIOUS],
        .fr_code = f[D_IF_EXECUTABLE],
        .fr_instr = f[D_IF_INSTR_PTR],
        .fr_owner = f[D_IF_OWNER],
        .co_filename = f[D_CO_FILENAME],
        .co_name = f[D_CO_NAME],
        .co_qualname = f[D_CO_QUALNAME],
        .co_linetable = f[D_CO_LINETABLE],
        .co_firstlineno = f[D_CO_FIRSTLINENO],
        .co_code_adaptive = f[D_CO_CODE_ADAPTIVE],
        .ob_type = f[D_OB_TYPE],
        .tp_name = f[D_TP_NAME],
        .bytes_size = f[D_BYTES_OB_SIZE],
        .bytes_sval = f[D_BYTES_OB_SVAL],
        .u_state = f[D_U_STATE],
        .u_length = f[D_U_LENGTH],
        .u_ascii_size = f[D_U_ASCII_SIZE],
        .u_compact_size = compact,
        .fr_localsplus = f[D_IF_LOCALSPLUS],
        .co_localsplusnames = f[D_CO_LOCALSPLUSNAMES],
        .tuple_size = f[D_TUPLE_OB_SIZE],
        .tuple_item = f[D_TUPLE_OB_ITEM],
        .float_fval = f[D_FLOAT_OB_FVAL],
        .long_size = f[D_LONG_LV_TAG],
        .long_digits = f[D_LONG_OB_DIGIT],
        .fr_is_entry = LP_REMOTE_ABSENT, /* 3.11's field; 3.13+ mark entries by owner */
    };
    *out = L;
    return LP_REMOTE_OK;
}

/* ---- line tables ------------------------------------------------------- */

/* 3.11+ location table varint: 6 bits a byte, 0x40 = more follow */
static int read_varint(const uint8_t *t, size_t n, size_t *i, uint32_t *out) {
    uint32_t v = 0;
    for (unsigned shift = 0; shift < 32; shift += 6) {
        if (*i >= n) return -1;
        uint8_t b = t[(*i)++];
        v |= (uint32_t)(b & 63u) << shift;
        if (!(b & 64u)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int read_svarint(const uint8_t *t, size_t n, size_t *i, int64_t *out) {
    uint32_t u;
    if (read_varint(t, n, i, &u) < 0) return -1;
    *out = (u & 1u) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
    return 0;
}

static int line_310(const uint8_t *t, size_t n, int firstlineno, int64_t unit) {
    /* pairs (bytes covered, line delta); delta -128: no line for that range */
    int64_t target = unit * 2, start = 0, line = firstlineno;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int64_t end = start + t[i];
        int8_t delta = (int8_t)t[i + 1];
        int none = delta == -128;
        if (!none) line += delta;
        if (target >= start && target < end) return none ? -1 : (int)line;
        start = end;
    }
    return -1;
}

static int line_311(const uint8_t *t, size_t n, int firstlineno, int64_t unit) {
    int64_t start = 0, line = firstlineno;
    size_t i = 0;
    while (i < n) {
        uint8_t b = t[i++];
        if (!(b & 0x80)) return -1; /* every entry starts with the high bit set */
        unsigned code = (b >> 3) & 15u, len = (b & 7u) + 1u;
        int64_t delta = 0;
        uint32_t skip;
        if (code == 14) { /* long form: line delta, end line delta, column, end column */
            if (read_svarint(t, n, &i, &delta) < 0 || read_varint(t, n, &i, &skip) < 0 ||
                read_varint(t, n, &i, &skip) < 0 || read_varint(t, n, &i, &skip) < 0)
                return -1;
        } else if (code == 13) { /* no column: line delta only */
            if (read_svarint(t, n, &i, &delta) < 0) return -1;
        } else if (code >= 10 && code <= 12) { /* one-line form: delta in the code, 2 column bytes */
            delta = (int64_t)code - 10;
            i += 2;
        } else if (code < 10) { /* short form: same line, 1 column byte */
            i += 1;
        } /* 15: no location */
        if (i > n) return -1;
        line += delta;
        if (line < INT32_MIN || line > INT32_MAX) return -1;
        if (unit >= start && unit < start + (int64_t)len) return code == 15 ? -1 : (int)line;
        start += len;
    }
    return -1;
}

int lp_remote_line_of(const uint8_t *table, size_t n, int firstlineno, int model, int64_t unit) {
    if (unit < 0) return firstlineno;
    if (table == NULL) return -1;
    return model == LP_REMOTE_FRAMES_310 ? line_310(table, n, firstlineno, unit)
                                         : line_311(table, n, firstlineno, unit);
}

/* ---- objects ------------------------------------------------------------ */

static void put_utf8(char *out, size_t cap, size_t *o, uint32_t c) {
    char buf[4];
    size_t k;
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
        buf[0] = (char)c;
        k = 1;
    } else if (c < 0x800) {
        buf[0] = (char)(0xC0 | (c >> 6));
        buf[1] = (char)(0x80 | (c & 63));
        k = 2;
    } else if (c < 0x10000) {
        buf[0] = (char)(0xE0 | (c >> 12));
        buf[1] = (char)(0x80 | ((c >> 6) & 63));
        buf[2] = (char)(0x80 | (c & 63));
        k = 3;
    } else {
        buf[0] = (char)(0xF0 | (c >> 18));
        buf[1] = (char)(0x80 | ((c >> 12) & 63));
        buf[2] = (char)(0x80 | ((c >> 6) & 63));
        buf[3] = (char)(0x80 | (c & 63));
        k = 4;
    }
    if (*o + k >= cap) return;
    memcpy(out + *o, buf, k);
    *o += k;
}

/* a str object into out (UTF-8, NUL-terminated, truncated to cap-1 bytes):
 * compact strings only (every name and file name of a code object is) */
static int read_str(pid_t pid, const lp_remote_layout *L, uint64_t obj, char *out, size_t cap) {
    out[0] = '\0';
    if (!ptr_ok(obj)) return LP_REMOTE_BADREAD;
    uint32_t state;
    int64_t length;
    int rc = lp_remote_read(pid, obj + L->u_state, &state, sizeof state);
    if (rc == LP_REMOTE_OK) rc = lp_remote_read(pid, obj + L->u_length, &length, sizeof length);
    if (rc != LP_REMOTE_OK) return rc;
    unsigned kind = (state >> 2) & 7u, compact = (state >> 5) & 1u, ascii = (state >> 6) & 1u;
    if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return LP_REMOTE_BADREAD;
    size_t len = (size_t)length;
    if (ascii) {
        if (len > cap - 1) len = cap - 1;
        rc = lp_remote_read(pid, obj + L->u_ascii_size, out, len);
        if (rc != LP_REMOTE_OK) return rc;
        out[len] = '\0';
        return LP_REMOTE_OK;
    }
    uint8_t raw[LP_REMOTE_MAX_STR * 4];
    if (len > LP_REMOTE_MAX_STR) len = LP_REMOTE_MAX_STR;
    rc = lp_remote_read(pid, obj + L->u_compact_size, raw, len * kind);
    if (rc != LP_REMOTE_OK) return rc;
    size_t o = 0;
    for (size_t k = 0; k < len; k++) {
        uint32_t c;
        if (kind == 1) {
            c = raw[k];
        } else if (kind == 2) {
            uint16_t u;
            memcpy(&u, raw + 2 * k, 2);
            c = u;
        } else {
            memcpy(&c, raw + 4 * k, 4);
        }
        put_utf8(out, cap, &o, c);
    }
    out[o] = '\0';
    return LP_REMOTE_OK;
}

/* is obj's type named "code"? (the first code object's type is remembered) */
static int is_code(pid_t pid, const lp_remote_layout *L, uint64_t obj, uint64_t *code_type) {
    uint64_t type, name;
    char buf[8];
    if (!ptr_ok(obj) || read_ptr(pid, obj, L->ob_type, &type) != LP_REMOTE_OK || type == 0) return 0;
    if (*code_type) return type == *code_type;
    if (read_u64(pid, type + L->tp_name, &name) != LP_REMOTE_OK || name == 0 || name >= USER_TOP) return 0;
    if (lp_remote_read(pid, name, buf, 5) != LP_REMOTE_OK || memcmp(buf, "code", 5) != 0) return 0;
    *code_type = type;
    return 1;
}

typedef struct walk {
    pid_t pid;
    const lp_remote_layout *L;
    const lp_remote_sink *sink;
    uint64_t code_type;
    uint8_t *table; /* LP_REMOTE_MAX_LINETABLE bytes */
    char file[LP_REMOTE_MAX_STR], func[LP_REMOTE_MAX_STR];
} walk;

/* one frame's code object at `unit` code units: file, function, line to the sink */
static int emit_code(walk *w, uint64_t code, int64_t unit) {
    const lp_remote_layout *L = w->L;
    uint64_t filename, name, table;
    int32_t first;
    int rc = read_ptr(w->pid, code, L->co_filename, &filename);
    if (rc == LP_REMOTE_OK)
        rc = read_ptr(w->pid, code, L->co_qualname != LP_REMOTE_ABSENT ? L->co_qualname : L->co_name, &name);
    if (rc == LP_REMOTE_OK) rc = read_ptr(w->pid, code, L->co_linetable, &table);
    if (rc == LP_REMOTE_OK) rc = lp_remote_read(w->pid, code + L->co_firstlineno, &first, sizeof first);
    if (rc == LP_REMOTE_OK) rc = read_str(w->pid, L, filename, w->file, sizeof w->file);
    if (rc == LP_REMOTE_OK) rc = read_str(w->pid, L, name, w->func, sizeof w->func);
    if (rc != LP_REMOTE_OK) return rc;
    int line = -1;
    int64_t size = 0;
    if (table != 0 && lp_remote_read(w->pid, table + L->bytes_size, &size, sizeof size) == LP_REMOTE_OK &&
        size > 0) {
        size_t n = size > (int64_t)LP_REMOTE_MAX_LINETABLE ? LP_REMOTE_MAX_LINETABLE : (size_t)size;
        if (lp_remote_read(w->pid, table + L->bytes_sval, w->table, n) == LP_REMOTE_OK)
            line = lp_remote_line_of(w->table, n, first, (int)L->frame_model, unit);
    } else if (unit < 0) {
        line = first;
    }
    return w->sink->frame(w->sink->ctx, w->file, w->func, line) ? LP_REMOTE_STOPPED : LP_REMOTE_OK;
}

/* ---- frames --------------------------------------------------------- */

/* a frame owner from this value up runs no Python code of its own: 3.12 and
 * 3.13's FRAME_OWNED_BY_CSTACK (3, an entry frame of the C stack); 3.14's
 * FRAME_OWNED_BY_INTERPRETER (3, the thread's base frame and the
 * interpreter's entry frames, f_executable None) and FRAME_OWNED_BY_CSTACK
 * (4); 3.15's FRAME_OWNED_BY_INTERPRETER (3) */
#define OWNED_BY_NO_CODE 3

/* 3.14+ (LP_REMOTE_FRAMES_314): a _PyStackRef of the default build is a
 * PyObject pointer with tag bits (Py_TAG_BITS 3): bit 0 set for a borrowed
 * or immortal reference, 3 for a tagged int (value << 2 | 3), and the
 * bits 1 alone for NULL (PyStackRef_NULL_BITS) */
#define STACKREF_TAG_BITS 3u
#define STACKREF_INT_TAG  3u
#define STACKREF_NULL     1u

/* a _PyStackRef's object: the tag bits cleared (3.14+), else the pointer */
static uint64_t stackref_object(const lp_remote_layout *L, uint64_t bits) {
    if (L->frame_model != LP_REMOTE_FRAMES_314) return bits;
    if (bits == STACKREF_NULL || (bits & STACKREF_TAG_BITS) == STACKREF_INT_TAG) return 0;
    return bits & ~(uint64_t)STACKREF_TAG_BITS;
}

/* ---- locals (--locals) ------------------------------------------------- */

static int layout_has(uint64_t off) { return off != LP_REMOTE_ABSENT && off <= (1u << 20); }

/* obj's type name (tp_name, a C string) into out; 0 when it does not read */
static int type_name(walk *w, uint64_t obj, uint64_t *type, char *out, size_t cap) {
    uint64_t name;
    if (!ptr_ok(obj) || read_ptr(w->pid, obj, w->L->ob_type, type) != LP_REMOTE_OK || *type == 0 ||
        read_u64(w->pid, *type + w->L->tp_name, &name) != LP_REMOTE_OK || name == 0 || name >= USER_TOP)
        return 0;
    /* read what is there up to cap-1 bytes; a page end can cut it short */
    size_t n = cap - 1;
    while (n > 0 && lp_remote_read(w->pid, name, out, n) != LP_REMOTE_OK) n /= 2;
    if (n == 0) return 0;
    out[n] = '\0';
    return 1;
}

/* an int of at most two 30-bit digits, or -1 (bigger, or unreadable) */
static int long_value(walk *w, uint64_t obj, int64_t *value) {
    const lp_remote_layout *L = w->L;
    int64_t raw;
    uint64_t ndigits;
    int negative;
    if (lp_remote_read(w->pid, obj + L->long_size, &raw, sizeof raw) != LP_REMOTE_OK) return -1;
    if (L->version_hex >= 0x030C0000) { /* lv_tag: digits << 3 | sign (0 +, 1 zero, 2 -) */
        ndigits = (uint64_t)raw >> 3;
        negative = (raw & 3) == 2;
        if ((raw & 3) == 1) ndigits = 0;
    } else { /* ob_size: the digit count, signed */
        negative = raw < 0;
        ndigits = raw < 0 ? (uint64_t)0 - (uint64_t)raw : (uint64_t)raw;
    }
    if (ndigits > 2) return -1;
    uint32_t d[2] = {0, 0};
    if (ndigits && lp_remote_read(w->pid, obj + L->long_digits, d, ndigits * 4) != LP_REMOTE_OK) return -1;
    uint64_t mag = (uint64_t)(d[0] & 0x3FFFFFFFu) | ((uint64_t)(d[1] & 0x3FFFFFFFu) << 30);
    *value = negative ? -(int64_t)mag : (int64_t)mag;
    return 0;
}

static void value_text(walk *w, uint64_t obj, char *out, size_t cap) {
    const lp_remote_layout *L = w->L;
    uint64_t type;
    char tname[64];
    if (!type_name(w, obj, &type, tname, sizeof tname)) {
        snprintf(out, cap, "<unreadable at 0x%llx>", (unsigned long long)obj);
        return;
    }
    int64_t iv;
    double fv;
    int64_t size;
    if (strcmp(tname, "NoneType") == 0) {
        snprintf(out, cap, "None");
    } else if (strcmp(tname, "bool") == 0 && long_value(w, obj, &iv) == 0) {
        snprintf(out, cap, "%s", iv ? "True" : "False");
    } else if (strcmp(tname, "int") == 0 && long_value(w, obj, &iv) == 0) {
        snprintf(out, cap, "%lld", (long long)iv);
    } else if (strcmp(tname, "float") == 0 &&
               lp_remote_read(w->pid, obj + L->float_fval, &fv, sizeof fv) == LP_REMOTE_OK) {
        snprintf(out, cap, "%.15g", fv); /* the shortest of 15 or 17 digits that reads back */
        if (strtod(out, NULL) != fv) snprintf(out, cap, "%.17g", fv);
    } else if (strcmp(tname, "str") == 0 && read_str(w->pid, L, obj, w->func, 64) == LP_REMOTE_OK) {
        /* quoted; control characters and quotes shown as ? (a glance, not repr) */
        size_t o = 0;
        out[o++] = '\'';
        for (const char *c = w->func; *c && o + 5 < cap; c++)
            out[o++] = ((unsigned char)*c < 0x20 || *c == '\'' || *c == '\\') ? '?' : *c;
        if (strlen(w->func) >= 63 && o + 4 < cap) {
            memcpy(out + o, "...", 3);
            o += 3;
        }
        out[o++] = '\'';
        out[o] = '\0';
    } else if ((strcmp(tname, "tuple") == 0 || strcmp(tname, "list") == 0 || strcmp(tname, "bytes") == 0) &&
               lp_remote_read(w->pid, obj + L->tuple_size, &size, sizeof size) == LP_REMOTE_OK) {
        snprintf(out, cap, "<%s of %lld>", tname, (long long)size);
    } else {
        snprintf(out, cap, "<%.48s object at 0x%llx>", tname, (unsigned long long)obj);
    }
}

/* the frame's bound locals (cells and free variables too, as their cell
 * objects) through sink->local; any read that fails shows no more of them */
static int emit_locals(walk *w, uint64_t frame, uint64_t code) {
    const lp_remote_layout *L = w->L;
    if (!layout_has(L->fr_localsplus) || !layout_has(L->co_localsplusnames) || !layout_has(L->tuple_size) ||
        !layout_has(L->tuple_item))
        return LP_REMOTE_OK;
    uint64_t names, name_at[LP_REMOTE_MAX_LOCALS], value_at[LP_REMOTE_MAX_LOCALS];
    int64_t n;
    if (read_ptr(w->pid, code, L->co_localsplusnames, &names) != LP_REMOTE_OK || names == 0 ||
        lp_remote_read(w->pid, names + L->tuple_size, &n, sizeof n) != LP_REMOTE_OK || n <= 0)
        return LP_REMOTE_OK;
    if (n > LP_REMOTE_MAX_LOCALS) n = LP_REMOTE_MAX_LOCALS;
    if (lp_remote_read(w->pid, names + L->tuple_item, name_at, (size_t)n * 8) != LP_REMOTE_OK ||
        lp_remote_read(w->pid, frame + L->fr_localsplus, value_at, (size_t)n * 8) != LP_REMOTE_OK)
        return LP_REMOTE_OK;
    char value[LP_REMOTE_MAX_VALUE];
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits = value_at[i], obj = stackref_object(L, bits);
        int tagged_int =
            L->frame_model == LP_REMOTE_FRAMES_314 && (bits & STACKREF_TAG_BITS) == STACKREF_INT_TAG;
        if (obj == 0 && !tagged_int) continue; /* unbound */
        if (read_str(w->pid, L, name_at[i], w->file, sizeof w->file) != LP_REMOTE_OK) break;
        if (tagged_int) /* (value << 2) | 3, exactly: minus the tag, a multiple of 4 */
            snprintf(value, sizeof value, "%lld", (long long)(((int64_t)(bits - STACKREF_INT_TAG)) / 4));
        else value_text(w, obj, value, sizeof value);
        if (w->sink->local(w->sink->ctx, w->file, value)) return LP_REMOTE_STOPPED;
    }
    return LP_REMOTE_OK;
}

static int walk_frames(walk *w, uint64_t frame) {
    const lp_remote_layout *L = w->L;
    int pending_entry = 0; /* a frame emitted whose group has not ended yet */
    for (int depth = 0; frame != 0; depth++) {
        if (depth >= LP_REMOTE_MAX_DEPTH) return LP_REMOTE_OK; /* deeper frames left out */
        uint64_t code, next;
        int rc = read_ptr(w->pid, frame, L->fr_previous, &next);
        if (rc == LP_REMOTE_OK && L->frame_model == LP_REMOTE_FRAMES_314) {
            /* f_executable: a _PyStackRef, its tag bits cleared before the checks */
            rc = read_u64(w->pid, frame + L->fr_code, &code);
            code = stackref_object(L, code);
            if (rc == LP_REMOTE_OK && code != 0 && !ptr_ok(code)) rc = LP_REMOTE_BADREAD;
        } else if (rc == LP_REMOTE_OK) {
            rc = read_ptr(w->pid, frame, L->fr_code, &code);
        }
        if (rc != LP_REMOTE_OK) return rc;
        int skip = 0;
        int64_t unit = -1;
        if (L->frame_model == LP_REMOTE_FRAMES_310) {
            int32_t lasti;
            rc = lp_remote_read(w->pid, frame + L->fr_instr, &lasti, sizeof lasti);
            unit = lasti;
        } else {
            if (L->fr_owner != LP_REMOTE_ABSENT) {
                uint8_t owner;
                rc = lp_remote_read(w->pid, frame + L->fr_owner, &owner, 1);
                skip = rc == LP_REMOTE_OK && owner >= OWNED_BY_NO_CODE;
            }
            uint64_t instr;
            if (rc == LP_REMOTE_OK && !skip)
                rc = lp_remote_read(w->pid, frame + L->fr_instr, &instr, sizeof instr);
            if (rc == LP_REMOTE_OK && !skip) {
                uint64_t start = code + L->co_code_adaptive;
                /* units from the first instruction; before it (a frame not yet
                 * started: prev_instr is one unit before) counts as -1 */
                unit = instr >= start ? (int64_t)((instr - start) / 2) : -1;
            }
        }
        if (rc != LP_REMOTE_OK) return rc;
        if (skip && pending_entry && w->sink->entry != NULL) { /* 3.12+: the group's end */
            if (w->sink->entry(w->sink->ctx, frame)) return LP_REMOTE_STOPPED;
            pending_entry = 0;
        }
        if (!skip && code != 0) {
            if (!is_code(w->pid, L, code, &w->code_type)) return LP_REMOTE_BADREAD;
            rc = emit_code(w, code, unit);
            if (rc == LP_REMOTE_OK && w->sink->local != NULL) rc = emit_locals(w, frame, code);
            if (rc == LP_REMOTE_OK && w->sink->entry != NULL) {
                int entry = 0;
                if (L->frame_model == LP_REMOTE_FRAMES_310) {
                    entry = 1; /* one eval call per frame */
                } else if (L->fr_is_entry != LP_REMOTE_ABSENT) {
                    uint8_t b = 0;
                    entry = lp_remote_read(w->pid, frame + L->fr_is_entry, &b, 1) == LP_REMOTE_OK && b;
                }
                pending_entry = !entry;
                if (entry && w->sink->entry(w->sink->ctx, 0)) rc = LP_REMOTE_STOPPED;
            }
            if (rc != LP_REMOTE_OK) return rc;
        }
        frame = next;
    }
    return LP_REMOTE_OK;
}

static int first_frame(walk *w, uint64_t tstate, uint64_t *frame) {
    const lp_remote_layout *L = w->L;
    if (L->frame_model == LP_REMOTE_FRAMES_311) {
        uint64_t cframe;
        int rc = read_ptr(w->pid, tstate, L->ts_frame, &cframe);
        if (rc != LP_REMOTE_OK) return rc;
        *frame = 0;
        return cframe ? read_ptr(w->pid, cframe, L->cframe_current_frame, frame) : LP_REMOTE_OK;
    }
    return read_ptr(w->pid, tstate, L->ts_frame, frame);
}

static int layout_ok(const lp_remote_layout *L) {
    if (L->frame_model < LP_REMOTE_FRAMES_310 || L->frame_model > LP_REMOTE_FRAMES_314) return 0;
    const uint64_t need[] = {L->rt_interpreters_head,
                             L->is_next,
                             L->is_threads_head,
                             L->ts_next,
                             L->ts_thread_id,
                             L->ts_frame,
                             L->fr_previous,
                             L->fr_code,
                             L->fr_instr,
                             L->co_filename,
                             L->co_name,
                             L->co_linetable,
                             L->co_firstlineno,
                             L->ob_type,
                             L->tp_name,
                             L->bytes_size,
                             L->bytes_sval,
                             L->u_state,
                             L->u_length,
                             L->u_ascii_size,
                             L->u_compact_size};
    for (size_t i = 0; i < LP_ARRAY_LEN(need); i++)
        if (need[i] > (1u << 20)) return 0;
    if (L->frame_model == LP_REMOTE_FRAMES_311 && L->cframe_current_frame > (1u << 20)) return 0;
    if (L->frame_model != LP_REMOTE_FRAMES_310 && L->co_code_adaptive > (1u << 20)) return 0;
    return 1;
}

int lp_remote_walk(pid_t pid, uint64_t runtime_addr, const lp_remote_layout *L, const lp_remote_sink *sink) {
    if (!layout_ok(L)) return LP_REMOTE_LAYOUT;
    if (!ptr_ok(runtime_addr)) return LP_REMOTE_BADREAD;
    walk *w = calloc(1, sizeof *w);
    uint8_t *table = malloc(LP_REMOTE_MAX_LINETABLE);
    if (w == NULL || table == NULL) {
        free(w);
        free(table);
        return LP_REMOTE_BADREAD;
    }
    w->pid = pid;
    w->L = L;
    w->sink = sink;
    w->table = table;
    uint64_t interp;
    int rc = read_ptr(pid, runtime_addr, L->rt_interpreters_head, &interp);
    for (int i = 0; rc == LP_REMOTE_OK && interp != 0 && i < LP_REMOTE_MAX_INTERPS; i++) {
        uint64_t ts;
        rc = read_ptr(pid, interp, L->is_threads_head, &ts);
        for (int t = 0; rc == LP_REMOTE_OK && ts != 0 && t < LP_REMOTE_MAX_THREADS; t++) {
            uint64_t tid = 0, ntid = 0, frame = 0;
            rc = read_u64(pid, ts + L->ts_thread_id, &tid);
            if (rc == LP_REMOTE_OK && L->ts_native_thread_id != LP_REMOTE_ABSENT)
                rc = read_u64(pid, ts + L->ts_native_thread_id, &ntid);
            if (rc != LP_REMOTE_OK) break;
            if (sink->thread(sink->ctx, tid, ntid)) {
                rc = LP_REMOTE_STOPPED;
                break;
            }
            int frc = first_frame(w, ts, &frame);
            if (frc == LP_REMOTE_OK) frc = walk_frames(w, frame);
            if (frc == LP_REMOTE_STOPPED || frc == LP_REMOTE_NOPROC || frc == LP_REMOTE_NOPERM) {
                rc = frc;
                break;
            }
            if (sink->end_thread(sink->ctx, frc)) {
                rc = LP_REMOTE_STOPPED;
                break;
            }
            rc = read_ptr(pid, ts, L->ts_next, &ts);
        }
        if (rc == LP_REMOTE_OK) rc = read_ptr(pid, interp, L->is_next, &interp);
    }
    free(table);
    free(w);
    return rc;
}
