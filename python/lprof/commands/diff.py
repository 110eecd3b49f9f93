"""`lprof diff BEFORE AFTER`: lines and functions that got slower or heavier."""
import sys

from ..errors import LprofError
from ..model import profile_file
from ..outputs import write_text


def main(args):
    from ..model.compare import compare
    from ..render import diff_report
    before = profile_file.load(args.before)
    after = profile_file.load(args.after)
    try:
        result = compare(before, after, metric=args.metric)
    except ValueError as exc:
        raise LprofError(str(exc), 2) from None
    if args.html:
        text = diff_report.render_html(result, args.before, args.after, top=max(args.top, 100))
        try:
            write_text(args.html, text)
        except OSError as exc:
            raise LprofError(f"cannot write {args.html}: {exc.strerror}", 2) from None
        sys.stderr.write(f"lprof: wrote {args.html}\n")
    sys.stdout.write(diff_report.render_text(result, args.before, args.after, top=args.top))
    return 0
