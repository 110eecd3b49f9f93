/* aggregate: the stack table as the profile's stack model, for every
 * collector at once (sampler and memory share the table). Python functions:
 *   stacks_snapshot() -> (frames, parent, frame, row_node, row_thread, values)
 *     frames: list of (file, function, first line, line) tuples;
 *     parent, frame: int32 arrays (bytes) of a trie of frame ids, one entry
 *       per node, parents before children, -1 for a root;
 *     row_node (int32), row_thread (uint64): one entry per row;
 *     values: int64, row-major, one column per metric (metric_names()).
 *     timeline: None, or the sample timeline (aggregate/timeline.h) in
 *       columns, sorted by time: (t_us int64 deltas from origin_ns, node
 *       int32 into its own trie, thread int32 into threads, weight_us
 *       uint32; trie parent int32, trie frame int32 (output frame ids);
 *       threads uint64; stride). stacks_snapshot(origin_ns=0).
 *     gpu: None, or the GPU timeline (aggregate/gpu_trace.h) in columns,
 *       in store order: (start_ns int64, end_ns int64, launch_ns int64
 *       (INT64_MIN: unknown), all from origin_ns; device uint32, stream
 *       uint32, op uint8, dir uint8, attributed uint8, bytes uint64,
 *       correlation uint32; node int32: the record's leaf node in the
 *       output trie above (its frame the work's, its parent the launch
 *       stack; -1 where the stack has no output node); name int32 into
 *       names; thread uint64 (the launching thread's key); names: list of
 *       str (the interned raw names); capacity; dropped).
 *   stacks_reset(), metric_names(), metric_groups(), internal_metrics(),
 *   set_launcher_dir(path), set_launcher_roles(caller_files, entries).
 * Building it: every stack-table node is resolved (resolve.c) and interned
 * into a trie keyed by (parent, frame), so that two raw frames on the same
 * line, or the same stack on two threads, share nodes. lprof's own launcher
 * frames (files under the launcher folder) are cut here and only here: the
 * innermost one and everything rootward of it; a stack made only of them is
 * lprof's own work and is left out. So is a stack where lprof's command
 * (its frames from the root, after the frames that called it: the console
 * script, runpy) calls code outside lprof other than through a program
 * entry (the runner's functions that run the program): an import or a
 * threading call of lprof's own start or end, sampled, would otherwise
 * begin a stack of its own once lprof's frames were cut. Rows that land on
 * the same (node, thread) combine by their columns' merge kinds. GIL held
 * throughout. */
#include "cpython/module.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate/agg.h"
#include "aggregate/cpython/resolve.h"
#include "aggregate/gpu_names.h"
#include "aggregate/gpu_trace.h"
#include "aggregate/timeline.h"
#include "common/hash.h"

#define ROOT -1       /* the trie's root: no frame yet */
#define CUT -2        /* launcher frames cut: what follows starts at the root */
#define UNSET -3
#define CALLER -4     /* only the frames that called lprof's command so far */
#define COMMAND -5    /* lprof's command from the root, no program entry yet */
#define OWN -6        /* code lprof's command called for itself: left out */

static char *launcher_dir;  /* UTF-8 prefix, malloc'd; NULL = cut nothing */
static PyObject *callers;   /* frozenset of files that called lprof's command, or NULL */
static PyObject *entries;   /* frozenset of (file, function): the runner's program entries */

/* What a resolved frame is to the cut (snap.kinds) */
enum { KIND_UNKNOWN, KIND_OTHER, KIND_LAUNCHER, KIND_ENTRY, KIND_CALLER };

/* ---- a growable open-addressing map: 64-bit key -> int32 value -------- */
typedef struct {
    uint64_t *keys;   /* key + 1; 0 = empty */
    int32_t *vals;
    size_t mask, used;
} idmap;

static int idmap_init(idmap *m, size_t expect) {
    size_t cap = 1024;
    while (cap < 2 * expect) cap <<= 1;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->mask = cap - 1;
    m->used = 0;
    return m->keys && m->vals ? 0 : -1;
}

static void idmap_free(idmap *m) {
    free(m->keys);
    free(m->vals);
}

/* Slot of key: found (keys[i] == key + 1) or empty. */
static size_t idmap_slot(const idmap *m, uint64_t key) {
    size_t i = (size_t)lp_hash_mix64(key) & m->mask;
    while (m->keys[i] && m->keys[i] != key + 1) i = (i + 1) & m->mask;
    return i;
}

static int idmap_grow(idmap *m) {
    idmap bigger;
    if (idmap_init(&bigger, m->mask + 1) < 0) {
        idmap_free(&bigger);
        return -1;
    }
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->keys[i]) continue;
        size_t j = idmap_slot(&bigger, m->keys[i] - 1);
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    bigger.used = m->used;
    idmap_free(m);
    *m = bigger;
    return 0;
}

