/* A C extension whose work runs on threads of its own that never run Python
 * (as BLAS, OpenMP or a C library's pool does), built by
 * tests/python/test_other_threads.py. Each thread spins until its own CPU
 * clock has advanced by the asked time, and reports what it used, so the
 * test compares lprof with the threads' own clocks, not with a constant.
 *
 * spin(n, seconds, release_gil=True) -> CPU seconds the n threads used:
 *     starts them and joins them; the caller waits in native code, with or
 *     without the GIL.
 * beside(n, seconds) -> CPU seconds the n threads used: the caller spins
 *     as long itself, holding the GIL, then joins them.
 * start(n, seconds) -> None: starts them in the background and returns.
 * join() -> CPU seconds those threads used (waits for them, GIL released). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <time.h>

#define MAX_THREADS 16

typedef struct {
    pthread_t thread;
    double seconds, used, sink;
} job;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *spin_main(void *arg) {
    job *j = arg;
    double start = thread_cpu(), now = start;
    volatile double acc = 0;
    while (now - start < j->seconds) {
        for (int i = 0; i < 100000; i++) acc += (double)i * 0.5;
        now = thread_cpu();
    }
    j->sink = acc; /* read once: GCC 16 calls a volatile only ever written unused */
    j->used = now - start;
    return NULL;
}

static int start_jobs(job *jobs, int n, double seconds) {
    for (int i = 0; i < n; i++) {
        jobs[i].seconds = seconds;
        jobs[i].used = 0;
        if (pthread_create(&jobs[i].thread, NULL, spin_main, &jobs[i]) != 0) return i;
    }
    return n;
}

static double join_jobs(job *jobs, int n) {
    double used = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(jobs[i].thread, NULL);
        used += jobs[i].used;
    }
    return used;
}

static int parse_n(int n) {
    if (n < 1 || n > MAX_THREADS) {
        PyErr_SetString(PyExc_ValueError, "n must be 1..16");
        return -1;
    }
    return 0;
}

static PyObject *spin(PyObject *self, PyObject *args) {
    (void)self;
    int n, release = 1;
    double seconds;
    if (!PyArg_ParseTuple(args, "id|p", &n, &seconds, &release) || parse_n(n) < 0) return NULL;
    job jobs[MAX_THREADS];
    int started;
    double used;
    if (release) {
        Py_BEGIN_ALLOW_THREADS
        started = start_jobs(jobs, n, seconds);
        used = join_jobs(jobs, started);
        Py_END_ALLOW_THREADS
    } else { /* the caller holds the GIL while it waits */
        started = start_jobs(jobs, n, seconds);
        used = join_jobs(jobs, started);
    }
    if (started < n) return PyErr_Format(PyExc_RuntimeError, "started %d of %d threads", started, n);
    return PyFloat_FromDouble(used);
}

static PyObject *beside(PyObject *self, PyObject *args) {
    (void)self;
    int n;
    double seconds;
    if (!PyArg_ParseTuple(args, "id", &n, &seconds) || parse_n(n) < 0) return NULL;
    job jobs[MAX_THREADS];
    int started = start_jobs(jobs, n, seconds);
    job me = {0, seconds, 0, 0};
    spin_main(&me); /* GIL held */
    double used = join_jobs(jobs, started);
    if (started < n) return PyErr_Format(PyExc_RuntimeError, "started %d of %d threads", started, n);
    return PyFloat_FromDouble(used);
}

static job background[MAX_THREADS];
static int n_background;

static PyObject *start(PyObject *self, PyObject *args) {
    (void)self;
    int n;
    double seconds;
    if (!PyArg_ParseTuple(args, "id", &n, &seconds) || parse_n(n) < 0) return NULL;
    if (n_background) {
        PyErr_SetString(PyExc_RuntimeError, "join() the threads started before");
        return NULL;
    }
    n_background = start_jobs(background, n, seconds);
    if (n_background < n) return PyErr_Format(PyExc_RuntimeError, "started %d of %d threads", n_background, n);
    Py_RETURN_NONE;
}

static PyObject *join(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    double used;
    Py_BEGIN_ALLOW_THREADS
    used = join_jobs(background, n_background);
    Py_END_ALLOW_THREADS
    n_background = 0;
    return PyFloat_FromDouble(used);
}

static PyMethodDef methods[] = {
    {"spin", spin, METH_VARARGS, "spin(n, seconds, release_gil=True): n threads each spin seconds of CPU; joined"},
    {"beside", beside, METH_VARARGS, "beside(n, seconds): the same, the caller spinning as long, GIL held"},
    {"start", start, METH_VARARGS, "start(n, seconds): the same threads, in the background"},
    {"join", join, METH_NOARGS, "join(): waits for start()'s threads; the CPU seconds they used"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "lpthreads", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_lpthreads(void) { return PyModule_Create(&module); }
