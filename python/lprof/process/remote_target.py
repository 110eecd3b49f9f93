"""Another process's Python, found from outside for lprof dump (and attach's
fallback): which CPython it runs, where its `_PyRuntime` is, and the layout
its stacks are read with. Nothing here runs code in the target: the process's
/proc files and the ELF symbol tables of its executable and libpython on disk
are read, and lprof's C reader (collect/remote/remote.c) reads its memory.

Layouts: a 3.13+ target publishes its own (_Py_DebugOffsets at the start of
_PyRuntime, read by the C reader). For 3.10-3.12 the layout is the one an
lprof extension built for that version computes from its headers: this
interpreter's own when the versions match, else the matching extension
next to this one (_lprof.cpython-3X-*.so), loaded by an interpreter of that
version (python3.X on PATH, else the target's executable; a new process) to
print its numbers.
docs/design-remote.md says more."""

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys

from ..common.errors import LprofError

_VERSION_IN_NAME = re.compile(r"(?:^|/)(?:lib)?python(3)\.(\d+)[^/]*$")


class Target:
    """pid, version (major, minor) or None, runtime (the address of
    _PyRuntime), exe (its executable's path)."""

    def __init__(self, pid, version, runtime, exe):
        self.pid, self.version, self.runtime, self.exe = pid, version, runtime, exe


def _maps(pid, verb):
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise LprofError(f"{verb}: no process {pid}", 2) from None
    except PermissionError:
        raise LprofError(
            f"{verb}: not permitted to read process {pid} (run lprof as its user "
            f"or as root; see /proc/sys/kernel/yama/ptrace_scope)",
            1,
        ) from None
    except OSError as exc:
        raise LprofError(f"{verb}: cannot read process {pid}: {exc.strerror}", 2) from None
    maps = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        lo, _hi = (int(x, 16) for x in parts[0].split("-"))
        maps.append((lo, int(parts[2], 16), parts[5].replace(" (deleted)", "")))
    return maps


