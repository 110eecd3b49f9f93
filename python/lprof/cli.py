"""lprof's command line: dispatch to the verbs of commands/.

The only place that turns an LprofError into `lprof: <message>` and an exit
status. Verbs: run (default: `lprof [options] script.py args`; its parser is
commands/run_args.py), view, export, diff, merge, attach, dump (each module's parser()).

Run under the name `kernprof` (a link or copy of the console script, `python
-m kernprof` where lprof.kernprof is that module, lprof.kernprof.main), lprof
is kernprof: its defaults too (commands/kernprof_mode.py)."""

import os
import sys

from .common import libdirs
from .common.errors import LprofError

# the verbs other than run: each module in commands/ owns its parser() and main(args)
VERBS = ("view", "export", "diff", "merge", "attach", "dump")


def main(argv=None, as_kernprof=False):
    argv = list(sys.argv[1:] if argv is None else argv)
    from .commands import kernprof_mode

    as_kernprof = kernprof_mode.chosen(as_kernprof)
    from .process.support import unsupported_reason

    reason = unsupported_reason()
    if reason:
        print(f"lprof: error: {reason}", file=sys.stderr)
        return 2
    if not as_kernprof and not (argv and argv[0] in VERBS):
        # the run command: perf's switch-on overlaps the option parsing and imports
        from .collect import perf_warm

        perf_warm.start()
    if os.environ.get("LPROF_FOLLOW"):  # an lprof command run by a followed program
        from .process import follow

        follow.leave_inherited()
    try:
        if argv and argv[0] in VERBS:
            import importlib

            command = importlib.import_module(f"{__package__}.commands.{argv.pop(0)}")
            # argparse prints usage and exits 2 on bad input: the one-line-error contract
            parse = getattr(command, "parse", None) or command.parser().parse_args
            return command.main(parse(argv))
        from .commands import run_args

        args = run_args.parse(argv, as_kernprof=as_kernprof)
        if as_kernprof and kernprof_mode.runs_cprofile(args):
            from .commands import kernprof_cprofile

            return kernprof_cprofile.main(args)
        if args.memory:
            # before the run command's imports: the re-executed process
            # pays for them again, this one should not
            from .process import preload

            # `python -m lprof` may run again: still kernprof (read and dropped there)
            preload.maybe_reexec(argv, {kernprof_mode.ENV: "1"} if as_kernprof else None)
        from .commands import run

        return run.main(args)
    except LprofError as exc:
        sys.stderr.write(f"lprof: {exc.message}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 1


def entry():
    libdirs.note_command_callers()  # the console script
    from .commands import kernprof_mode

    sys.exit(main(as_kernprof=kernprof_mode.named_kernprof(sys.argv[0])))