/* ---- growable int arrays ---------------------------------------------- */
typedef struct {
    char *data;
    size_t len, cap, item;
} vec;

static int vec_push(vec *v, const void *item) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 1024;
        char *d = realloc(v->data, cap * v->item);
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    memcpy(v->data + v->len * v->item, item, v->item);
    v->len++;
    return 0;
}

/* ---- the snapshot ------------------------------------------------------- */
typedef struct {
    lp_stacktab *tab;
    PyObject *rframes;   /* resolve.c's frame tuples */
    PyObject *frames;    /* output frames (only those used) */
    int32_t *fmap;       /* resolve frame id -> output frame id, -1 unknown */
    uint8_t *kinds;      /* resolve frame id -> KIND_* */
    size_t fmap_cap;
    int32_t *rnode;      /* stack-table node -> trie node, ROOT, UNSET or a cut state */
    idmap trie;          /* (parent, frame) -> trie node */
    vec parent, frame;   /* the trie */
    idmap rowmap;        /* (trie node, thread) -> output row */
    vec row_node, row_thread, values;
} snap;

/* The timeline's columns, built after the stacks (see timeline_columns). */
typedef struct {
    int32_t *tmap;       /* output trie node -> timeline trie node, -1 none */
    vec parent, frame;   /* the timeline's trie: only the nodes it uses */
    idmap threads;       /* thread key -> index */
    vec thread_keys;
} tl_snap;

static int ensure_fmap(snap *s, size_t n) {
    if (n <= s->fmap_cap) return 0;
    size_t cap = s->fmap_cap ? s->fmap_cap : 1024;
    while (cap < n) cap *= 2;
    int32_t *f = realloc(s->fmap, cap * sizeof *f);
    if (!f) return -1;
    s->fmap = f;
    uint8_t *k = realloc(s->kinds, cap);
    if (!k) return -1;
    s->kinds = k;
    for (size_t i = s->fmap_cap; i < cap; i++) s->fmap[i] = -1, s->kinds[i] = KIND_UNKNOWN;
    s->fmap_cap = cap;
    return 0;
}

static int in_set(PyObject *set, PyObject *key) {
    int in = set ? PySet_Contains(set, key) : 0;
    if (in < 0) PyErr_Clear();
    return in > 0;
}

