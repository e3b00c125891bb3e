"""How a recipe finds the stored predictions of a model that does not compile to SQL.

Why a check here: the set `sets/learned_<name>` holds what *some* model named NAME predicted; a
recipe must read it only if it was made by the very model file it declares (same parameter
fingerprint), or a retrained model would silently select with the old one's scores.
"""

from __future__ import annotations

from typing import Any


def prediction_column(model: Any, schema: Any) -> str:
    """The column holding `model`'s probability in `schema` (a `recipes.schema.Schema`);
    ValueError saying which command to run when it is missing or stale."""
    from textsieve.io.attributes import set_summary

    col = model.prediction_column
    run = f"run `textsieve learn apply MODEL.json {schema.directory}`"
    if col not in schema.columns:
        raise ValueError(f"{model.describe()} does not compile to SQL; its predictions are read from the set "
                         f"sets/{model.set_name}, which {schema.directory} does not have: {run} first")
    planned = getattr(schema, "planned", {})
    if model.set_name in planned:  # a pipeline's `learn:` stage (re)makes it before the recipe runs
        made_by = planned[model.set_name]
        if made_by is not None and made_by != model.fingerprint:
            raise ValueError(f"the pipeline's learn: item writes sets/{model.set_name} with another model (fingerprint "
                             f"{made_by}, this one {model.fingerprint}): name the same model file in both")
        return col
    summary = set_summary(schema.directory, model.set_name)
    if summary is None:
        return col  # a planned set (the pipeline's dry run checks recipes before the stage runs)
    made_by = summary.get("model_fingerprint")
    if made_by != model.fingerprint:
        raise ValueError(f"the set sets/{model.set_name} was made by another model (fingerprint {made_by}, this one "
                         f"{model.fingerprint}): {run} --overwrite")
    return col
