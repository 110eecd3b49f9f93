// The C++ half of the test extension: a function whose symbol is mangled
// (_ZN6lpdemo6Burner3runEl), to be shown demangled in native stacks.
namespace lpdemo {
struct Burner {
    __attribute__((noinline)) static double run(long n) {
        volatile double acc = 0;
        for (long i = 0; i < n; i++) acc += (double)i * 0.25;
        return acc;
    }
};
}  // namespace lpdemo

extern "C" double lpdemo_cxx_burn(long n) {
    double r = lpdemo::Burner::run(n);
    __asm__ volatile("" ::: "memory");
    return r;
}
