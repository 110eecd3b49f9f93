"""Splits `lprof [options] TARGET args...` as `python` does: lprof's options
end at the target (a script path, `-m MODULE`, `-c CODE` or `-`); every word
after it belongs to the program, even words that look like lprof's options
(`lprof -m pytest -q` makes pytest quiet, not lprof).

argparse alone cannot do this: it would take `-q` after `-m pytest` for
itself. So the words are walked here with the parser's own table of which
options take a value, and only lprof's part is handed to argparse."""

import argparse


class Target:
    """What to run: kind is "script", "module", "code" or "stdin"."""

    def __init__(self, kind=None, value=None, args=()):
        self.kind, self.value, self.args = kind, value, list(args)


# options that name the target; the word after them (or the rest of the
# word, as in `-mpytest`) is the module or the code
TARGET_OPTIONS = {"-m": "module", "-c": "code"}


def _option_table(parser):
    table = {}
    for action in parser._actions:
        for opt in action.option_strings:
            table[opt] = action
    return table


def _takes_value(action):
    """ "yes", "no" or "maybe" (nargs="?": an optional value)."""
    if action.nargs == 0:
        return "no"
    if action.nargs == argparse.OPTIONAL:
        return "maybe"
    return "yes"


def _optional_value_fits(action, word):
    """An option with an optional value takes the next word only when that
    word is one of its values (`--native all`, `-i 2`, `--builtin no`)."""
    if word is None or word.startswith("-") and not _is_number(word):
        return False
    if action.choices is not None:
        return word in action.choices
    if action.type is not None:
        try:
            action.type(word)
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            return False
        return True
    return False


def _is_number(word):
    try:
        float(word)
    except ValueError:
        return False
    return True


def split(parser, argv):
    """(lprof's own words, Target). The Target's kind is None when argv
    names no program (argparse then reports what is missing)."""
    table = _option_table(parser)
    own = []
    i = 0
    while i < len(argv):
        word = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if word == "--":
            if nxt is None:
                return own, Target()
            return own, Target("script", nxt, argv[i + 2 :])
        if word == "-":
            return own, Target("stdin", "-", argv[i + 1 :])
        if word.startswith("--"):
            name, eq, _value = word.partition("=")
            action = table.get(name)
            own.append(word)
            if action is not None and not eq:
                kind = _takes_value(action)
                if (kind == "yes" and nxt is not None) or (
                    kind == "maybe" and _optional_value_fits(action, nxt)
                ):
                    own.append(nxt)
                    i += 1
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            # a cluster of short options: -lv, -ofile, -o file, -mpytest
            takes_next = False
            j = 1
            while j < len(word):
                opt, rest = "-" + word[j], word[j + 1 :]
                if opt in TARGET_OPTIONS:
                    before = [word[:j]] if j > 1 else []
                    if rest:
                        return own + before, Target(TARGET_OPTIONS[opt], rest, argv[i + 1 :])
                    if nxt is None:  # argparse reports the missing value
                        return own + [word], Target()
                    return own + before, Target(TARGET_OPTIONS[opt], nxt, argv[i + 2 :])
                action = table.get(opt)
                if action is None:  # unknown: argparse reports it
                    break
                kind = _takes_value(action)
                if kind == "no":
                    j += 1
                    continue
                # the value is the rest of this word, else maybe the next word
                takes_next = not rest and (
                    kind == "yes" and nxt is not None or kind == "maybe" and _optional_value_fits(action, nxt)
                )
                break
            own.append(word)
            if takes_next:
                own.append(nxt)
                i += 1
            i += 1
            continue
        return own, Target("script", word, argv[i + 1 :])
    return own, Target()
