"""Address space kept back for the end of the run. A program that uses up its
address space (ulimit -v, RLIMIT_AS: common on shared clusters) would leave
lprof nothing to build and write the profile with. So a recording holds a
mapping with no access (address space only: no memory, nothing touched) from
its start, and gives it back when it stops, just before the profile is built.
A fork inherits it, and gives back its own copy the same way. The mapping is
the C core's (src/common/headroom.c): taken by system call, so the allocator
shim of --memory never counts it as the program's, and given back without
letting go of the GIL (no wait for another thread at the end of the run)."""

from .. import _lprof

SIZE = 16 << 20


def take():
    """Holds SIZE bytes of address space (nothing if it cannot: lprof then
    runs without the headroom, as before)."""
    _lprof.headroom_take(SIZE)


def release():
    """Gives it back (idempotent)."""
    _lprof.headroom_release()