static int kind_of(snap *s, uint32_t rf) {
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
static int next_state(int32_t up, int kind, int32_t *out) {
    int lprof = kind == KIND_LAUNCHER || kind == KIND_ENTRY;
    switch (up) {
    case ROOT:
    case CALLER:
        *out = lprof ? (kind == KIND_ENTRY ? CUT : COMMAND) : kind == KIND_CALLER ? CALLER : ROOT;
        break;
    case COMMAND: /* lprof's command: what it calls outside a program entry is its own */
        *out = lprof ? (kind == KIND_ENTRY ? CUT : COMMAND) : OWN;
        break;
    case OWN:
        *out = OWN;
        break;
    case CUT:
        *out = lprof ? CUT : ROOT;
        break;
    default: /* below a program frame: a wrapper of lprof's cuts as before */
        *out = lprof ? CUT : up;
        break;
    }
    return *out == ROOT || *out >= 0;
}

/* Output frame id of resolve frame rf (copied on first use); -1 on error. */
static int32_t out_frame(snap *s, uint32_t rf) {
    if (s->fmap[rf] >= 0) return s->fmap[rf];
    int32_t id = (int32_t)PyList_GET_SIZE(s->frames);
    if (PyList_Append(s->frames, PyList_GET_ITEM(s->rframes, rf)) < 0) return -1;
    s->fmap[rf] = id;
    return id;
}

/* Trie node for (parent, frame): existing or new; -1 on error. */
static int32_t trie_node(snap *s, int32_t parent, int32_t frame) {
    if ((s->trie.used + 1) * 2 > s->trie.mask + 1 && idmap_grow(&s->trie) < 0) return -1;
    uint64_t key = (uint64_t)(uint32_t)(parent + 1) << 32 | (uint32_t)frame;
    size_t i = idmap_slot(&s->trie, key);
    if (s->trie.keys[i]) return s->trie.vals[i];
    int32_t id = (int32_t)s->parent.len;
    if (vec_push(&s->parent, &parent) < 0 || vec_push(&s->frame, &frame) < 0) return -1;
    s->trie.keys[i] = key + 1;
    s->trie.vals[i] = id;
    s->trie.used++;
    return id;
}

/* Trie node of stack-table node id (its ancestors first); UNSET on error or
 * for a node not yet published. Stacks are bounded (the collectors keep at
 * most a few hundred frames), so the chain fits a fixed array. */
static int32_t map_node(snap *s, uint32_t id, uint32_t count) {
    uint32_t chain[1024];
    uint32_t n = 0, at = id;
    while (s->rnode[at] == UNSET) {
        lp_stacknode node = lp_stacktab_node(s->tab, at);
        if (!node.valid || n == LP_ARRAY_LEN(chain)) return UNSET;
        chain[n++] = at;
        if (node.offset == LP_OFFSET_THREAD_ROOT || node.parent == LP_STACK_NONE) break;
        if (node.parent >= count) return UNSET;
        at = node.parent;
    }
    while (n-- > 0) {
        uint32_t k = chain[n];
        lp_stacknode node = lp_stacktab_node(s->tab, k);
        if (node.offset == LP_OFFSET_THREAD_ROOT) {
            s->rnode[k] = ROOT;
            continue;
        }
        int32_t up = node.parent == LP_STACK_NONE ? ROOT : s->rnode[node.parent];
        uint32_t rf = lp_resolve_node_frame(k);
        if (rf == LP_RESOLVE_NO_FRAME || ensure_fmap(s, rf + 1) < 0) return UNSET;
        s->rframes = lp_resolve_frames(); /* resolving may have grown it */
        int32_t under;
        if (!next_state(up, kind_of(s, rf), &under)) {
            s->rnode[k] = under;
            continue;
        }
        int32_t f = out_frame(s, rf);
        int32_t t = f < 0 ? -1 : trie_node(s, under, f);
        if (t < 0) return UNSET;
        s->rnode[k] = t;
    }
    return s->rnode[id];
}

static int add_row(snap *s, int32_t node, uint64_t thread, const int64_t v[LP_M_COUNT]) {
    if ((s->rowmap.used + 1) * 2 > s->rowmap.mask + 1 && idmap_grow(&s->rowmap) < 0) return -1;
    uint64_t key = lp_hash_mix64(thread) ^ (uint64_t)(uint32_t)node;
    /* the key is a hash: confirm the row's own node and thread on a hit */
    size_t i = (size_t)lp_hash_mix64(key) & s->rowmap.mask;
    for (; s->rowmap.keys[i]; i = (i + 1) & s->rowmap.mask) {
        int32_t r = s->rowmap.vals[i];
        if (((int32_t *)s->row_node.data)[r] == node && ((uint64_t *)s->row_thread.data)[r] == thread) {
            int64_t *into = (int64_t *)s->values.data + (size_t)r * LP_M_COUNT;
            for (int m = 0; m < LP_M_COUNT; m++) {
                if (lp_metric_infos[m].merge == LP_MERGE_MAX) into[m] = into[m] > v[m] ? into[m] : v[m];
                else into[m] += v[m];
            }
            return 0;
        }
    }
    int32_t r = (int32_t)s->row_node.len;
    if (vec_push(&s->row_node, &node) < 0 || vec_push(&s->row_thread, &thread) < 0 ||
        vec_push(&s->values, v) < 0)
        return -1;
    s->rowmap.keys[i] = key + 1;
    s->rowmap.vals[i] = r;
    s->rowmap.used++;
    return 0;
}

static void snap_free(snap *s) {
    free(s->fmap);
    free(s->kinds);
    free(s->rnode);
    idmap_free(&s->trie);
    idmap_free(&s->rowmap);
    free(s->parent.data);
    free(s->frame.data);
    free(s->row_node.data);
    free(s->row_thread.data);
    free(s->values.data);
    Py_XDECREF(s->frames);
}

static PyObject *bytes_of(const vec *v) {
    return PyBytes_FromStringAndSize(v->data ? v->data : "", (Py_ssize_t)(v->len * v->item));
}

/* ---- the timeline ------------------------------------------------------ */
typedef struct {
    uint64_t t_ns;
    uint32_t seq; /* drain order: ties keep it */
    int32_t node, thread;
    uint32_t weight_ns;
} tl_row;

static int tl_row_cmp(const void *a, const void *b) {
    const tl_row *x = a, *y = b;
    if (x->t_ns != y->t_ns) return x->t_ns < y->t_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Timeline trie node of output trie node n (its ancestors first); -1 on
 * error. Depth is bounded as in map_node. */
static int32_t tl_node(const snap *s, tl_snap *t, int32_t n) {
    int32_t chain[1024];
    int k = 0;
    const int32_t *parent = (const int32_t *)(void *)s->parent.data, *frame = (const int32_t *)(void *)s->frame.data;
    for (int32_t at = n; at >= 0 && t->tmap[at] < 0; at = parent[at]) {
        if (k == (int)LP_ARRAY_LEN(chain)) return -1;
        chain[k++] = at;
    }
    while (k-- > 0) {
        int32_t at = chain[k], up = parent[at] >= 0 ? t->tmap[parent[at]] : -1;
        int32_t id = (int32_t)t->parent.len;
        if (vec_push(&t->parent, &up) < 0 || vec_push(&t->frame, &frame[at]) < 0) return -1;
        t->tmap[at] = id;
    }
    return t->tmap[n];
}

static int32_t tl_thread(tl_snap *t, uint64_t key) {
    if ((t->threads.used + 1) * 2 > t->threads.mask + 1 && idmap_grow(&t->threads) < 0) return -1;
    size_t i = idmap_slot(&t->threads, key);
    if (t->threads.keys[i]) return t->threads.vals[i];
    int32_t id = (int32_t)t->thread_keys.len;
    if (vec_push(&t->thread_keys, &key) < 0) return -1;
    t->threads.keys[i] = key + 1;
    t->threads.vals[i] = id;
    t->threads.used++;
    return id;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* The timeline as columns (see the header comment), Py_None when empty,
 * NULL with an exception on error. Entries whose stack has no output node
 * (lprof's own frames only, a thread without Python frames, a node not yet
 * published) are left out. Call after the rows: it maps nodes with s. */
static PyObject *timeline_columns(snap *s, uint32_t count, uint64_t origin_ns) {
    lp_timeline *tl = lp_timeline_global();
    uint32_t n = tl ? lp_timeline_count(tl) : 0;
    if (n == 0) Py_RETURN_NONE;
    const lp_timeline_entry *e = lp_timeline_entries(tl);
    tl_snap t;
    memset(&t, 0, sizeof t);
    t.parent.item = t.frame.item = sizeof(int32_t);
    t.thread_keys.item = sizeof(uint64_t);
    PyObject *out = NULL;
    tl_row *rows = malloc(sizeof *rows * n);
    vec dt = {0, 0, 0, sizeof(int64_t)}, node = {0, 0, 0, sizeof(int32_t)}, thread = {0, 0, 0, sizeof(int32_t)},
        weight = {0, 0, 0, sizeof(uint32_t)};
    if (!rows || idmap_init(&t.threads, 64) < 0) goto nomem;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].stack >= count) continue;
        int32_t o = map_node(s, e[i].stack, count);
        if (o < 0) {
            if (PyErr_Occurred()) goto error;
            continue;
        }
        rows[kept++] = (tl_row){e[i].t_ns, i, o, 0, e[i].weight_ns};
    }
    /* the output trie is complete now: map its nodes into the timeline's */
    t.tmap = malloc(sizeof(int32_t) * (s->parent.len + 1));
    if (!t.tmap) goto nomem;
    for (size_t i = 0; i <= s->parent.len; i++) t.tmap[i] = -1;
    qsort(rows, kept, sizeof *rows, tl_row_cmp);
    int64_t prev = 0;
    for (uint32_t i = 0; i < kept; i++) {
        uint64_t key = e[rows[i].seq].thread;
        int32_t nd = tl_node(s, &t, rows[i].node), th = tl_thread(&t, key);
        if (nd < 0 || th < 0) goto nomem;
        int64_t us = floor_div((int64_t)(rows[i].t_ns - origin_ns), 1000), d = us - prev;
        uint32_t w = (uint32_t)(((uint64_t)rows[i].weight_ns + 500) / 1000);
        prev = us;
        if (vec_push(&dt, &d) < 0 || vec_push(&node, &nd) < 0 || vec_push(&thread, &th) < 0 ||
            vec_push(&weight, &w) < 0)
            goto nomem;
    }
    out = Py_BuildValue("(NNNNNNNI)", bytes_of(&dt), bytes_of(&node), bytes_of(&thread), bytes_of(&weight),
                        bytes_of(&t.parent), bytes_of(&t.frame), bytes_of(&t.thread_keys),
                        (unsigned int)lp_timeline_stride(tl));
    goto done;
nomem:
    if (!PyErr_Occurred()) PyErr_NoMemory();
error:
    out = NULL;
done:
    free(rows);
    free(t.tmap);
    free(t.parent.data);
    free(t.frame.data);
    free(t.thread_keys.data);
    idmap_free(&t.threads);
    free(dt.data);
    free(node.data);
    free(thread.data);
    free(weight.data);
    return out;
}

