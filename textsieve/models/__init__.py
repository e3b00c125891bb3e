"""Model-based signals: model files, model kinds, and how `annotate` runs them.

Contract (other model modules build on it):

**Model files** (`textsieve.models.format`). textsieve's own models are `.tsm` files: a ZIP
archive with `header.json` (`{"kind", "version", "textsieve_version", "created", "params":
{...}, "training_data": {"fingerprint": sha256-of-inputs, "documents": n, ...}, "metrics":
{...}}`), `arrays.npz` (named NumPy arrays, never pickles) and optionally other members.

* `save_model(path, kind, params, arrays, training_data, metrics=None, extra_files=None) -> str`
  writes atomically and returns the fingerprint.
* `load_model_file(path) -> ModelFile(header, arrays, path, fingerprint, extra)`.
* fingerprint = first 16 hex digits of the SHA-256 of the file bytes (`file_fingerprint`).
* `read_header(path)`, `is_model_file(path)`; `textsieve models show PATH` prints a header.

**Model kinds** (`textsieve.models.registry`).

* `register_model_kind(kind, *, load, signals, extensions=(), sniff=None, builtins=())`:
  `load(path) -> loaded` (once per worker process); `signals(name, loaded) -> list[Signal]`
  (`textsieve.signals.registry.Signal`: name, level, dtype, group, definition, needs, fn) under
  the user's model name, not added to the global `REGISTRY`. `extensions` claim foreign files
  (`.bin`, `.arpa`, ...); `sniff(path) -> bool` breaks ties between kinds sharing one;
  `builtins` names models usable as `builtin:NAME`.
* `resolve_model(name, path) -> (kind, loaded, fingerprint)`: a `.tsm` by its header kind, a
  foreign file by its longest registered extension (then `sniff`), `builtin:NAME` by name.
* `model_kind_of(path)`, `model_fingerprint(path)`, `model_header(path, kind)`,
  `model_signals(kind, name, loaded)`.
* Every non-private module of this package is imported on first use (`discover_kinds`), so a
  new module only has to call `register_model_kind` at import time.
* From outside the package: the same call at run time (worker processes repeat it), or an entry
  point of the `textsieve.model_kinds` group naming a module that makes it at import, loaded by
  `discover_kinds` once per process. `unregister_model_kind(kind)` removes such a kind again.
  See docs/architecture.md, "Add a model kind".

**Signal functions** take the batch's `BatchViews` and return `DocScores`/`LineScores` as rule
signals do. They read `v.models[name]` (the loaded model), `v.texts`, `v.langs` (per-document
language, after `--lang auto` detection), `v.urls` (document URL or None) and may memoise work
shared by several signals in `v.cache` (a per-batch dict). `dtype` is `"float"`, `"int"`
(RPv2 span columns) or `"str"` (a plain nullable string column; `DocScores.values` then holds
Python strings).

**annotate.** `textsieve annotate ... --models NAME=PATH [--models ...]` passes (name, path) pairs
to the workers, which load each model once; all signals of every given model are written
unless `--signals` names some model signals (then only those). Each attribute shard's metadata
holds `models: {name: {path, kind, fingerprint, header}}` and `model_signals`, and the model
fingerprints are part of the run's config fingerprint, so changing a model re-annotates.

Kinds here: `langid` (py3langid built in, fastText `lid.176.bin`; `ts_lang`, `ts_lang_score`),
`classifier` (`rps_doc_ml_NAME_score`; trained by `textsieve train classifier` or a fastText
`.bin`), `ut1` (`rps_doc_ut1_blacklist`; `textsieve train ut1` or a UT1 folder). See
`docs/models.md`.
"""

from textsieve.models.format import ModelFile, ModelFormatError, load_model_file, read_header, save_model
from textsieve.models.registry import register_model_kind, resolve_model, unregister_model_kind

__all__ = ["ModelFile", "ModelFormatError", "load_model_file", "read_header", "register_model_kind",
           "resolve_model", "save_model", "unregister_model_kind"]
