/* aggregate: the stack snapshot's build: every stack-table node resolved
 * (resolve.c) and interned into a trie keyed by (parent, frame), the rows
 * that land on the same (node, thread) combined by their columns' merge
 * kinds (snap.h says the whole). GIL held throughout. */
#include "aggregate/cpython/snap.h"
#include "aggregate/cpu_split.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate/cpython/resolve.h"

int snap_ensure_fmap(snap *s, size_t n) {
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

/* Output frame id of resolve frame rf (copied on first use); -1 on error. */
static int32_t snap_out_frame(snap *s, uint32_t rf) {
    if (s->fmap[rf] >= 0) return s->fmap[rf];
    int32_t id = (int32_t)PyList_GET_SIZE(s->frames);
    if (PyList_Append(s->frames, PyList_GET_ITEM(s->rframes, rf)) < 0) return -1;
    s->fmap[rf] = id;
    return id;
}

/* Trie node for (parent, frame): existing or new; -1 on error. */
static int32_t snap_trie_node(snap *s, int32_t parent, int32_t frame) {
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
int32_t snap_map_node(snap *s, uint32_t id, uint32_t count) {
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
        if (rf == LP_RESOLVE_NO_FRAME || snap_ensure_fmap(s, rf + 1) < 0) return UNSET;
        s->rframes = lp_resolve_frames(); /* resolving may have grown it */
        int32_t under;
        if (!snap_next_state(up, snap_kind_of(s, rf), &under)) {
            s->rnode[k] = under;
            continue;
        }
        int32_t f = snap_out_frame(s, rf);
        int32_t t = f < 0 ? -1 : snap_trie_node(s, under, f);
        if (t < 0) return UNSET;
        s->rnode[k] = t;
    }
    return s->rnode[id];
}

static int snap_add_row(snap *s, int32_t node, uint64_t thread, const int64_t v[LP_M_COUNT]) {
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

/* The outside reads' split samples spent on their rows' CPU columns, pooled
 * by line: the row's innermost frame (aggregate/cpu_split.h). */
static int snap_spend_split(snap *s) {
    size_t rows = s->row_node.len, frames = (size_t)PyList_GET_SIZE(s->frames);
    int64_t *values = (int64_t *)(void *)s->values.data;
    const int32_t *row_node = (const int32_t *)(void *)s->row_node.data,
                  *frame = (const int32_t *)(void *)s->frame.data;
    int any = 0;
    for (size_t r = 0; r < rows && !any; r++)
        any = values[r * LP_M_COUNT + LP_M_SPLIT_PYTHON] || values[r * LP_M_COUNT + LP_M_SPLIT_NATIVE] ||
              values[r * LP_M_COUNT + LP_M_SPLIT_SYSTEM];
    if (!any) return 0;
    lp_cpu_split *by_line = calloc(frames + 1, sizeof *by_line);
    if (!by_line) return -1;
    for (size_t r = 0; r < rows; r++) {
        int32_t f = frame[row_node[r]];
        lp_cpu_split_gather(&by_line[f >= 0 && (size_t)f < frames ? (size_t)f : frames],
                            values + r * LP_M_COUNT);
    }
    for (size_t r = 0; r < rows; r++) {
        int32_t f = frame[row_node[r]];
        lp_cpu_split_apply(values + r * LP_M_COUNT,
                           &by_line[f >= 0 && (size_t)f < frames ? (size_t)f : frames]);
    }
    free(by_line);
    return 0;
}

static void snap_release(snap *s) {
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

PyObject *snap_bytes_of(const vec *v) {
    return PyBytes_FromStringAndSize(v->data ? v->data : "", (Py_ssize_t)(v->len * v->item));
}

PyObject *snap_take(uint64_t origin_ns) {
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
    if (!s.frames || !s.rnode || idmap_init(&s.trie, count) < 0 || idmap_init(&s.rowmap, rows) < 0)
        goto nomem;
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
        int32_t node = snap_map_node(&s, sid, count);
        if (node == UNSET) {
            if (PyErr_Occurred()) goto error;
            continue; /* a node still being published by another thread */
        }
        if (node < 0 && node != ROOT) continue; /* lprof's own work only */
        if (node == ROOT) {                     /* no Python frame (a native thread) */
            uint32_t rf = lp_resolve_marker("[no Python frame]");
            s.rframes = lp_resolve_frames();
            int32_t f;
            if (rf == LP_RESOLVE_NO_FRAME || snap_ensure_fmap(&s, rf + 1) < 0 ||
                (f = snap_out_frame(&s, rf)) < 0 || (node = snap_trie_node(&s, ROOT, f)) < 0)
                goto error;
        }
        if (snap_add_row(&s, node, lp_stacktab_thread(s.tab, sid), v) < 0) goto nomem;
    }
    if (snap_spend_split(&s) < 0) goto nomem;
    PyObject *timeline = snap_timeline_columns(&s, count, origin_ns);
    if (!timeline) goto error;
    PyObject *gpu = snap_gpu_columns(&s, count, origin_ns);
    if (!gpu) {
        Py_DECREF(timeline);
        goto error;
    }
    PyObject *tasks = snap_task_columns(&s, count);
    if (!tasks) {
        Py_DECREF(timeline);
        Py_DECREF(gpu);
        goto error;
    }
    out = Py_BuildValue("(ONNNNNNNN)", s.frames, snap_bytes_of(&s.parent), snap_bytes_of(&s.frame),
                        snap_bytes_of(&s.row_node), snap_bytes_of(&s.row_thread), snap_bytes_of(&s.values),
                        timeline, gpu, tasks);
    snap_release(&s);
    return out;
nomem:
    if (!PyErr_Occurred()) PyErr_NoMemory();
error:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lprof: cannot resolve the stacks");
    snap_release(&s);
    return NULL;
}