/* ---- the GPU timeline -------------------------------------------------- */
/* Its columns (see the header comment), Py_None when no record is stored.
 * Call after the rows: it maps nodes with s. */
static PyObject *gpu_columns(snap *s, uint32_t count, uint64_t origin_ns) {
    uint32_t n = lp_gpu_trace_count();
    if (n == 0 && lp_gpu_trace_dropped() == 0) Py_RETURN_NONE;
    vec start = {0, 0, 0, sizeof(int64_t)}, end = {0, 0, 0, sizeof(int64_t)}, launch = {0, 0, 0, sizeof(int64_t)},
        dev = {0, 0, 0, sizeof(uint32_t)}, stream = {0, 0, 0, sizeof(uint32_t)}, op = {0, 0, 0, 1},
        dir = {0, 0, 0, 1}, attr = {0, 0, 0, 1}, bytes = {0, 0, 0, sizeof(uint64_t)},
        corr = {0, 0, 0, sizeof(uint32_t)}, node = {0, 0, 0, sizeof(int32_t)}, name = {0, 0, 0, sizeof(int32_t)},
        thread = {0, 0, 0, sizeof(uint64_t)};
    vec *all[] = {&start, &end, &launch, &dev, &stream, &op, &dir, &attr, &bytes, &corr, &node, &name, &thread};
    PyObject *out = NULL, *names = PyList_New(0), *name_ids = PyDict_New();
    if (!names || !name_ids) goto error;
    for (uint32_t i = 0; i < n; i++) {
        const lp_gpu_trace_rec *r = lp_gpu_trace_at(i);
        if (!r) continue; /* still being written by a backend's thread */
        int32_t nd = -1;
        uint64_t key = 0;
        if (r->stack < count) {
            nd = map_node(s, r->stack, count);
            if (nd < 0) {
                if (PyErr_Occurred()) goto error;
                nd = -1;
            }
            key = lp_stacktab_thread(s->tab, r->stack);
        }
        int32_t ni = -1;
        if (r->name) {
            PyObject *str = PyUnicode_DecodeUTF8(r->name, (Py_ssize_t)strlen(r->name), "replace");
            if (!str) goto error;
            PyObject *have = PyDict_GetItemWithError(name_ids, str);
            if (have) {
                ni = (int32_t)PyLong_AsLong(have);
            } else if (!PyErr_Occurred()) {
                ni = (int32_t)PyList_GET_SIZE(names);
                PyObject *idx = PyLong_FromLong(ni);
                int bad = !idx || PyDict_SetItem(name_ids, str, idx) < 0 || PyList_Append(names, str) < 0;
                Py_XDECREF(idx);
                if (bad) {
                    Py_DECREF(str);
                    goto error;
                }
            }
            Py_DECREF(str);
            if (PyErr_Occurred()) goto error;
        }
        int64_t st = (int64_t)(r->start_ns - origin_ns), en = (int64_t)(r->end_ns - origin_ns);
        int64_t la = r->launch_ns ? (int64_t)(r->launch_ns - origin_ns) : INT64_MIN;
        uint8_t o = r->op, d = r->dir, a = r->attributed;
        if (vec_push(&start, &st) < 0 || vec_push(&end, &en) < 0 || vec_push(&launch, &la) < 0 ||
            vec_push(&dev, &r->device) < 0 || vec_push(&stream, &r->stream) < 0 || vec_push(&op, &o) < 0 ||
            vec_push(&dir, &d) < 0 || vec_push(&attr, &a) < 0 || vec_push(&bytes, &r->bytes) < 0 ||
            vec_push(&corr, &r->correlation) < 0 || vec_push(&node, &nd) < 0 || vec_push(&name, &ni) < 0 ||
            vec_push(&thread, &key) < 0) {
            PyErr_NoMemory();
            goto error;
        }
    }
    out = Py_BuildValue("(NNNNNNNNNNNNNOIK)", bytes_of(&start), bytes_of(&end), bytes_of(&launch), bytes_of(&dev),
                        bytes_of(&stream), bytes_of(&op), bytes_of(&dir), bytes_of(&attr), bytes_of(&bytes),
                        bytes_of(&corr), bytes_of(&node), bytes_of(&name), bytes_of(&thread), names,
                        (unsigned int)lp_gpu_trace_capacity(), (unsigned long long)lp_gpu_trace_dropped());
error:
    for (size_t i = 0; i < LP_ARRAY_LEN(all); i++) free(all[i]->data);
    Py_XDECREF(names);
    Py_XDECREF(name_ids);
    return out;
}

