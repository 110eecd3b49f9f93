"""Where library code lives: the standard library, site-packages and lprof
itself. Listings hide these files by default, and memory is charged to the
innermost frame outside them."""
import functools
import os


@functools.lru_cache(maxsize=1)
def library_dirs():
    """Real paths of the library folders, each ending with os.sep."""
    import sysconfig  # its first get_paths() costs a few ms: only when asked
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if paths.get(key)}
    dirs.add(os.path.dirname(os.path.realpath(__file__)))  # lprof
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


@functools.lru_cache(maxsize=65536)
def is_library_file(path):
    """True for a file under library_dirs() or any site-/dist-packages."""
    real = os.path.realpath(path)
    if "site-packages" in real or "dist-packages" in real:
        return True
    return real.startswith(library_dirs())
