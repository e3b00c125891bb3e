"""`textsieve report`: one self-contained HTML page about an annotated (and selected) corpus.

`collect` computes every figure (DuckDB over the attribute Parquet; texts only for examples),
`charts` draws them as inline SVG, `html` lays out the page; `write_report` ties them together.
"""

from __future__ import annotations

from dataclasses import dataclass

from textsieve.io.atomic import atomic_open


@dataclass
class ReportConfig:
    run_dir: str  # annotate output folder, or a `textsieve run` output folder (attrs/, selected/)
    output: str = "report.html"
    recipe: str | None = None  # bundled name or YAML path; default: the recipe in selection.json
    selection: str | None = None  # a select output folder (has selection.json), if not inside run_dir
    examples: int = 3  # example documents per rule and side
    threads: int | None = None
    by: str | None = None  # field the funnel is broken down by (default: `source`, when present)
    mix: str | None = None  # a `textsieve mix` output folder: adds its per-source / per-language token section


def write_report(cfg: ReportConfig) -> str:
    """Collect, render and write the page atomically; returns the output path."""
    import fsspec

    from textsieve.report.collect import collect
    from textsieve.report.html import render

    data = collect(cfg.run_dir, cfg.recipe, cfg.selection, examples=cfg.examples, threads=cfg.threads, by=cfg.by)
    page = render(data)
    if cfg.mix:  # the training-mix section (report.mix), from the mix's manifest only
        from textsieve.report.mix import mix_section

        page = page.replace("</main>", mix_section(cfg.mix) + "</main>", 1)
    fs, path = fsspec.core.url_to_fs(cfg.output)
    with atomic_open(fs, path, "wb") as fh:
        fh.write(page.encode("utf-8"))
    return cfg.output
