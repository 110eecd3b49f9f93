"""The HTML report, one self-contained file (built by lprof.render.html_report)."""


def write(profile, path, metric=None, fold_imports=True):
    from ..render import html_report

    html_report.write(profile, path, fold_imports=fold_imports)
