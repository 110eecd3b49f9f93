"""IPython / Jupyter magics: `%load_ext lprof`, then

    %lprun -f func [-f other] [-m module] [-u unit] [-s] [-D file] [-T file] [-r] statement
        exact line timing of the named functions while the statement runs
        (line_profiler's magic, its options and output)
    %lprof [--wall] [--memory] [--rate HZ] [--all] [-o FILE] [--html FILE] [-r] statement
    %%lprof [same options]
        sample the statement or the cell: the annotated listing of the lines
        of your code (cells count as your code), saved as a profile and an
        HTML report on request

In a notebook, memory is Python objects only: the allocator shim needs the
`lprof --memory` command to preload it before the interpreter starts."""

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.page import page


def _run_code(shell, code, filename):
    """Runs code as the shell runs a cell, in its namespace; SystemExit and
    KeyboardInterrupt end the run, not the session (line_profiler does so)."""
    try:
        exec(compile(code, filename, "exec"), shell.user_ns)
    except SystemExit:
        print("*** SystemExit exception caught in code being profiled.")
    except KeyboardInterrupt:
        print("*** KeyboardInterrupt exception caught in code being profiled.")


@magics_class
class LprofMagics(Magics):
    def _cell_file(self, code):
        """A linecache name for code run by a magic, so listings show its lines."""
        try:
            return self.shell.compile.cache(code)
        except (AttributeError, TypeError):
            return "<string>"

    @line_magic
    def lprun(self, parameter_s=""):
        """%lprun -f func [-m module] [-u unit] [-s] [-z] [-D file] [-T file] [-r] statement"""
        from .decorator import LineProfiler

        opts, statement = self.parse_options(parameter_s, "rszf:m:D:T:u:", list_all=True)
        if not statement.strip():
            raise UsageError("%lprun needs a statement to run (%lprun -f func statement)")
        ns = self.shell.user_ns
        prof = LineProfiler()
        for name in opts.get("f", []):
            try:
                prof.add(eval(name, ns, ns))
            except Exception as exc:
                raise UsageError(f"could not find function {name!r}: {exc!r}") from None
        for name in opts.get("m", []):
            import importlib

            try:
                prof.add(importlib.import_module(name))
            except Exception as exc:
                raise UsageError(f"could not import module {name!r}: {exc!r}") from None
        unit = None
        if "u" in opts:
            try:
                unit = float(opts["u"][0])
            except ValueError:
                raise UsageError(f"-u {opts['u'][0]}: a unit in seconds, such as 1e-3") from None
        code = self.shell.transform_cell(statement)
        with prof:
            _run_code(self.shell, code, self._cell_file(code))
        import io

        out = io.StringIO()
        prof.print_stats(out, output_unit=unit, stripzeros="s" in opts or "z" in opts)
        text = out.getvalue()
        page(text)
        if "D" in opts:
            prof.dump_stats(opts["D"][0])
            print(f"*** Profile stats pickled to file {opts['D'][0]!r}.")
        if "T" in opts:
            with open(opts["T"][0], "w", encoding="utf-8") as fh:
                fh.write(text)
            print(f"*** Profile printout saved to text file {opts['T'][0]!r}.")
        return prof if "r" in opts else None

    @line_cell_magic
    def lprof(self, line="", cell=None):
        """%lprof [--wall] [--memory] [--rate HZ] [--all] [-o FILE] [--html FILE] [-r] statement
        %%lprof [options]  (the cell below)"""
        opts, statement = self.parse_options(
            line, "ro:", "wall", "memory", "rate=", "html=", "all", "per-thread", posix=False
        )
        code = cell if cell is not None else statement
        if not code.strip():
            raise UsageError("%lprof needs a statement (or use %%lprof on a cell)")
        rate = None
        if "rate" in opts:
            try:
                rate = int(opts["rate"])
            except ValueError:
                raise UsageError(f"--rate {opts['rate']}: samples a second, an integer") from None
        profile = sample(
            self.shell,
            self.shell.transform_cell(code),
            self._cell_file,
            mode="wall" if "wall" in opts else "cpu",
            rate_hz=rate,
            memory="memory" in opts,
        )
        from .render.sampled_listing import render

        page(render(profile, reduced="all" not in opts, per_thread="per-thread" in opts))
        if "o" in opts:
            from .model import profile_file

            profile_file.save(profile, opts["o"])
            print(f"*** Profile saved to {opts['o']!r} (lprof view {opts['o']}).")
        if "html" in opts:
            from .render import html_report

            html_report.write(profile, opts["html"])
            print(f"*** HTML report written to {opts['html']!r}.")
        return profile if "r" in opts else None


def sample(shell, code, cell_file, mode="cpu", rate_hz=None, memory=False):
    """Runs code in the shell's namespace under the sampler (and the memory
    hooks); returns the profile dict."""
    import time
    from .collect import sampling as sampler
    from .model import assemble, stacks

    collectors = [sampler.SamplingCollector(mode=mode, rate_hz=rate_hz)]
    modes = [mode]
    if memory:
        from .collect.memory import MemoryCollector

        collectors.append(MemoryCollector())
        modes.append("memory")
    stacks.reset()
    filename = cell_file(code)
    started = time.time()
    for c in collectors:
        c.start()
    try:
        _run_code(shell, code, filename)
    finally:
        for c in reversed(collectors):
            c.stop()
    return assemble.profile(modes, collectors, argv=[filename], started=started)


def load_ipython_extension(ip):
    ip.register_magics(LprofMagics)


def unload_ipython_extension(ip):  # magics stay registered, as line_profiler's do
    pass
