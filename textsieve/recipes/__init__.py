"""Recipes: the rule language over stored attributes, and how rules are evaluated.

`language` parses a recipe (YAML or rules) into an AST; `sql` compiles it into one DuckDB
query over the attribute Parquet; `lines_numpy` and `funnel_numpy` evaluate line rules and
simple funnels in NumPy, a row group at a time; `funnel` is the dry-run funnel; `survivors`
lists the documents a recipe keeps (for `select` and `dsir fit --recipe`). Bundled recipes live
in `bundled/`.
"""
