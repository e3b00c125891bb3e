"""Folders written by Hugging Face `Dataset.save_to_disk`: their Arrow files, in the dataset's order.

Why in `io`: such a folder is an input like any other (`textsieve annotate saved_ds/ -o A`), but
besides its `data-*.arrow` files it holds `state.json` and `dataset_info.json`, which a folder walk
would take for JSON Lines documents. Input expansion asks here first and reads exactly the files
the folder's `state.json` lists; a `DatasetDict` folder is refused with its splits to choose from.
The Python API (`interop.hf`) uses the same function for a path or a `Dataset`.
"""

from __future__ import annotations

import json
import posixpath

import fsspec

from textsieve.errors import TextsieveError

STATE = "state.json"  # what `Dataset.save_to_disk` writes beside its Arrow files
DICT_STATE = "dataset_dict.json"  # what `DatasetDict.save_to_disk` writes at the top


class SavedDatasetError(TextsieveError, ValueError):
    """A `save_to_disk` folder that cannot be read as one dataset."""


def saved_dataset_paths(fs: fsspec.AbstractFileSystem, root: str, shown: str) -> list[str] | None:
    """The Arrow file paths (in `fs`) that the `save_to_disk` folder `root` lists, or None when it
    is not one. `shown` names the folder in errors. A `DatasetDict` folder is refused."""
    root = root.rstrip("/")
    if fs.isfile(f"{root}/{DICT_STATE}"):
        try:
            with fs.open(f"{root}/{DICT_STATE}", "r") as fh:
                splits = json.load(fh).get("splits") or []
        except (OSError, ValueError, AttributeError):
            splits = []
        raise SavedDatasetError(f"{shown} is a saved DatasetDict; annotate one split at a time, e.g. "
                                f"{posixpath.join(shown, splits[0]) if splits else shown.rstrip('/') + '/train'} "
                                f"(splits: {', '.join(splits) or 'none listed'})")
    if not fs.isfile(f"{root}/{STATE}"):
        return None
    try:
        with fs.open(f"{root}/{STATE}", "r") as fh:
            state = json.load(fh)
        names = [d["filename"] for d in state.get("_data_files") or []]
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None  # a user's own state.json, not a saved dataset: the folder is read as usual
    if not names:
        raise SavedDatasetError(f"{shown}/{STATE} lists no data files")
    return [f"{root}/{n}" for n in names]


def saved_dataset_files(folder: str) -> list[str] | None:
    """`saved_dataset_paths` for a path or URL, as paths or URLs the readers open."""
    fs, root = fsspec.core.url_to_fs(folder)
    paths = saved_dataset_paths(fs, root, folder)
    if paths is None:
        return None
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return paths if protocol in ("file", "local") else [fs.unstrip_protocol(p) for p in paths]
