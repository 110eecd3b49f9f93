"""The profiled program's process: running it as python would (runner),
the --memory re-exec (preload), its children (follow), its end by signal or
crash (faults), and which interpreters lprof runs on (support)."""
