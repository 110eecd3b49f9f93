"""What the verbs' parsers share (lprof run's parser is run_args.py's: it
is parsed before the run command's imports)."""

from ..export.metrics import METRICS as _EXPORT_METRICS

# stack export metrics (lprof.export.metrics.METRICS; gpu-mem/gpu-peak: device memory per stack)
STACK_METRICS = list(_EXPORT_METRICS)


def add_sampled_listing_options(g):
    """The sampled listing's options: the same for a run and for `lprof view`."""
    g.add_argument(
        "--reduced",
        dest="reduced",
        action="store_true",
        default=True,
        help="list only lines above the threshold (default)",
    )
    g.add_argument(
        "--all", dest="reduced", action="store_false", help="list every line of the files with samples"
    )
    g.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        metavar="PCT",
        help="reduced listing: minimum share of a line, in percent (default 1)",
    )
    g.add_argument(
        "--profile-only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="list only files whose path contains PATTERN",
    )
    g.add_argument(
        "--profile-all",
        action="store_true",
        help="list every file, the standard library and site-packages too",
    )
    g.add_argument("--per-thread", action="store_true", help="one listing per thread")
