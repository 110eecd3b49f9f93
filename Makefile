# lprof: build, dependencies, tests, sanitizers, benchmarks.
# `make help` lists the targets. The extension's sources and flags live in
# setup.py (one list shared with `pip install .`); this file calls it.

PYTHON ?= python3
PYVERSIONS ?= 3.10 3.11 3.12 3.13
# newer than Debian 12 carries: built and tested in a Debian unstable chroot
SID_VERSIONS ?= 3.14 3.15
export PYTHONDONTWRITEBYTECODE := 1

APT_PACKAGES := python3-dev libunwind-dev libjemalloc-dev libze-dev openmpi-bin libopenmpi-dev gcc g++ make chromium debootstrap clang-format
# clang-format: `make lint` checks the C layout against .clang-format
# debootstrap: the chroot `make matrix` tests CPython $(SID_VERSIONS) in
# mpi4py builds against libopenmpi-dev (the mpirun test of lprof merge)
PIP_PACKAGES := pytest pytest-xdist numpy ipython mpi4py atheris ruff
# optional, from local wheels only (a CPU torch build, where the machine has one)
LOCAL_PIP_PACKAGES := torch==2.13.0

CC ?= gcc
CWARN := -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers
# the pure-C core: every source outside a cpython/ folder and the shim (but
# the shim's shared/ folder, which the extension compiles too)
PURE_SOURCES := $(shell find src -name '*.c' -not -path '*/cpython/*' \( -not -path 'src/collect/shim/*' -o -path 'src/collect/shim/shared/*' \))
ALL_HEADERS := $(shell find src -name '*.h')
CTESTS := $(patsubst tests/c/%.c,tests/c/bin/%,$(wildcard tests/c/test_*.c))
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

.PHONY: all help deps build lint ctest pytest test matrix asan sdist-check bench example clean kernprof-conformance \
	gpu-check reliability-quick reliability fuzz longrun tsan

all: build

help:
	@echo "quick, while working:"
	@echo "make help     this list (make all: the same as make build)"
	@echo "make build    build the C extension in place (PYTHON=$(PYTHON))"
	@echo "make lint     ruff checks and formatting (pyproject.toml), clang-format (.clang-format)"
	@echo "make ctest    the C unit tests (ASan/UBSan) and the signal handler's symbol check"
	@echo "make pytest   build, then the pytest suite on PYTHON"
	@echo "make example  deps + build + profile examples/primes.py end to end"
	@echo "the whole suite and its tiers:"
	@echo "make deps     install apt and pip packages the project needs (idempotent)"
	@echo "make test     deps + lint + build + every tier below (what .ci/run runs)"
	@echo "make tsan     the C unit tests that start threads, under ThreadSanitizer"
	@echo "make reliability-quick  a handful of the differential corpus, a bounded fuzz run"
	@echo "make matrix   build and run pytest on each CPython in PYVERSIONS found on the machine, and"
	@echo "              on SID_VERSIONS in a Debian unstable chroot (build/sid-chroot, needs root)"
	@echo "make asan     build the extension with ASan/UBSan and run the pytest suite under it"
	@echo "make sdist-check  the sdist installs in a fresh venv and its lprof profiles --memory"
	@echo "make kernprof-conformance  line_profiler 5.1's kernprof tests with lprof in kernprof's place"
	@echo "by hand:"
	@echo "make bench    benchmarks against the peer profilers, table in docs/benchmarks.md"
	@echo "make gpu-check  on a machine with an NVIDIA GPU and PyTorch: lprof --gpu vs torch.profiler, docs/gpu-check.md"
	@echo "make reliability  differential corpus (CPython tests, PyPI suites, examples) in every"
	@echo "              mode and the fault tests; writes docs/reliability.md"
	@echo "make fuzz     10^6 fuzzed profile files through view/export (atheris); docs/reliability.md"
	@echo "make longrun  a 10-minute synthetic run under sampling and --memory; docs/reliability.md"
	@echo "make clean    remove build outputs (unmounts the sid chroot first)"

deps:
	@$(PYTHON) tools/deps.py apt $(APT_PACKAGES)
	@$(PYTHON) tools/deps.py pip $(PYTHON) $(PIP_PACKAGES)
	@$(PYTHON) tools/deps.py pip-local $(PYTHON) $(LOCAL_PIP_PACKAGES)

build:
	@$(PYTHON) setup.py -q build_ext --inplace
	@# bytecode as `pip install` would leave it: start-up then skips compiling
	@$(PYTHON) -m compileall -q python/lprof

# the rules are pyproject.toml's [tool.ruff]; `make deps` installs ruff
# the C files clang-format keeps (src, include, the C tests)
C_FORMATTED := $(shell find src include tests/c -name '*.[ch]' -not -path '*/build/*' -not -path 'tests/c/bin/*')

# `ruff format` / `clang-format -i $(C_FORMATTED)` fix what this finds
lint:
	$(PYTHON) -m ruff check python tests tools bench
	$(PYTHON) -m ruff format --check python tools bench
	@echo "clang-format --dry-run --Werror (the $(words $(C_FORMATTED)) C files of src include tests/c)"
	@clang-format --dry-run --Werror $(C_FORMATTED)

