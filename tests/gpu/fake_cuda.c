/* Test double of the NVIDIA driver's library (libcuda.so.1): lprof only
 * asks whether one can be loaded before it uses CUPTI. */
int cuDriverGetVersion(int *version) {
    *version = 13000;
    return 0;
}
