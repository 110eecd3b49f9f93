"""tools/sid_matrix.py's and tools/matrix.py's own logic (the runs themselves are `make matrix`)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import sid_matrix  # noqa: E402 (tools/ is on the path from the line above)


def test_mirror_read_from_deb822_and_one_line_sources(tmp_path):
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.example/debian-security\n"
                      "Suites: bookworm-security\n\n"
                      "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n")
    assert sid_matrix.host_mirror([str(deb822)]) == "http://mirror.example/debian"
    one_line = tmp_path / "sources.list"
    one_line.write_text("# comment\ndeb [arch=amd64] https://local.example/debian bookworm main\n")
    assert sid_matrix.host_mirror([str(one_line), str(deb822)]) == "https://local.example/debian"
    assert sid_matrix.host_mirror([str(tmp_path / "missing")]) == "http://deb.debian.org/debian"


def test_packages_name_each_version():
    pkgs = sid_matrix.packages_for(["3.14", "3.15"])
    for need in ("python3.14-dev", "python3.14-venv", "python3.15-dev", "python3.15-venv",
                 "gcc", "g++", "libunwind-dev", "libjemalloc-dev"):
        assert need in pkgs


def test_skips_in_one_line_without_root_but_fails_under_ci(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.delenv("CI", raising=False)
    assert sid_matrix.main(["3.14"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["sid-matrix: CPython 3.14 skipped: it needs root (chroot)"]
    monkeypatch.setenv("CI", "true")
    assert sid_matrix.main(["3.14"]) == 1


def test_words_that_are_not_versions_are_refused_before_anything_runs(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(sid_matrix, "ensure_chroot", lambda versions: ran.append(versions))
    assert sid_matrix.main(["--bogus"]) == 2
    assert sid_matrix.main([]) == 2
    err = capsys.readouterr().out
    assert "--bogus: not a CPython version" in err and "no version given" in err and ran == []
    assert sid_matrix.main(["--help"]) == 0
    assert "usage: sid_matrix.py" in capsys.readouterr().out and ran == []


def test_matrix_refuses_words_that_are_not_versions(monkeypatch, capsys):
    """tools/matrix.py took --help for a version, looked for its interpreter
    and said it passed."""
    import matrix
    ran = []
    monkeypatch.setattr(matrix, "run", lambda cmd, **kw: ran.append(cmd) or 0)
    assert matrix.main(["--help"]) == 0
    assert "usage: matrix.py" in capsys.readouterr().out
    assert matrix.main(["3.12", "--bogus"]) == 2
    assert "not a CPython version: --bogus" in capsys.readouterr().err and ran == []
