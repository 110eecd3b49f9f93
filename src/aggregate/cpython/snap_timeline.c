/* aggregate: the snapshot's two timelines as columns: the sampled stacks in
 * time order (aggregate/timeline.h) and the GPU's records (gpu_trace.h),
 * each entry's stack mapped to the snapshot's trie (snap.h). */
#include "aggregate/cpython/snap.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate/gpu_trace.h"
#include "aggregate/timeline.h"

/* ---- the sample timeline ----------------------------------------------- */
/* The timeline's columns, built after the stacks (see timeline_columns). */
typedef struct {
    int32_t *tmap;     /* output trie node -> timeline trie node, -1 none */
    vec parent, frame; /* the timeline's trie: only the nodes it uses */
    idmap threads;     /* thread key -> index */
    vec thread_keys;
} tl_snap;

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
 * error. Depth is bounded as in snap_map_node. */
static int32_t tl_node(const snap *s, tl_snap *t, int32_t n) {
    int32_t chain[1024];
    int k = 0;
    const int32_t *parent = (const int32_t *)(void *)s->parent.data,
                  *frame = (const int32_t *)(void *)s->frame.data;
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
PyObject *snap_timeline_columns(snap *s, uint32_t count, uint64_t origin_ns) {
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
    vec dt = {0, 0, 0, sizeof(int64_t)}, node = {0, 0, 0, sizeof(int32_t)},
        thread = {0, 0, 0, sizeof(int32_t)}, weight = {0, 0, 0, sizeof(uint32_t)};
    if (!rows || idmap_init(&t.threads, 64) < 0) goto nomem;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].stack >= count) continue;
        int32_t o = snap_map_node(s, e[i].stack, count);
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
    out = Py_BuildValue("(NNNNNNNI)", snap_bytes_of(&dt), snap_bytes_of(&node), snap_bytes_of(&thread),
                        snap_bytes_of(&weight), snap_bytes_of(&t.parent), snap_bytes_of(&t.frame),
                        snap_bytes_of(&t.thread_keys), (unsigned int)lp_timeline_stride(tl));
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
PyObject *snap_gpu_columns(snap *s, uint32_t count, uint64_t origin_ns) {
    uint32_t n = lp_gpu_trace_count();
    if (n == 0 && lp_gpu_trace_dropped() == 0) Py_RETURN_NONE;
    vec start = {0, 0, 0, sizeof(int64_t)}, end = {0, 0, 0, sizeof(int64_t)},
        launch = {0, 0, 0, sizeof(int64_t)}, dev = {0, 0, 0, sizeof(uint32_t)},
        stream = {0, 0, 0, sizeof(uint32_t)}, op = {0, 0, 0, 1}, dir = {0, 0, 0, 1}, attr = {0, 0, 0, 1},
        bytes = {0, 0, 0, sizeof(uint64_t)}, corr = {0, 0, 0, sizeof(uint32_t)},
        node = {0, 0, 0, sizeof(int32_t)}, name = {0, 0, 0, sizeof(int32_t)},
        thread = {0, 0, 0, sizeof(uint64_t)};
    vec *all[] = {&start, &end,   &launch, &dev,  &stream, &op,    &dir,
                  &attr,  &bytes, &corr,   &node, &name,   &thread};
    PyObject *out = NULL, *names = PyList_New(0), *name_ids = PyDict_New();
    if (!names || !name_ids) goto error;
    for (uint32_t i = 0; i < n; i++) {
        const lp_gpu_trace_rec *r = lp_gpu_trace_at(i);
        if (!r) continue; /* still being written by a backend's thread */
        int32_t nd = -1;
        uint64_t key = 0;
        if (r->stack < count) {
            nd = snap_map_node(s, r->stack, count);
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
    out =
        Py_BuildValue("(NNNNNNNNNNNNNOIK)", snap_bytes_of(&start), snap_bytes_of(&end),
                      snap_bytes_of(&launch), snap_bytes_of(&dev), snap_bytes_of(&stream), snap_bytes_of(&op),
                      snap_bytes_of(&dir), snap_bytes_of(&attr), snap_bytes_of(&bytes), snap_bytes_of(&corr),
                      snap_bytes_of(&node), snap_bytes_of(&name), snap_bytes_of(&thread), names,
                      (unsigned int)lp_gpu_trace_capacity(), (unsigned long long)lp_gpu_trace_dropped());
error:
    for (size_t i = 0; i < LP_ARRAY_LEN(all); i++) free(all[i]->data);
    Py_XDECREF(names);
    Py_XDECREF(name_ids);
    return out;
}
