/* binding: autograd nodes to the forward lines that made them (see
 * gpu_autograd.h). Installed by lprof.collect.gpu_backward with no Python
 * frame of lprof's on the stack while the program's code runs (the stack
 * snapshot cuts stacks at lprof's frames, and the forward kernels' launch
 * stacks must stay as they were):
 * - gpu_autograd_torch_function: a torch function mode's __torch_function__
 *   (bound to the mode), and gpu_autograd_apply: torch.autograd.Function.apply
 *   (custom Functions, which the mode does not see). After the op, each
 *   autograd node it made for its results (the results' grad_fn with an
 *   autograd sequence number from the op's start on; AccumulateGrad nodes,
 *   numbered UINT64_MAX and shared by every use of a leaf, excluded) gets a
 *   pre-hook: a C function bound to the caller's stack id.
 * - the pre-hook sets the running thread's origin (a thread-local, read by
 *   the launch callback). It is not cleared after the node: nodes without a
 *   hook (the op's inner nodes, AccumulateGrad, which autograd runs next on
 *   the same thread) go to the same forward line. gpu_autograd_backward
 *   (torch.autograd.backward and grad) saves the origin around a backward
 *   pass, so work after backward() is not charged to the last node's line.
 * All Python-facing functions run with the GIL held; errors inside the
 * hooking are cleared: the program's op succeeded and must return. */
#include "collect/cpython/gpu_autograd.h"

#include "aggregate/agg.h"
#include "collect/cpython/frames.h"
#include "collect/sampler.h"
#include "cpython/call_around.h"

static __thread uint32_t origin_plus1; /* 0: none; else the stack id + 1 */
static __thread unsigned origin_generation;
static unsigned generation; /* bumped by gpu_reset: origins set before are stale */

static PyObject *get_seq;     /* torch._C._autograd._get_sequence_nr */
static PyObject *tensor_type; /* torch._C.TensorBase */
static PyObject *hooks;       /* {stack id: its pre-hook}, one callable per stack */
static PyObject *s_grad_fn, *s_sequence_nr, *s_register_prehook;
static uint64_t n_ops, n_nodes, n_enters, n_failed;

/* An origin set before the last reset names a stack of a table since
 * cleared (a thread that ran backward then and none since). */
uint32_t lp_gpu_autograd_origin(void) {
    if (!origin_plus1 || origin_generation != __atomic_load_n(&generation, __ATOMIC_RELAXED))
        return LP_STACK_NONE;
    return origin_plus1 - 1;
}

void lp_gpu_autograd_reset(void) {
    origin_plus1 = 0;
    __atomic_fetch_add(&generation, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&n_ops, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&n_nodes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&n_enters, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&n_failed, 0, __ATOMIC_RELAXED);
}

/* A node's pre-hook (self: the forward line's stack id; the hook's
 * gradients argument is ignored; None leaves them as they are). */
