"""argparse parsers for lprof's commands, without CPython 3.14's colour import.

3.14's HelpFormatter imports _colorize in its constructor (every parser makes
one), and _colorize imports dataclasses and with them inspect: 8-12 ms of
every lprof start (importtime), for colours lprof's help does not use. 3.15
imports _colorize only for a coloured help and otherwise formats with a
theme of empty strings; on 3.14 this formatter does the same, without colour.
Elsewhere it is argparse's own."""

import argparse
import sys


class _ColorlessTheme:
    """Every colour of a theme, as the empty string."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return ""


def _identity(text):
    return text


if sys.version_info[:2] == (3, 14):

    class HelpFormatter(argparse.HelpFormatter):
        def _set_color(self, color):  # 3.14's: imports _colorize for its themes
            self._theme = _ColorlessTheme()
            self._decolor = _identity

else:
    HelpFormatter = argparse.HelpFormatter


def parser(**kwargs):
    """argparse.ArgumentParser(**kwargs), with this module's formatter."""
    kwargs.setdefault("formatter_class", HelpFormatter)
    return argparse.ArgumentParser(**kwargs)
