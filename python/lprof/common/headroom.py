"""Address space kept back for the end of the run. A program that uses up its
address space (ulimit -v, RLIMIT_AS: common on shared clusters) would leave
lprof nothing to build and write the profile with. So a recording holds a
mapping with no access (address space only: no memory, nothing touched) from
its start, and gives it back when it stops, just before the profile is built.
A fork inherits it, and gives back its own copy the same way."""

import mmap

SIZE = 16 << 20
_held = None


def take():
    """Holds SIZE bytes of address space (nothing if it cannot: lprof then
    runs without the headroom, as before)."""
    global _held
    if _held is None:
        try:
            _held = mmap.mmap(-1, SIZE, flags=mmap.MAP_PRIVATE, prot=0)  # PROT_NONE
        except (OSError, ValueError):
            _held = None


def release():
    """Gives it back (idempotent)."""
    global _held
    if _held is not None:
        _held.close()
        _held = None
