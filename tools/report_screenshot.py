"""Regenerates docs/report.png, the HTML report's screenshot in docs/usage.md:
profiles examples/report_demo.py with --memory and photographs the top of
the page in headless Chromium (1400x900, as a laptop shows it).

usage: python3 tools/report_screenshot.py   (from the repository root, after make build)"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

from headless_browser import Browser  # noqa: E402 (tests/python is on the path from above)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        html = os.path.join(tmp, "report.html")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "lprof",
                "-q",
                "--memory",
                "--html",
                html,
                "-o",
                os.path.join(tmp, "demo.lprof"),
                os.path.join("examples", "report_demo.py"),
            ],
            env=env,
            cwd=ROOT,
            check=True,
        )
        out = os.path.join(ROOT, "docs", "report.png")
        with Browser(1400, 900) as b:
            b.load("file://" + html)
            errors = b.errors()
            if errors:
                sys.exit("report.html has errors: " + "; ".join(errors))
            b.screenshot(out)
        print("wrote", os.path.relpath(out, ROOT))


if __name__ == "__main__":
    main()
