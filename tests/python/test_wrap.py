"""render/wrap.py stands in for textwrap.wrap (words never broken, hyphens
kept) to spare every run textwrap's import: its lines must be textwrap's,
on random texts of words, long words, hyphens, tabs, newlines, runs of
spaces and non-ASCII spaces (which textwrap keeps inside words)."""
import random
import textwrap

from lprof.render.wrap import wrap

WORDS = ["a", "bb", "ccc", "supercalifragilistic-expialidocious", "x-y", "0.5%", "(lprof)",
         "\xa0nb", "\t", "  ", "ünï"]
GAPS = [" ", "  ", "\t", "\n", "\r\n", " \x0b "]


def test_wrap_gives_textwraps_lines():
    rng = random.Random(35)
    for _ in range(5000):
        parts = []
        for _ in range(rng.randint(0, 30)):
            parts += [rng.choice(WORDS), rng.choice(GAPS)]
        text = rng.choice(["", " ", "  ", "\n"]) + "".join(parts)
        width = rng.randint(5, 40)
        first, rest = rng.choice(["", "  ", "   "]), rng.choice(["", "  ", "    "])
        want = textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                             break_on_hyphens=False, break_long_words=False)
        assert wrap(text, width, first, rest) == want, (text, width, first, rest)


def test_the_listing_does_not_import_textwrap():
    import subprocess
    import sys
    from conftest import lprof_env
    code = ("import sys, lprof.render.sampled_listing, lprof.model.timeline;"
            "print(sorted(m for m in ('textwrap', 'array') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=lprof_env(), check=True).stdout
    assert out.strip() == "[]", out