static PyObject *py_snapshot(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long origin_ns = 0;
    if (!PyArg_ParseTuple(args, "|K", &origin_ns)) return NULL;
    if (lp_agg_init() < 0) return PyErr_NoMemory();
    lp_agg_drain();
    lp_resolve_scan(NULL);
    snap s;
    memset(&s, 0, sizeof s);
    s.parent.item = s.frame.item = s.row_node.item = sizeof(int32_t);
    s.row_thread.item = sizeof(uint64_t);
    s.values.item = sizeof(int64_t) * LP_M_COUNT;
    s.tab = lp_agg_stacks();
    uint32_t count = lp_stacktab_node_count(s.tab);
    uint32_t rows = lp_stacktab_row_count(s.tab);
    PyObject *out = NULL;
    s.frames = PyList_New(0);
    s.rnode = malloc(sizeof(int32_t) * (count + 1));
    if (!s.frames || !s.rnode || idmap_init(&s.trie, count) < 0 || idmap_init(&s.rowmap, rows) < 0) goto nomem;
    for (uint32_t i = 0; i <= count; i++) s.rnode[i] = UNSET;
    /* resolving may intern marker frames: read the frame list after */
    if (lp_resolve_marker("[no Python frame]") == LP_RESOLVE_NO_FRAME) goto error;
    s.rframes = lp_resolve_frames();
    if (!s.rframes) goto error;
    int64_t v[LP_M_COUNT];
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t sid = lp_stacktab_row(s.tab, r, v);
        if (sid == LP_STACK_NONE || sid >= count) continue;
        int any = 0;
        for (int m = 0; m < LP_M_COUNT; m++) any |= v[m] != 0;
        if (!any) continue;
        int32_t node = map_node(&s, sid, count);
        if (node == UNSET) {
            if (PyErr_Occurred()) goto error;
            continue; /* a node still being published by another thread */
        }
        if (node < 0 && node != ROOT) continue; /* lprof's own work only */
        if (node == ROOT) {                /* no Python frame (a native thread) */
            uint32_t rf = lp_resolve_marker("[no Python frame]");
            s.rframes = lp_resolve_frames();
            int32_t f;
            if (rf == LP_RESOLVE_NO_FRAME || ensure_fmap(&s, rf + 1) < 0 || (f = out_frame(&s, rf)) < 0 ||
                (node = trie_node(&s, ROOT, f)) < 0)
                goto error;
        }
        if (add_row(&s, node, lp_stacktab_thread(s.tab, sid), v) < 0) goto nomem;
    }
    PyObject *timeline = timeline_columns(&s, count, origin_ns);
    if (!timeline) goto error;
    PyObject *gpu = gpu_columns(&s, count, origin_ns);
    if (!gpu) {
        Py_DECREF(timeline);
        goto error;
    }
    out = Py_BuildValue("(ONNNNNNN)", s.frames, bytes_of(&s.parent), bytes_of(&s.frame), bytes_of(&s.row_node),
                        bytes_of(&s.row_thread), bytes_of(&s.values), timeline, gpu);
    snap_free(&s);
    return out;