# the core is compiled once (ASan/UBSan objects), each test linked against it
CTEST_OBJS := $(patsubst src/%.c,tests/c/obj/%.o,$(PURE_SOURCES))
.SECONDARY: $(CTEST_OBJS)

tests/c/obj/%.o: src/%.c $(ALL_HEADERS)
	@mkdir -p $(dir $@)
	@$(CC) $(CWARN) $(SAN) -g -O1 -Isrc -Iinclude -c -o $@ $<

tests/c/bin/%: tests/c/%.c tests/c/harness.h $(CTEST_OBJS) $(ALL_HEADERS)
	@mkdir -p tests/c/bin
	$(CC) $(CWARN) $(SAN) -g -O1 -Isrc -Iinclude -o $@ $< $(CTEST_OBJS) -lrt -lpthread -lm -ldl

# CUPTI's headers, where this machine has a CUDA toolkit (never needed to build)
CUPTI_INCLUDE := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h $(dir $(realpath $(shell command -v nvcc 2>/dev/null)))../include/cupti.h /usr/local/cuda/include/cupti.h))

ctest: $(CTESTS)
	@CC="$(CC)" sh tests/c/check_handler_symbols.sh
	@# lprof's view of the CUPTI ABI builds without CUDA headers, and matches them where they exist
	$(CC) $(CWARN) -Isrc -fsyntax-only src/collect/gpu/cupti_view_check.c
	$(if $(CUPTI_INCLUDE),$(CC) $(CWARN) -Isrc -DLPROF_HAVE_CUPTI_H -I$(dir $(CUPTI_INCLUDE)) -fsyntax-only src/collect/gpu/cupti_view_check.c,@echo "ctest: no CUPTI headers here: the CUPTI view is not checked against them")
	@set -e; for t in $(CTESTS); do echo "== $$t"; $$t; done

# pytest-xdist workers: PYTEST_JOBS (default: the cores, at most 4; 1 = serial)
pytest: build
	$(PYTHON) -m pytest $(shell $(PYTHON) tools/pytest_jobs.py $(PYTHON)) tests/python

matrix:
	@$(PYTHON) tools/matrix.py $(PYVERSIONS)
	@$(PYTHON) tools/sid_matrix.py $(SID_VERSIONS)

asan:
	@$(PYTHON) tools/asan.py

sdist-check:
	@$(PYTHON) tools/sdist_check.py

test: deps lint build ctest tsan pytest reliability-quick matrix asan sdist-check kernprof-conformance
	@echo "all test tiers passed"

# line_profiler 5.1.0's own kernprof tests with lprof in kernprof's place
# (a venv under build/; pip fetches line_profiler's sdist and wheel), with
# line_profiler's reader and with lprof view as `python -m line_profiler`
kernprof-conformance: build
	$(PYTHON) tools/kernprof_conformance.py --reader line_profiler
	$(PYTHON) tools/kernprof_conformance.py --reader lprof --installed

# In make test: a handful of the corpus, a bounded fuzz run (seconds).
reliability-quick: build
	$(PYTHON) tools/corpus.py quick
	$(PYTHON) tools/fuzz_reader.py --runs 20000 --seconds 60 --workdir build/fuzz-quick --report build/fuzz-quick.json

RELDATA := docs/reliability-data
reliability: deps build
	$(PYTHON) tools/corpus.py all --report $(RELDATA)/corpus.json || true
	$(PYTHON) tools/reliability_report.py faults --out $(RELDATA)/faults.json
	$(PYTHON) tools/reliability_report.py render

fuzz: deps build
	nice $(PYTHON) tools/fuzz_reader.py --runs 1000000 --workdir build/fuzz-long --report $(RELDATA)/fuzz.json
	$(PYTHON) tools/reliability_report.py render

longrun: deps build
	nice $(PYTHON) tools/longrun.py --seconds 600 --report $(RELDATA)/longrun.json
	$(PYTHON) tools/reliability_report.py render

# ThreadSanitizer over the C unit tests that start threads (the ring's and the
# stack table's concurrent writers and readers); `make test` runs it.
TSAN_TESTS := test_ring test_stacktab test_gpu_trace test_outside_read
tsan:
	@mkdir -p tests/c/bin-tsan
	@set -e; for n in $(TSAN_TESTS); do \
	  $(CC) $(CWARN) -fsanitize=thread -g -O1 -Isrc -Iinclude -o tests/c/bin-tsan/$$n tests/c/$$n.c $(PURE_SOURCES) -lrt -lpthread -lm -ldl; \
	  echo "== tsan $$n"; TSAN_OPTIONS="halt_on_error=1" setarch -R tests/c/bin-tsan/$$n; done

bench: deps build
	$(PYTHON) bench/run.py --out docs/benchmarks.md

# No deps step: the GPU machine reaches no package registry; the allocator
# shim (jemalloc) is not needed there.
gpu-check:
	LPROF_NO_SHIM=1 $(PYTHON) setup.py -q build_ext --inplace
	$(PYTHON) tools/gpu_check.py

example: deps build
	PYTHONPATH=python $(PYTHON) -m lprof -l -v examples/primes.py 2000

clean:
	@# the chroot's /proc and /dev/shm must be unmounted before build/ goes
	@$(PYTHON) tools/sid_matrix.py --unmount
	rm -rf build tests/c/bin tests/c/obj tests/c/bin-tsan python/lprof/*.so src/collect/shim/build .venv-*
