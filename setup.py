"""Build of the lprof package and its C extension.

This file is the one list of sources and flags: the Makefile builds through it
(`setup.py build_ext --inplace`), and `pip install .` uses it too.
"""
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))

# The same rule as python/lprof/process/support.py, before anything is compiled: one
# line, not a page of compiler errors.
if sysconfig.get_config_var("Py_GIL_DISABLED"):
    sys.exit("lprof: free-threaded CPython (%d.%dt) is not supported yet: build lprof with the "
             "default (GIL) interpreter" % sys.version_info[:2])
if sys.version_info[:2] < (3, 10):
    sys.exit("lprof: needs CPython 3.10 or newer, this is %d.%d" % sys.version_info[:2])

# Every C file under src/ belongs to the extension, except src/collect/shim/
# (the LD_PRELOAD allocator, a separately built binary with its own Makefile);
# its shared/ folder (the byte sampler, the live-block table) is compiled by
# both, as the extension keeps its own tables with them.
SHIM_DIR = os.path.join("src", "collect", "shim")
SHIM_SHARED_DIR = os.path.join(SHIM_DIR, "shared")
SOURCES = sorted(p for p in glob.glob("src/**/*.c", recursive=True)
                 if not p.startswith(SHIM_DIR + os.sep) or p.startswith(SHIM_SHARED_DIR + os.sep))

CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2", "-g",
          "-fvisibility=hidden", "-Wno-missing-field-initializers",
          "-Wno-cast-function-type"]
if os.environ.get("LPROF_SANITIZE"):
    CFLAGS += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
               "-fno-sanitize-recover=undefined", "-O1"]
LDFLAGS = ["-lrt", "-ldl", "-lpthread", "-lm"]
if os.environ.get("LPROF_SANITIZE"):
    LDFLAGS += ["-fsanitize=address,undefined"]


def _python_include_flags():
    # Internal CPython headers (frame layouts) live next to the public ones.
    inc = sysconfig.get_paths()["include"]
    return [inc, os.path.join(inc, "internal")]


def _cupti_include_dir():
    """A folder with CUPTI's headers, if this machine has one: then
    src/collect/gpu/cupti_view_check.c checks lprof's view of the CUPTI ABI
    against them at compile time. lprof builds and runs without them (it
    loads libcupti at run time)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    dirs = [os.path.join(r, sub) for r in roots if r for sub in ("include", "extras/CUPTI/include")]
    site = sysconfig.get_paths()["purelib"]
    dirs += [os.path.join(site, "nvidia", "cu13", "include"),
             os.path.join(site, "nvidia", "cuda_cupti", "include")]
    for d in dirs:
        if os.path.exists(os.path.join(d, "cupti.h")):
            return d
    return None


CUPTI_INCLUDE = None if os.environ.get("LPROF_NO_CUPTI_HEADERS") else _cupti_include_dir()
if CUPTI_INCLUDE:
    CFLAGS.append("-DLPROF_HAVE_CUPTI_H")


def _have_libunwind_ptrace():
    """libunwind-ptrace (remote unwinding: `lprof dump --native`), when its
    header and libraries link here (Debian: libunwind-dev). lprof builds
    without it; --native then says so. LPROF_NO_LIBUNWIND_PTRACE=1 builds
    without it on purpose (the tests of that message). The extension does
    not link it: src/collect/remote/remote_native.c loads it in lprof dump
    only, so that libunwind's _Unwind_* never enter a profiled process."""
    if os.environ.get("LPROF_NO_LIBUNWIND_PTRACE"):
        return False
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    src = "#include <libunwind-ptrace.h>\nint main(void) { return _UPT_create(0) != 0; }\n"
    try:
        r = subprocess.run(cc.split() + ["-x", "c", "-", "-o", os.devnull] + LIBUNWIND_PTRACE_LIBS,
                           input=src.encode(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    return r.returncode == 0


LIBUNWIND_PTRACE_LIBS = ["-lunwind-ptrace", "-lunwind-generic"]
if _have_libunwind_ptrace():
    CFLAGS.append("-DLPROF_HAVE_LIBUNWIND_PTRACE")


class BuildExtWithShim(build_ext):
    """Also builds the LD_PRELOAD allocator shim (src/collect/shim, its own Makefile)
    and puts it into the package as lprof/liblprof_shim.so."""

    def run(self):
        super().run()
        if os.environ.get("LPROF_NO_SHIM"):  # make gpu-check on a machine without jemalloc
            return
        subprocess.check_call(["make", "--no-print-directory", "-s", "-C",
                               os.path.join(HERE, SHIM_DIR)])
        dest = (os.path.join(HERE, "python", "lprof") if self.inplace
                else os.path.join(self.build_lib, "lprof"))
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(os.path.join(HERE, SHIM_DIR, "build", "liblprof_shim.so"),
                     os.path.join(dest, "liblprof_shim.so"))


ext = Extension(
    "lprof._lprof",
    sources=SOURCES,
    include_dirs=["src", "include"] + _python_include_flags() + ([CUPTI_INCLUDE] if CUPTI_INCLUDE else []),
    extra_compile_args=CFLAGS,
    extra_link_args=LDFLAGS,
    depends=sorted(glob.glob("src/**/*.h", recursive=True) + glob.glob("include/lprof/*.h")),
)

def _long_description():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as fh:
        return fh.read()


setup(
    name="lprof",
    version="0.1.0",
    description="Line-level CPU, wall and memory profiler for Python, written in C",
    long_description=_long_description(),
    long_description_content_type="text/markdown",
    license="MIT",
    classifiers=["Programming Language :: C",
                 "Programming Language :: Python :: 3",
                 "Programming Language :: Python :: 3 :: Only",
                 "Programming Language :: Python :: 3.10",
                 "Programming Language :: Python :: 3.11",
                 "Programming Language :: Python :: 3.12",
                 "Programming Language :: Python :: 3.13",
                 "Programming Language :: Python :: 3.14",
                 "Programming Language :: Python :: 3.15",
                 "Programming Language :: Python :: Implementation :: CPython",
                 "Operating System :: POSIX :: Linux",
                 "Topic :: Software Development :: Debuggers"],
    # pyproject.toml's [tool.lprof] table on Pythons without tomllib
    install_requires=['tomli>=1.1; python_version < "3.11"'],
    package_dir={"": "python"},
    packages=["lprof", "lprof.common", "lprof.collect", "lprof.model", "lprof.export",
              "lprof.render", "lprof.process", "lprof.commands", "lprof._bootstrap"],
    package_data={"lprof._bootstrap": ["sitecustomize.py"],
                  "lprof.render": ["assets/report.js", "assets/report.css"]},
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtWithShim},
    entry_points={"console_scripts": ["lprof=lprof.cli:entry"]},
    python_requires=">=3.10",
)
