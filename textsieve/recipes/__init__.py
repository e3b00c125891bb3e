"""Recipes: the rule language over stored attributes, and how rules are evaluated.

`language` parses a recipe (YAML or rules) into an AST; `schema` lists the columns an annotate
folder offers; `sql` compiles the recipe once into a `Compiled` (the SQL of each rule plus what
the AST says: columns read, zipped line columns) that every consumer shares; `funnel_query`
builds the funnel's aggregate query; `lines_numpy` and `funnel_numpy` evaluate line rules and
simple funnels in NumPy, a row group at a time; `funnel` is the dry-run funnel; `survivors`
lists the documents a recipe keeps (for `select` and `dsir fit --recipe`). Bundled recipes live
in `bundled/`.
"""
