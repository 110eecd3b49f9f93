/* Test double of the NVIDIA driver's library (libcuda.so.1): lprof only
 * asks whether one can be loaded before it uses CUPTI. cuInit counts its
 * calls: starting lprof must not initialise the driver (a program that
 * forks before its first CUDA call needs an uninitialised one). */
static int init_calls;

int cuDriverGetVersion(int *version) {
    *version = 13000;
    return 0;
}

int cuInit(unsigned flags) {
    (void)flags;
    __atomic_fetch_add(&init_calls, 1, __ATOMIC_RELAXED);
    return 0;
}

/* CUDA_ERROR_NOT_INITIALIZED (3) until cuInit, as the driver answers. */
int cuDeviceGetCount(int *count) {
    *count = 1;
    return __atomic_load_n(&init_calls, __ATOMIC_RELAXED) ? 0 : 3;
}

int fake_cuda_init_calls(void) { return __atomic_load_n(&init_calls, __ATOMIC_RELAXED); }
