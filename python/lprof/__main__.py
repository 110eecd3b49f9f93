"""`python -m lprof` is the `lprof` command."""
import sys

from lprof.cli import main

if __name__ == "__main__":
    sys.exit(main())
