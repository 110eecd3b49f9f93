"""Option defaults from pyproject.toml, as kernprof reads them.

Two tables, the nearer to the command line winning:
  [tool.lprof]                    any of lprof's long options, spelled as on
                                  the command line without the dashes
  [tool.line_profiler.kernprof]   kernprof's table (line-by-line, builtin,
                                  skip-zero, summarize, unit, outfile, setup,
                                  output-interval, prof-mod, verbose, ...)
Command-line options override both. The file is the one named by --config,
else by $LINE_PROFILER_RC (line_profiler's variable), else the nearest
line_profiler.toml or pyproject.toml from the current folder up; --no-config
skips it. TOML is read with tomllib (3.11+) or tomli where it is installed."""

import argparse
import os
import re

from ..common.errors import LprofError

KERNPROF_TABLE = ("tool", "line_profiler", "kernprof")
VIEWER_TABLE = ("tool", "line_profiler", "cli")  # `python -m line_profiler`'s: lprof view's
# the -l listing's column widths, as line_profiler's show table sets them
WIDTHS_TABLE = ("tool", "line_profiler", "show", "column_widths")
WIDTH_KEYS = ("line", "hits", "time", "perhit", "percent")
LPROF_TABLE = ("tool", "lprof")

# where a file can hold one of those tables: a dotted tool.lprof or
# tool.line_profiler (header or key), a bare [tool] table, or an inline
# `tool = {...}`. Only such a file is parsed: loading the TOML parser costs
# 3-4 ms of every start, and most projects' pyproject.toml holds none
_MAY_HOLD_OPTIONS = re.compile(
    rb"""\btool["']?\s*\.\s*["']?(?:lprof|line_profiler)\b"""
    rb"""|^\s*\[\s*["']?tool["']?\s*\]|^\s*["']?tool["']?\s*=""",
    re.M,
)
_parsed = {}  # (path, bytes) -> read()'s tables: a run reads them twice

# kernprof's keys that mean nothing to lprof (accepted, ignored)
KERNPROF_IGNORED = {"rich"}


def find_pyproject(start=None):
    """The nearest line_profiler.toml or pyproject.toml (that order in a
    folder, as line_profiler looks) from the current folder up."""
    folder = os.path.abspath(start or os.getcwd())
    while True:
        for name in ("line_profiler.toml", "pyproject.toml"):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return path
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _toml_loader():
    try:
        import tomllib

        return tomllib
    except ImportError:
        pass
    try:
        import tomli

        return tomli
    except ImportError:
        return None


def _table(doc, keys):
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc if isinstance(doc, dict) else {}


def read(path, explicit):
    """{dest: value} of the two tables; {} when there is nothing to read."""
    if path is None:
        return {}, None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        if explicit:
            raise LprofError(f"--config {path}: {exc.strerror}", 2) from None
        return {}, None
    if not _MAY_HOLD_OPTIONS.search(data):
        return {}, None
    if (path, data) not in _parsed:
        _parsed[path, data] = _parse(path, data)
    return _parsed[path, data]


def _parse(path, data):
    loader = _toml_loader()
    if loader is None:
        return {}, (
            f"{path}: its [tool.lprof] / [tool.line_profiler] options need "
            "Python 3.11+ or the tomli package; ignored"
        )
    try:
        doc = loader.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LprofError(f"{path}: not valid TOML ({exc})", 2) from None
    return {
        "kernprof": _table(doc, KERNPROF_TABLE),
        "lprof": _table(doc, LPROF_TABLE),
        "viewer": _table(doc, VIEWER_TABLE),
        "widths": _table(doc, WIDTHS_TABLE),
    }, None


def config_path(named, no_config):
    """The config file to read: --config's, else $LINE_PROFILER_RC's, else the
    nearest one found; (path, explicit)."""
    if no_config:
        return None, False
    named = named or os.environ.get("LINE_PROFILER_RC") or None
    return (named or find_pyproject()), bool(named)


