/* aggregate: the one rule that cuts lprof's own frames from the stacks
 * (snap.h's header comment says which): each resolved frame's kind, and the
 * state a stack node takes from its parent's and its frame's. */
#include "aggregate/cpython/snap.h"

#include <stdlib.h>
#include <string.h>

static char *launcher_dir; /* UTF-8 prefix, malloc'd; NULL = cut nothing */
static PyObject *callers;  /* frozenset of files that called lprof's command, or NULL */
static PyObject *entries;  /* frozenset of (file, function): the runner's program entries */

static int in_set(PyObject *set, PyObject *key) {
    int in = set ? PySet_Contains(set, key) : 0;
    if (in < 0) PyErr_Clear();
    return in > 0;
}

int snap_kind_of(snap *s, uint32_t rf) {
    if (s->kinds[rf] != KIND_UNKNOWN) return s->kinds[rf];
    int kind = KIND_OTHER;
    PyObject *frame = PyList_GET_ITEM(s->rframes, rf), *file = PyTuple_GET_ITEM(frame, 0);
    const char *f = PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    if (!f) PyErr_Clear();
    if (launcher_dir && f && strncmp(f, launcher_dir, strlen(launcher_dir)) == 0) {
        kind = KIND_LAUNCHER;
        PyObject *key = PyTuple_Pack(2, file, PyTuple_GET_ITEM(frame, 1));
        if (!key) PyErr_Clear();
        else if (in_set(entries, key)) kind = KIND_ENTRY;
        Py_XDECREF(key);
    } else if (in_set(callers, file)) {
        kind = KIND_CALLER;
    }
    s->kinds[rf] = (uint8_t)kind;
    return kind;
}

/* The state of a stack node from its parent's (up) and its frame's kind:
 * 1 when the frame is output, as a trie node under *out (ROOT or a node);
 * 0 when the node takes the state *out (CALLER, COMMAND, CUT or OWN). */
int snap_next_state(int32_t up, int kind, int32_t *out) {
    int lprof = kind == KIND_LAUNCHER || kind == KIND_ENTRY;
    switch (up) {
        case ROOT:
        case CALLER:
            *out = lprof ? (kind == KIND_ENTRY ? CUT : COMMAND) : kind == KIND_CALLER ? CALLER : ROOT;
            break;
        case COMMAND: /* lprof's command: what it calls outside a program entry is its own */
            *out = lprof ? (kind == KIND_ENTRY ? CUT : COMMAND) : OWN;
            break;
        case OWN: *out = OWN; break;
        case CUT: *out = lprof ? CUT : ROOT; break;
        default: /* below a program frame: a wrapper of lprof's cuts as before */
            *out = lprof ? CUT : up;
            break;
    }
    return *out == ROOT || *out >= 0;
}

int snap_set_launcher_dir(const char *dir) {
    char *copy = dir ? strdup(dir) : NULL;
    if (dir && !copy) return -1;
    free(launcher_dir);
    launcher_dir = copy;
    return 0;
}

void snap_set_launcher_roles(PyObject *caller_files, PyObject *entry_set) {
    Py_XSETREF(callers, caller_files);
    Py_XSETREF(entries, entry_set);
}
