"""Selection: recipes over stored attributes (`recipe`, `compile`, `funnel`, `materialize`),
DSIR importance resampling (`dsir`) and learned filters (`learned`).

Python API (the same as `textsieve select`):

    from textsieve.select.recipe import Recipe, load_recipe
    from textsieve.select.funnel import compute_funnel
    from textsieve.select.materialize import SelectConfig, run_select

    recipe = load_recipe("gopher")          # or a YAML path, or Recipe.from_rules({...})
    print(compute_funnel("annotated/", recipe).table())
    run_select(SelectConfig(directory="annotated/", output="selected/", recipe=recipe))
"""
