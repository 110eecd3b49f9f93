"""Loaded by child Python processes of a program run under lprof.

Under `lprof -l`, a script that uses a bare `@profile` must also import in
fresh interpreters (multiprocessing's spawn method re-imports the script), so
`profile` is put into builtins here. When the lprof command follows child
processes (LPROF_FOLLOW set), this child starts profiling itself here, before
its program runs (lprof.process.follow). Then the user's own sitecustomize, if any,
runs as it would have."""

import os
import sys


def _install_profile():
    if os.environ.get("LPROF_BUILTIN_PROFILE") != "1":
        return
    try:
        import builtins

        from lprof import profile

        builtins.profile = profile
    except Exception:  # never break the child program
        pass


def _follow():
    if not os.environ.get("LPROF_FOLLOW"):
        return
    try:
        from lprof.process import follow

        follow.start_from_env()
    except Exception:  # never break the child program (e.g. another Python version)
        pass


def _chain_user_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install_profile()
_follow()
_chain_user_sitecustomize()