nomem:
    if (!PyErr_Occurred()) PyErr_NoMemory();
error:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lprof: cannot resolve the stacks");
    snap_free(&s);
    return NULL;
}

static PyObject *py_reset(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    if (lp_agg_source_running()) {
        PyErr_SetString(PyExc_RuntimeError, "stop sampling before reset");
        return NULL;
    }
    lp_agg_drain();
    lp_resolve_reset();
    lp_timeline *tl = lp_timeline_global();
    if (tl) lp_timeline_clear(tl);
    Py_RETURN_NONE;
}

/* stacks_rows(parent, frame, row_node, row_thread, values, names, scales):
 * the row form [[frame ids root first], thread, {metric: value}] of a
 * snapshot, built here rather than in Python (a long --memory run has 10^5
 * rows of 10-30 frames and 27 columns): no per-node tuple cache, one int
 * object per frame id shared by every list, and only non-zero metrics,
 * each multiplied by its column's scale (None: kept an int). */
typedef struct {
    Py_buffer parent, frame, node, thread, values;
    int held;
} row_columns;

static void release_columns(row_columns *c) {
    Py_buffer *all[] = {&c->parent, &c->frame, &c->node, &c->thread, &c->values};
    for (int i = 0; i < c->held; i++) PyBuffer_Release(all[i]);
}

static PyObject *row_path(const int32_t *parent, const int32_t *frame, Py_ssize_t nodes, int32_t n,
                          int32_t *chain, PyObject **ids, int32_t max_frame) {
    Py_ssize_t depth = 0;
    /* a well-formed trie's parents come first; the bound stops a cycle */
    for (; n >= 0 && n < nodes && depth <= nodes; n = parent[n]) chain[depth++] = n;
    PyObject *path = PyList_New(depth);
    if (!path) return NULL;
    for (Py_ssize_t k = 0; k < depth; k++) {
        int32_t f = frame[chain[depth - 1 - k]];
        if (f < 0 || f > max_frame) f = max_frame + 1; /* never made by snapshot */
        if (!ids[f] && !(ids[f] = PyLong_FromLong(f))) { Py_DECREF(path); return NULL; }
        Py_INCREF(ids[f]);
        PyList_SET_ITEM(path, k, ids[f]);
    }
    return path;
}

