"""Stages: one `run_X(XConfig) -> XResult` per step of a curation run (annotate, dedup exact,
dedup fuzzy, dedup show, dsir fit, select). Each config dataclass declares its options with
`textsieve.options.option`, which the CLI, the pipeline file and the Python API all read."""
