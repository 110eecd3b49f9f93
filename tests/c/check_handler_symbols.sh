#!/bin/sh
# Fails when the sampler's signal handler can call something that is not
# async-signal-safe: compiles the handler's unit (src/collect/sampler_handler.c),
# the ring it writes into (src/collect/ring.c) and its stack encoding
# (src/collect/frame_chain.c) and the task serials the host looks up for it
# (src/collect/task_ids.c) as the extension does, and
# checks every undefined symbol of each object (`nm -u`) against ALLOW or the
# set's own definitions. Calls through the host's walker pointers are not
# symbols; the host promises those (LP_SIGNAL_SAFE in collect/sampler.h).
# Run by `make ctest`; CC as for the build.
set -eu
CC=${CC:-gcc}
UNITS="src/collect/sampler_handler.c src/collect/ring.c src/collect/frame_chain.c src/collect/task_ids.c"
# errno, the gettid syscall, compiler-emitted copies, the stack protector's
# abort; aarch64 outline atomics (libgcc, lock-free); clock_gettime (the
# sample's time; async-signal-safe in POSIX, a vDSO call on Linux). No TLS,
# no malloc, no stdio.
# sigaction and raise: a SIGTRAP no perf event raised gets its default action
ALLOW="__errno_location syscall memcpy memmove memset __stack_chk_fail clock_gettime sigaction raise"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for opt in -O2 -O0; do
    defined=""
    for src in $UNITS; do
        obj="$tmp/$(basename "$src" .c)$opt.o"
        $CC -std=gnu11 $opt -fvisibility=hidden -Isrc -Iinclude -c "$src" -o "$obj"
        defined="$defined $(nm --defined-only -g "$obj" | awk '{print $3}' | tr '\n' ' ')"
    done
    for src in $UNITS; do
        obj="$tmp/$(basename "$src" .c)$opt.o"
        for sym in $(nm -u "$obj" | awk '{print $2}'); do
            case " $ALLOW $defined " in *" $sym "*) continue ;; esac
            case "$sym" in __aarch64_*) continue ;; esac
            echo "check_handler_symbols: $src ($opt) calls '$sym', not on the async-signal-safe allowlist" \
                 "(tests/c/check_handler_symbols.sh): keep it out of the signal handler" >&2
            status=1
        done
    done
done
[ $status -eq 0 ] && echo "handler symbols: only async-signal-safe calls ($UNITS)"
exit $status
