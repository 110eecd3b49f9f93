"""`python -m lprof` is the `lprof` command."""

import sys

from lprof.cli import main
from lprof.common import libdirs

if __name__ == "__main__":
    libdirs.note_command_callers()  # runpy's frames
    sys.exit(main())
