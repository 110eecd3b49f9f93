"""The one error type lprof's CLI turns into `lprof: <message>` and an exit code."""


class LprofError(Exception):
    """A user-facing error: one line of text and the exit status to use."""

    def __init__(self, message, exit_code=2):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ProfileFileError(LprofError):
    """A profile file that is missing, corrupt, truncated or not lprof's."""
