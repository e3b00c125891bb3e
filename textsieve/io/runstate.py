"""What an interrupted run left in an output folder, for deciding whether a re-run may go on.

The rule every stage follows: a re-run with the same settings resumes (finished files are kept,
the rest is written), never asking for `--overwrite`; a re-run with other settings refuses
without `--overwrite` when the folder holds finished output of the other settings, because
mixing them would give a result no single run made. A run that was interrupted before it wrote
any output leaves nothing to protect, so any re-run simply starts afresh: this is the case of a
command that crashed at its start (e.g. `select --dsir` on a bad default), fixed and re-run.
"""

from __future__ import annotations

import fsspec


def holds_output(fs: fsspec.AbstractFileSystem, root: str, state_files: tuple[str, ...] = ()) -> bool:
    """Whether `root` holds a finished output file: anything but the named state files (relative
    to `root`) and hidden temporary names (a '.' at the start of any path component)."""
    root = root.rstrip("/")
    if not fs.exists(root):
        return False
    for path in fs.find(root):
        rel = path[len(root) + 1:] if path.startswith(root + "/") else path.rsplit("/", 1)[-1]
        if rel in state_files or any(part.startswith(".") for part in rel.split("/")):
            continue
        return True
    return False