static PyObject *row_metrics(const int64_t *v, Py_ssize_t width, PyObject *names, const double *scale) {
    PyObject *m = PyDict_New();
    for (Py_ssize_t i = 0; m && i < width; i++) {
        if (!v[i]) continue;
        PyObject *x = scale[i] != 0.0 ? PyFloat_FromDouble((double)v[i] * scale[i]) : PyLong_FromLongLong(v[i]);
        if (!x || PyDict_SetItem(m, PyList_GET_ITEM(names, i), x) < 0) Py_CLEAR(m);
        Py_XDECREF(x);
    }
    return m;
}

static PyObject *py_rows(PyObject *self, PyObject *args) {
    (void)self;
    row_columns c;
    memset(&c, 0, sizeof c);
    PyObject *names, *scales, *out = NULL, **ids = NULL;
    int32_t *chain = NULL;
    double *scale = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!O!", &c.parent, &c.frame, &c.node, &c.thread, &c.values,
                          &PyList_Type, &names, &PyList_Type, &scales))
        return NULL;
    c.held = 5;
    Py_ssize_t width = PyList_GET_SIZE(names), nodes = c.parent.len / (Py_ssize_t)sizeof(int32_t),
               rows = c.node.len / (Py_ssize_t)sizeof(int32_t);
    if (c.frame.len != c.parent.len || c.parent.len % (Py_ssize_t)sizeof(int32_t) ||
        c.node.len % (Py_ssize_t)sizeof(int32_t) || c.thread.len != rows * (Py_ssize_t)sizeof(uint64_t) ||
        PyList_GET_SIZE(scales) != width || c.values.len != rows * width * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "stacks_rows: column lengths differ");
        goto done;
    }
    const int32_t *parent = c.parent.buf, *frame = c.frame.buf, *row_node = c.node.buf;
    const uint64_t *thread = c.thread.buf;
    const int64_t *values = c.values.buf;
    int32_t max_frame = -1;
    for (Py_ssize_t i = 0; i < nodes; i++) max_frame = frame[i] > max_frame ? frame[i] : max_frame;
    ids = calloc((size_t)max_frame + 2, sizeof *ids);
    chain = malloc(sizeof *chain * ((size_t)nodes + 1));
    scale = malloc(sizeof *scale * ((size_t)width + 1));
    if (!ids || !chain || !scale) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < width; i++) {
        PyObject *s = PyList_GET_ITEM(scales, i);
        scale[i] = s == Py_None ? 0.0 : PyFloat_AsDouble(s);
        if (scale[i] == -1.0 && PyErr_Occurred()) goto done;
    }
    out = PyList_New(rows);
    for (Py_ssize_t r = 0; out && r < rows; r++) {
        PyObject *path = row_path(parent, frame, nodes, row_node[r], chain, ids, max_frame);
        PyObject *key = path ? PyLong_FromUnsignedLongLong(thread[r]) : NULL;
        PyObject *m = key ? row_metrics(values + r * width, width, names, scale) : NULL;
        PyObject *row = m ? PyList_New(3) : NULL;
        if (!row) {
            Py_XDECREF(path);
            Py_XDECREF(key);
            Py_XDECREF(m);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(row, 0, path);
        PyList_SET_ITEM(row, 1, key);
        PyList_SET_ITEM(row, 2, m);
        PyList_SET_ITEM(out, r, row);
    }
done:
    if (ids) {
        for (int32_t f = 0; f <= max_frame + 1; f++) Py_XDECREF(ids[f]);
        free(ids);
    }
    free(chain);
    free(scale);
    release_columns(&c);
    return out;
}

/* How full the stack table is and what it holds in memory: the profile
 * says so, and the listing warns once the table overflowed. */
static PyObject *py_table_info(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    lp_stacktab *t = lp_agg_stacks();
    if (!t) Py_RETURN_NONE;
    lp_stacktab_size size;
    lp_stacktab_measure(t, &size);
    return Py_BuildValue("{sIsIsIsIsKsKsK}", "nodes", lp_stacktab_node_count(t), "node_capacity",
                         size.max_nodes, "rows", lp_stacktab_row_count(t), "row_capacity", size.max_rows,
                         "overflows", (unsigned long long)lp_stacktab_overflows(t), "reserved_bytes",
                         (unsigned long long)size.reserved_bytes, "resident_bytes",
                         (unsigned long long)size.resident_bytes);
}

static PyObject *py_metric_names(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    PyObject *out = PyList_New(LP_M_COUNT);
    if (!out) return NULL;
    for (int m = 0; m < LP_M_COUNT; m++) {
        PyObject *item = Py_BuildValue("(sss)", lp_metric_infos[m].name, lp_metric_infos[m].unit,
                                       lp_metric_infos[m].merge == LP_MERGE_MAX ? "max" : "sum");
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, m, item);
    }
    return out;
}