static PyObject *py_pre_hook(PyObject *self, PyObject *args) {
    (void)args;
    unsigned long s = PyLong_AsUnsignedLong(self);
    if (s == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    origin_plus1 = s < UINT32_MAX ? (uint32_t)s + 1 : 0;
    origin_generation = __atomic_load_n(&generation, __ATOMIC_RELAXED);
    __atomic_fetch_add(&n_enters, 1, __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}
static PyMethodDef pre_hook_def = {"lprof_backward_origin", py_pre_hook, METH_VARARGS, NULL};

/* The calling thread's next autograd sequence number: the op's start. */
static int next_seq(uint64_t *out) {
    PyObject *v = get_seq ? PyObject_CallNoArgs(get_seq) : NULL;
    if (!v) {
        PyErr_Clear();
        return 0;
    }
    unsigned long long seq = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (seq == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = seq;
    return 1;
}

/* t.grad_fn (new reference) where t is a tensor whose node the op made
 * (sequence number in [start, UINT64_MAX)); NULL otherwise, no error. */
static PyObject *new_node(PyObject *t, uint64_t start) {
    if (PyObject_IsInstance(t, tensor_type) <= 0) return NULL;
    PyObject *node = PyObject_GetAttr(t, s_grad_fn);
    if (!node || node == Py_None) {
        Py_XDECREF(node);
        return NULL;
    }
    PyObject *v = PyObject_CallMethodNoArgs(node, s_sequence_nr);
    unsigned long long seq = v ? PyLong_AsUnsignedLongLong(v) : (unsigned long long)-1;
    Py_XDECREF(v);
    if (seq < start || seq == (unsigned long long)-1) {
        Py_DECREF(node);
        return NULL;
    }
    return node;
}

/* The pre-hook of the caller's stack (borrowed from `hooks`), NULL on error. */
static PyObject *hook_here(void) {
    lp_rawframe frames[LP_SAMPLER_MAX_DEPTH];
    int truncated = 0;
    PyThreadState *ts = PyThreadState_Get();
    int n = lp_pyframes_capture(ts, frames, (int)LP_ARRAY_LEN(frames), &truncated, NULL);
    if (n <= 0) return NULL;
    uint32_t s = lp_agg_intern(lp_pyframes_thread_key(ts), frames, (size_t)n, truncated);
    PyObject *key = PyLong_FromUnsignedLong(s);
    if (!key) return NULL;
    PyObject *hook = PyDict_GetItemWithError(hooks, key);
    if (!hook && !PyErr_Occurred()) {
        hook = PyCFunction_New(&pre_hook_def, key);
        if (hook && PyDict_SetItem(hooks, key, hook) < 0) Py_CLEAR(hook);
        Py_XDECREF(hook); /* the dict holds it */
    }
    Py_DECREF(key);
    return hook;
}

static int hook_node(PyObject *node, PyObject **hook) {
    if (!*hook && !(*hook = hook_here())) return -1;
    PyObject *h = PyObject_CallMethodOneArg(node, s_register_prehook, *hook);
    if (!h) return -1;
    Py_DECREF(h);
    __atomic_fetch_add(&n_nodes, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Hooks the nodes the op that began at sequence number `start` made for
 * its result `out` (a tensor, or a tuple or list of them). */
static void note_result(PyObject *out, uint64_t start) {
    PyObject *hook = NULL, *last = NULL;
    int failed = 0;
    if (!tensor_type) return;
    if (PyTuple_Check(out) || PyList_Check(out)) {
        for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(out); i++) {
            PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(out, i)); /* grad_fn may run Python */
            PyObject *node = new_node(item, start);
            Py_DECREF(item);
            if (node && node != last) failed = hook_node(node, &hook) < 0; /* outputs of one node: once */
            Py_XDECREF(last);
            last = node;
        }
    } else {
        last = new_node(out, start);
        if (last) failed = hook_node(last, &hook) < 0;
    }
    Py_XDECREF(last);
    if (hook) __atomic_fetch_add(&n_ops, 1, __ATOMIC_RELAXED);
    if (failed) __atomic_fetch_add(&n_failed, 1, __ATOMIC_RELAXED);
    if (PyErr_Occurred()) PyErr_Clear();
}

/* gpu_autograd_setup(get_sequence_nr, TensorBase): what the hooks need. */
static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq, *tt;
    if (!PyArg_ParseTuple(args, "OO", &seq, &tt)) return NULL;
    if (!s_grad_fn) {
        s_grad_fn = PyUnicode_InternFromString("grad_fn");
        s_sequence_nr = PyUnicode_InternFromString("_sequence_nr");
        s_register_prehook = PyUnicode_InternFromString("register_prehook");
        if (!s_grad_fn || !s_sequence_nr || !s_register_prehook) return NULL;
    }
    if (!hooks && !(hooks = PyDict_New())) return NULL;
    Py_INCREF(seq);
    Py_XSETREF(get_seq, seq);
    Py_INCREF(tt);
    Py_XSETREF(tensor_type, tt);
    Py_RETURN_NONE;
}

/* gpu_autograd_torch_function(mode, func, types, args=(), kwargs=None):
 * the mode's __torch_function__ (a method of the mode). */
static PyObject *py_torch_function(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *mode, *func, *types, *fargs = NULL, *fkwargs = NULL;
    if (!PyArg_ParseTuple(args, "OOO|OO", &mode, &func, &types, &fargs, &fkwargs)) return NULL;
    PyObject *targs = fargs && fargs != Py_None ? PySequence_Tuple(fargs) : PyTuple_New(0);
    if (!targs) return NULL;
    uint64_t start = 0;
    int known = next_seq(&start);
    PyObject *out = PyObject_Call(func, targs, fkwargs && PyDict_Check(fkwargs) ? fkwargs : NULL);
    Py_DECREF(targs);
    if (out && known) note_result(out, start);
    return out;
}

/* gpu_autograd_apply(apply, cls, *args, **kwargs): Function.apply, as
 * classmethod(partial(gpu_autograd_apply, the original function)). */
static PyObject *py_apply(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "gpu_autograd_apply(apply, cls, ...)");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (!rest) return NULL;
    uint64_t start = 0;
    int known = next_seq(&start);
    PyObject *out = PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, kwargs);
    Py_DECREF(rest);
    if (out && known) note_result(out, start);
    return out;
}

