/* aggregate: the task split (aggregate/task_split.h) as columns of the
 * snapshot, each pair's stack mapped to the snapshot's trie (snap.h). */
#include "aggregate/cpython/snap.h"

#include <stdlib.h>

#include "aggregate/task_split.h"

PyObject *snap_task_columns(snap *s, uint32_t count) {
    const lp_task_split *split = lp_agg_task_split();
    uint32_t n = lp_task_split_count(split);
    if (n == 0) return Py_NewRef(Py_None);
    vec node = {.item = sizeof(int32_t)}, thread = {.item = sizeof(uint64_t)},
        task = {.item = sizeof(uint32_t)}, values = {.item = sizeof(int64_t) * LP_M_COUNT};
    PyObject *out = NULL;
    int64_t v[LP_M_COUNT] = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sid, serial;
        lp_task_split_get(split, i, &sid, &serial, v); /* the sampling columns; the rest stay 0 */
        if (sid >= count) continue;
        int32_t at = snap_map_node(s, sid, count);
        if (at < 0) { /* lprof's own, no Python frame, or not yet published */
            if (PyErr_Occurred()) goto done;
            continue;
        }
        uint64_t th = lp_stacktab_thread(s->tab, sid);
        if (vec_push(&node, &at) < 0 || vec_push(&thread, &th) < 0 || vec_push(&task, &serial) < 0 ||
            vec_push(&values, v) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    out = Py_BuildValue("(NNNNK)", snap_bytes_of(&node), snap_bytes_of(&thread), snap_bytes_of(&task),
                        snap_bytes_of(&values), (unsigned long long)lp_task_split_full(split));
done:
    free(node.data);
    free(thread.data);
    free(task.data);
    free(values.data);
    return out;
}