def _elf_symbol(path, name):
    """(e_type, st_value, lowest PT_LOAD vaddr) of `name` in path's .dynsym
    or .symtab, or None. 64-bit little-endian ELF only (x86-64 Linux)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        e_type = struct.unpack_from("<H", data, 16)[0]
        e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
        e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
        low = None
        for i in range(e_phnum):
            p_type, _flags, _off, p_vaddr = struct.unpack_from("<IIQQ", data, e_phoff + i * e_phentsize)
            if p_type == 1 and (low is None or p_vaddr < low):  # PT_LOAD
                low = p_vaddr
        sections = [
            struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)
        ]
        want = name.encode()
        for sh_type in (11, 2):  # SHT_DYNSYM, SHT_SYMTAB
            for sec in sections:
                if sec[1] != sh_type or sec[6] >= len(sections):
                    continue
                strtab = sections[sec[6]]
                str_off, str_size = strtab[4], strtab[5]
                off, size, entsize = sec[4], sec[5], sec[9] or 24
                for k in range(off, off + size - entsize + 1, entsize):
                    st_name = struct.unpack_from("<I", data, k)[0]
                    s = str_off + st_name
                    if st_name >= str_size or data[s : s + len(want) + 1] != want + b"\0":
                        continue
                    st_value = struct.unpack_from("<Q", data, k + 8)[0]
                    if st_value:
                        return e_type, st_value, (low or 0) & ~0xFFF
    except struct.error:
        return None
    return None


def find(pid, verb="dump"):
    """The Target of process `pid`; LprofError (one line) when it does not
    exist, cannot be read, or shows no CPython."""
    if pid <= 0:
        raise LprofError(f"{verb}: {pid} is not a process id", 2)
    maps = _maps(pid, verb)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = None
    # libpython first (a shared build, or an embedding program), then the executable
    files = []
    for _lo, _off, path in maps:
        if path not in files and re.search(r"/libpython3\.\d+[^/]*\.so", path):
            files.append(path)
    if exe and exe not in files:
        files.append(exe.replace(" (deleted)", ""))
    for path in files:
        on_disk = _on_target_fs(pid, path)
        runtime = _address(maps, path, _elf_symbol(on_disk, "_PyRuntime"))
        if runtime is None:
            continue
        # the version: Py_Version (3.11+: PY_VERSION_HEX in the process), else the file's name
        version = _version_word(pid, _address(maps, path, _elf_symbol(on_disk, "Py_Version")))
        if version is None:
            m = _VERSION_IN_NAME.search(path) or (exe and _VERSION_IN_NAME.search(exe))
            version = (int(m.group(1)), int(m.group(2))) if m else None
        return Target(pid, version, runtime, exe)
    raise LprofError(
        f"{verb}: process {pid} ({os.path.basename(exe or '?')}) is not a CPython "
        f"process lprof can read (no _PyRuntime symbol in its executable or "
        f"libpython)",
        2,
    )


def _address(maps, path, sym):
    """Where the symbol `sym` (_elf_symbol's answer) of `path` is in the process."""
    if sym is None:
        return None
    e_type, value, low = sym
    if e_type == 2:  # ET_EXEC: absolute addresses
        return value
    starts = [lo - off for lo, off, p in maps if p == path]
    return min(starts) - low + value if starts else None


def _version_word(pid, addr):
    if addr is None:
        return None
    from .. import _lprof

    status, data = _lprof.remote_read(pid, addr, 8)
    if status != _lprof.REMOTE_OK:
        return None  # the reads after say why, in one line
    hexversion = struct.unpack("<Q", data)[0]
    major, minor = (hexversion >> 24) & 0xFF, (hexversion >> 16) & 0xFF
    return (major, minor) if major == 3 else None


def _on_target_fs(pid, path):
    # the file as the target sees it (another mount namespace, a container)
    alt = f"/proc/{pid}/root{path}"
    return alt if os.path.exists(alt) else path


_PRINT_LAYOUT = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("lprof._lprof", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
print(json.dumps(mod.remote_layout()))
"""


def _interpreters_for(target, version):
    """Interpreters of `version` to load lprof's extension for it, in order:
    python3.X on PATH (the user's own), then the target's executable when it
    is that Python (as attach runs it for sys.remote_exec)."""
    name = "python%d.%d" % version
    found = [p for p in (shutil.which(name),) if p]
    if (
        target.exe
        and os.path.basename(target.exe).startswith(name)
        and os.access(target.exe, os.X_OK)
        and target.exe not in found
    ):
        found.append(target.exe)
    return found


def layout(target, verb="dump"):
    """The layout dict for the C reader, or None: read the target's debug
    offsets (3.13+). LprofError when lprof has no layout for its version."""
    from .. import _lprof

    version = target.version
    if version is None or version >= (3, 13):
        return None  # the C reader checks the cookie and says what it finds
    if version < (3, 10):
        raise LprofError(
            f"{verb}: process {target.pid} runs Python {version[0]}.{version[1]}; lprof reads 3.10 and later",
            2,
        )
    if version == sys.version_info[:2]:
        return _lprof.remote_layout()
    here = os.path.dirname(os.path.abspath(_lprof.__file__))
    built = glob.glob(os.path.join(here, "_lprof.cpython-%d%d-*.so" % version))
    pythons = _interpreters_for(target, version)
    why = None
    if not built:
        why = "lprof's extension is not built for it"
    elif not pythons:
        why = f"no python{version[0]}.{version[1]} to load lprof's extension for it"
    for python in pythons if built else ():
        try:
            r = subprocess.run(
                [python, "-I", "-S", "-c", _PRINT_LAYOUT, built[0]],
                capture_output=True,
                text=True,
                timeout=60,
            )
            got = json.loads(r.stdout) if r.returncode == 0 else None
            if isinstance(got, dict) and got.get("version_hex", 0) >> 16 == (version[0] << 8 | version[1]):
                return got
            why = (r.stderr.strip().splitlines() or [f"{python}: exit status {r.returncode}"])[-1]
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            why = str(exc)
    raise LprofError(
        f"{verb}: process {target.pid} runs Python {version[0]}.{version[1]}, whose "
        f"frame layout lprof takes from its extension built for that version "
        f"({why}); build it with python{version[0]}.{version[1]} setup.py build_ext, "
        f"or run lprof under that Python",
        2,
    )
