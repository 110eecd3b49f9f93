"""A CUDA program for lprof --gpu tests without a GPU: it "launches" through
tests/gpu/fake_cupti.c (loaded with ctypes from LPROF_CUPTI_PATH, the same
library lprof's CUPTI collector loaded), from known lines:
a matmul-like kernel (30 us each), an elementwise kernel (1 us each), a
4 KiB host-to-device copy, a 1 MiB device allocation freed again, and one
kernel from a thread without Python."""
import builtins
import ctypes
import os
import sys

profile = getattr(builtins, "profile", lambda f: f)  # lprof -l injects it

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_memcpy.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_malloc.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
lib.fake_cupti_free.argtypes = [ctypes.c_uint64]
lib.fake_cupti_launch_from_native_thread.argtypes = [ctypes.c_char_p]


def matmul():
    lib.fake_cupti_launch_kernel(b"_Z4gemmPfS_i", 30000)  # marker: gemm


def elementwise():
    lib.fake_cupti_launch_kernel(b"add_kernel", 1000)  # marker: add


@profile
def step(i):
    lib.fake_cupti_malloc(0x7000000 + i * 0x100000, 1 << 20)  # marker: alloc
    lib.fake_cupti_memcpy(1, 4096, 500)  # marker: copy
    matmul()  # marker: matmul call
    elementwise()  # marker: elementwise call
    lib.fake_cupti_free(0x7000000 + i * 0x100000)


for i in range(10):
    step(i)
lib.fake_cupti_launch_from_native_thread(b"backward_kernel")  # marker: other thread
print("enabled", lib.fake_cupti_enabled(2, 211), lib.fake_cupti_enabled(1, 307))
sys.exit(int(os.environ.get("WORKLOAD_EXIT", "0")))