def column_widths(path, explicit):
    """{column: width} of [tool.line_profiler.show.column_widths] (line, hits,
    time, perhit, percent), for the -l listing; {} when unset."""
    if path is None:
        return {}
    tables, _warning = read(path, explicit)
    out = {}
    where = f"{path} [{'.'.join(WIDTHS_TABLE)}]"
    for key, value in (tables.get("widths") or {}).items():
        if key not in WIDTH_KEYS:
            raise LprofError(f"{where}: unknown column '{key}' (columns: {', '.join(WIDTH_KEYS)})", 2)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 80:
            raise LprofError(f"{where} {key}: must be a whole number from 1 to 80", 2)
        out[key] = value
    return out


VIEWER_KEYS = {"unit": float, "skip-zero": bool, "sort": bool, "summarize": bool, "rich": bool}


def viewer_defaults(path, explicit):
    """lprof view's defaults from [tool.line_profiler.cli] (what `python -m
    line_profiler` reads): {dest: value}."""
    tables, _warning = read(path, explicit)
    out = {}
    where = f"{path} [{'.'.join(VIEWER_TABLE)}]"
    for key, value in (tables.get("viewer") or {}).items():
        kind = VIEWER_KEYS.get(key)
        if kind is None:
            raise LprofError(f"{where}: unknown option '{key}'", 2)
        if kind is bool and not isinstance(value, bool):
            raise LprofError(f"{where} {key}: must be true or false", 2)
        if kind is float and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
        ):
            raise LprofError(f"{where} {key}: must be a positive number", 2)
        if key == "sort":
            out["sort"] = "time" if value else "file"
        elif key == "rich":
            continue  # plain text only
        else:
            out[key.replace("-", "_")] = value
    return out


def defaults(parser, path, explicit):
    """Parser defaults from the tables of `path` (see the module docstring);
    the second value is a warning line or None."""
    tables, warning = read(path, explicit)
    if not tables:
        return {}, warning
    by_option = {}
    for action in parser._actions:
        for opt in action.option_strings:
            if opt.startswith("--"):
                by_option[opt[2:]] = action
    out = {}
    for table_name, table in (("kernprof", tables["kernprof"]), ("lprof", tables["lprof"])):
        where = ".".join(KERNPROF_TABLE) if table_name == "kernprof" else ".".join(LPROF_TABLE)
        for key, value in table.items():
            if table_name == "kernprof" and key in KERNPROF_IGNORED:
                continue
            action = by_option.get(key)
            if action is None or action.dest in ("help", "version", "config", "no_config"):
                raise LprofError(f"{path} [{where}]: unknown option '{key}'", 2)
            out[action.dest] = _convert(action, value, f"{path} [{where}] {key}")
    return out, None


def _convert(action, value, where):
    """A TOML value as the option's own parser would have read it."""
    if isinstance(action, argparse._CountAction):
        if isinstance(value, bool) or not isinstance(value, int):
            raise LprofError(f"{where}: must be an integer", 2)
        return value
    if action.nargs == 0 or getattr(action, "is_switch", False):
        if not isinstance(value, bool):
            raise LprofError(f"{where}: must be true or false", 2)
        return value if action.const is not False else not value
    if isinstance(action, argparse._AppendAction):
        values = value if isinstance(value, list) else [value]
        return [str(v) for v in values if str(v)]
    if isinstance(value, (list, dict)):
        raise LprofError(f"{where}: must be a single value", 2)
    if action.type is not None and not isinstance(value, bool):
        try:
            value = action.type(value if isinstance(value, str) else str(value))
        except (TypeError, ValueError):
            raise LprofError(f"{where}: invalid value {value!r}", 2) from None
    if action.choices is not None and value not in action.choices:
        raise LprofError(f"{where}: must be one of {', '.join(map(str, action.choices))}", 2)
    if value == "" and action.dest in ("outfile", "setup"):
        return None  # kernprof's spelling of "not set"
    return value
