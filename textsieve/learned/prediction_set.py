"""How a recipe finds the stored predictions of a model that does not compile to SQL.

Why a check here: the set `_learned_<name>` holds what *some* model named NAME predicted; a
recipe must read it only if it was made by the very model file it declares (same parameter
fingerprint), or a retrained model would silently select with the old one's scores.
"""

from __future__ import annotations

import json
from typing import Any


def prediction_column(model: Any, schema: Any) -> str:
    """The column holding `model`'s probability in `schema` (a `recipes.schema.Schema`);
    ValueError saying which command to run when it is missing or stale."""
    import fsspec

    from textsieve.io.attributes import attribute_set_dir

    col = model.prediction_column
    run = f"run `textsieve learn apply MODEL.json {schema.directory}`"
    if col not in schema.columns:
        raise ValueError(f"{model.describe()} does not compile to SQL; its predictions are read from the set "
                         f"_{model.set_name}, which {schema.directory} does not have: {run} first")
    planned = getattr(schema, "planned", {})
    if model.set_name in planned:  # a pipeline's `learn:` stage (re)makes it before the recipe runs
        made_by = planned[model.set_name]
        if made_by is not None and made_by != model.fingerprint:
            raise ValueError(f"the pipeline's learn: item writes _{model.set_name} with another model (fingerprint "
                             f"{made_by}, this one {model.fingerprint}): name the same model file in both")
        return col
    fs, root = fsspec.core.url_to_fs(attribute_set_dir(schema.directory, model.set_name))
    path = f"{root.rstrip('/')}/summary.json"
    if not fs.exists(path):
        return col  # a planned set (the pipeline's dry run checks recipes before the stage runs)
    made_by = json.loads(fs.cat_file(path)).get("model_fingerprint")
    if made_by != model.fingerprint:
        raise ValueError(f"the set _{model.set_name} was made by another model (fingerprint {made_by}, this one "
                         f"{model.fingerprint}): {run} --overwrite")
    return col