/* gpu_autograd_backward(backward, *args, **kwargs): torch.autograd.backward
 * or grad, the calling thread's origin saved around it (a backward inside a
 * node's backward, as reentrant checkpointing runs, keeps the node's). */
static PyObject *py_backward(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "gpu_autograd_backward(backward, ...)");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (!rest) return NULL;
    uint32_t saved = origin_plus1;
    unsigned saved_generation = origin_generation;
    PyObject *out = PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, kwargs);
    origin_plus1 = saved;
    origin_generation = saved_generation;
    Py_DECREF(rest);
    return out;
}

/* gpu_call_around(before, after, fn, *args, **kwargs): token = before();
 * fn(*args, **kwargs); after(token), also when fn raised; fn's result.
 * lprof's Python code that must see a call (torch_memory's backward spans)
 * runs before and after it, never on the stack while it runs. An error of
 * before or after is cleared (the program's call goes on). */
static PyObject *py_call_around(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    if (PyTuple_GET_SIZE(args) < 3) {
        PyErr_SetString(PyExc_TypeError, "gpu_call_around(before, after, fn, ...)");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 3, PyTuple_GET_SIZE(args));
    if (!rest) return NULL;
    PyObject *out = lp_call_around(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1),
                                   PyTuple_GET_ITEM(args, 2), rest, kwargs);
    Py_DECREF(rest);
    return out;
}

/* gpu_backward_origin() -> the calling thread's origin stack id or None. */
static PyObject *py_origin(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    uint32_t origin = lp_gpu_autograd_origin();
    if (origin == LP_STACK_NONE) Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(origin);
}

static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:K,s:K,s:K,s:K}", "ops",
                         (unsigned long long)__atomic_load_n(&n_ops, __ATOMIC_RELAXED), "nodes",
                         (unsigned long long)__atomic_load_n(&n_nodes, __ATOMIC_RELAXED), "runs",
                         (unsigned long long)__atomic_load_n(&n_enters, __ATOMIC_RELAXED), "failed",
                         (unsigned long long)__atomic_load_n(&n_failed, __ATOMIC_RELAXED));
}

static PyMethodDef methods[] = {
    {"gpu_autograd_setup", py_setup, METH_VARARGS, "gpu_autograd_setup(get_sequence_nr, TensorBase)."},
    {"gpu_autograd_torch_function", py_torch_function, METH_VARARGS,
     "A torch function mode's __torch_function__: hooks the autograd node an op made."},
    {"gpu_autograd_apply", (PyCFunction)(void (*)(void))py_apply, METH_VARARGS | METH_KEYWORDS,
     "gpu_autograd_apply(apply, cls, *args, **kw): Function.apply, hooking the node it made."},
    {"gpu_autograd_backward", (PyCFunction)(void (*)(void))py_backward, METH_VARARGS | METH_KEYWORDS,
     "gpu_autograd_backward(backward, *args, **kw): a backward pass, this thread's origin kept."},
    {"gpu_call_around", (PyCFunction)(void (*)(void))py_call_around, METH_VARARGS | METH_KEYWORDS,
     "gpu_call_around(before, after, fn, *args, **kw): after(before()) around fn, no frame of its own."},
    {"gpu_backward_origin", py_origin, METH_NOARGS,
     "The calling thread's backward origin stack id, or None."},
    {"gpu_backward_stats", py_stats, METH_NOARGS, "Ops and nodes hooked, node pre-hooks run, failures."},
    {NULL, NULL, 0, NULL},
};

int lp_pygpu_autograd_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