/* {group: [name, ...]}: each section's columns in column order (metrics.h) */
static PyObject *py_metric_groups(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    PyObject *out = PyDict_New();
    for (int m = 0; out && m < LP_M_COUNT; m++) {
        PyObject *names = PyDict_GetItemString(out, lp_metric_infos[m].group_name); /* borrowed */
        if (!names) {
            names = PyList_New(0);
            if (!names || PyDict_SetItemString(out, lp_metric_infos[m].group_name, names) < 0) {
                Py_XDECREF(names);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(names); /* the dict holds it */
        }
        PyObject *name = PyUnicode_FromString(lp_metric_infos[m].name);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(out);
        Py_XDECREF(name);
    }
    return out;
}

/* (name, ...): the columns of audience INTERNAL (metrics.h), never a report's */
static PyObject *py_internal_metrics(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    PyObject *names = PyList_New(0);
    for (int m = 0; names && m < LP_M_COUNT; m++) {
        if (!lp_metric_infos[m].internal) continue;
        PyObject *name = PyUnicode_FromString(lp_metric_infos[m].name);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    if (!names) return NULL;
    PyObject *out = PyList_AsTuple(names);
    Py_DECREF(names);
    return out;
}

static PyObject *py_set_launcher_dir(PyObject *self, PyObject *arg) {
    (void)self;
    const char *dir = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);
    if (arg != Py_None && !dir) return NULL;
    char *copy = dir ? strdup(dir) : NULL;
    if (dir && !copy) return PyErr_NoMemory();
    free(launcher_dir);
    launcher_dir = copy;
    Py_RETURN_NONE;
}

/* set_launcher_roles(callers, entries): see the header comment. */
static PyObject *py_set_launcher_roles(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *c, *e;
    if (!PyArg_ParseTuple(args, "OO", &c, &e)) return NULL;
    PyObject *cs = PyFrozenSet_New(c), *es = cs ? PyFrozenSet_New(e) : NULL;
    if (!es) {
        Py_XDECREF(cs);
        return NULL;
    }
    Py_XSETREF(callers, cs);
    Py_XSETREF(entries, es);
    Py_RETURN_NONE;
}

/* gpu_is_comm(name) -> bool: the one communication/compute rule
 * (gpu_names.c), for names Python holds (the timeline's, a merge's). */
static PyObject *py_gpu_is_comm(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    return PyBool_FromLong(lp_gpu_name_is_comm(name));
}

static PyMethodDef methods[] = {
    {"stacks_snapshot", py_snapshot, METH_VARARGS,
     "stacks_snapshot(origin_ns=0) -> (frames, parent, frame, row_node, row_thread, values, timeline, gpu): "
     "the stack model, arrays as bytes; timeline None or its columns, times from origin_ns (CLOCK_MONOTONIC)."},
    {"stacks_reset", py_reset, METH_NOARGS, "Forget all stacks, frames and code references."},
    {"stacks_rows", py_rows, METH_VARARGS,
     "stacks_rows(parent, frame, row_node, row_thread, values, names, scales) -> [[ids], thread, {metric: v}]"},
    {"stacks_table_info", py_table_info, METH_NOARGS,
     "{nodes, node_capacity, rows, row_capacity, overflows, reserved_bytes, resident_bytes} or None."},
    {"gpu_is_comm", py_gpu_is_comm, METH_O,
     "gpu_is_comm(name) -> bool: a collective library's kernel (NCCL, oneCCL), by its name."},
    {"metric_names", py_metric_names, METH_NOARGS, "[(name, unit, merge)] in column order."},
    {"metric_groups", py_metric_groups, METH_NOARGS,
     "{group: [name, ...]}: the columns each section (sampling, memory, gpu) reads, in column order."},
    {"internal_metrics", py_internal_metrics, METH_NOARGS,
     "(name, ...): the columns kept for the memory sampler's statistics, never shown per line."},
    {"set_launcher_dir", py_set_launcher_dir, METH_O,
     "Frames of files under this folder (lprof's own) are cut from every stack."},
    {"set_launcher_roles", py_set_launcher_roles, METH_VARARGS,
     "set_launcher_roles(caller_files, entries): the files that called lprof's command and the "
     "(file, function) of lprof's functions that run the program; below the command, what no "
     "entry called is lprof's own and left out."},
    {NULL, NULL, 0, NULL},
};

int lp_pystacks_init(PyObject *module) {
    if (lp_agg_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "lprof: cannot reserve the stack table");
        return -1;
    }
    if (lp_resolve_install_hook() < 0) return -1;
    return PyModule_AddFunctions(module, methods);
}
