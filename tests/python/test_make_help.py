"""`make help` names every target of the Makefile, the quick ones first."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _makefile():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        return f.read()


def _targets(text):
    """The Makefile's named targets (rules, not pattern rules or variables)."""
    return {m.group(1) for m in re.finditer(r"^([a-z][\w-]*):(?!=)", text, re.M)}


def _help_lines():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


def test_help_names_every_target():
    helped = set()
    for line in _help_lines():
        helped.update(re.findall(r"\bmake ([a-z][\w-]*)", line))
    assert _targets(_makefile()) - helped == set()


def test_phony_lists_every_target():
    text = _makefile()
    phony = set(re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", text, re.M).group(1).replace("\\\n", " ").split())
    assert _targets(text) - phony == set()


def test_quick_targets_come_first():
    lines = _help_lines()
    quick = lines[:lines.index("the whole suite and its tiers:")]
    named = {w for line in quick for w in re.findall(r"^make ([a-z][\w-]*)", line)}
    assert {"build", "lint", "ctest", "pytest"} <= named
