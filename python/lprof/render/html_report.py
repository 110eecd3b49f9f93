"""The HTML report: one self-contained file (no network at view time).

The page's script and style live in render/assets/ (written for lprof, no
third-party code) and are inlined at export time with the report's data
(render/report_data.py) as a JSON block."""

import json
import os
from html import escape

from . import report_data

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")


def asset(name):
    with open(os.path.join(ASSETS, name), encoding="utf-8") as fh:
        return fh.read()


def _json_for_script(obj):
    # inside <script> only "</" can end the block early; "<!--" could open a comment
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render(profile, fold_imports=True):
    """The page as text."""
    data = report_data.build(profile, fold_imports=fold_imports)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>{escape(data['title'])}</title>\n"
        f"<style>\n{asset('report.css')}</style>\n</head>\n<body>\n"
        '<div id="app"><noscript>This report needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="lprof-data">{_json_for_script(data)}'
        "</script>\n"
        f"<script>\n{asset('report.js')}</script>\n</body></html>\n"
    )


def write(profile, out_path, fold_imports=True):
    from ..common.files import write_text

    write_text(out_path, render(profile, fold_imports=fold_imports))
