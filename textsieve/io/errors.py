"""Errors of the input layer.

Every problem with input data surfaces as an `InputError` whose message starts with a location
("<file>:<line>", "<file>:row <n>" or "<file>:record <n>"), so a user can open the file at the
right place without a debugger. In ``on_error="skip"`` mode the same location and reason are kept
as a `SkippedRecord` instead, so the run goes on and the skips can be reported afterwards.

Location conventions:
- JSON Lines and .txt files: ``path:LINE`` with a 1-based line number, as editors show it
  (so ``path:17`` is the record with ``Document.row == 16``).
- Parquet: ``path:row N`` and WARC/WET/ARC: ``path:record N``, with N 0-based, equal to the
  `Document.row` the record has or would have had.
- Problems with a whole file or input argument: just the path or the argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from textsieve.errors import TextsieveError


class InputError(TextsieveError):
    """Bad input; the message always names the file and the line/record.

    `location` and `reason` hold the two halves of the message when the error was raised by the
    readers (they are None when raised with a plain message). They survive pickling, so an error
    raised in a worker process keeps them.
    """

    def __init__(self, message: str, *, location: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.location = location
        self.reason = reason

    @classmethod
    def at(cls, location: str, reason: str) -> InputError:
        """Build the error for one place: the message is ``"<location>: <reason>"``."""
        return cls(f"{location}: {reason}", location=location, reason=reason)


@dataclass
class SkippedRecord:
    """A record (or the unreadable rest of a file) left out in ``on_error="skip"`` mode."""

    location: str  # e.g. "data/a.jsonl.gz:17"
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"
