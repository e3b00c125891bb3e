"""The base class of errors a user can act on (bad input, bad option, missing resource).

It lives in a module that imports nothing, so the CLI can catch these errors without importing
the heavy stages (numba, pyarrow) just to name their exception classes.
"""


class TextsieveError(Exception):
    """An error with a message meant for the user; the CLI prints it without a traceback."""
