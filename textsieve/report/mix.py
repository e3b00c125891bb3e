"""The report's training-mix section (`textsieve report RUN --mix OUT`): per source and per
language, the tokens a `textsieve mix` output holds, as tables and bar charts.

Why a module of its own: the figures come from the mix's published manifest only (its
`info.mix`: the plan, per-source counts, tokens per language), so the section needs no text and
no attribute folder, and the rest of the report does not change when there is no mix.
"""

from __future__ import annotations

from html import escape
from typing import Any

import fsspec

from textsieve.report.charts import count_bars_svg


def read_mix(output: str) -> dict[str, Any]:
    """The `info.mix` record of a published mix output folder (a clear error otherwise)."""
    from textsieve.io.publish import published

    fs, root = fsspec.core.url_to_fs(output)
    manifest = published(fs, root, f"the mix in {output}")
    mix = manifest.info.get("mix")
    if manifest.stage != "mix" or not isinstance(mix, dict):
        raise ValueError(f"--mix {output}: not a `textsieve mix` output (its manifest is of stage {manifest.stage})")
    return mix


def mix_rows(mix: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per source: target share, documents, distinct, tokens, actual share, epochs."""
    total = sum(int(s["tokens"]) for s in mix["sources"]) or 1
    shares = {s["name"]: s["share"] for s in mix["plan"]["sources"]}
    return [{"source": s["name"], "target_share": shares.get(s["name"]), "documents": s["documents"],
             "distinct": s["distinct_documents"], "tokens": s["tokens"], "share": s["tokens"] / total,
             "epochs": s["epochs"], "count": s["token_count"]} for s in mix["sources"]]


def language_rows(mix: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(source, language, tokens), sources in mix order, languages by tokens."""
    return [(src, lang, int(n)) for src, langs in mix.get("languages", {}).items() for lang, n in langs.items()]


def mix_section(output: str) -> str:
    """The section's HTML for the mix output folder `output`."""
    mix = read_mix(output)
    rows = mix_rows(mix)
    head = ("<tr><th>source</th><th>target share</th><th>share</th><th>tokens</th><th>documents</th>"
            "<th>distinct</th><th>epochs</th><th>counted with</th></tr>")
    body = "".join(
        f"<tr><td>{escape(r['source'])}</td><td>{r['target_share']:.3f}</td><td>{r['share']:.3f}</td>"
        f"<td>{r['tokens']:,}</td><td>{r['documents']:,}</td><td>{r['distinct']:,}</td><td>{r['epochs']:.2f}</td>"
        f"<td>{escape(str(r['count']))}</td></tr>" for r in rows)
    langs = language_rows(mix)
    by_lang: dict[str, int] = {}
    for _, lang, n in langs:
        by_lang[lang] = by_lang.get(lang, 0) + n
    lang_body = "".join(f"<tr><td>{escape(s)}</td><td>{escape(lang)}</td><td>{n:,}</td></tr>" for s, lang, n in langs)
    shards = mix.get("shards", [])
    settings = mix.get("settings", {})
    return (f'<section id="mix"><h2>Training mix</h2><p>{escape(output)}: {mix["tokens"]:,} tokens in '
            f'{mix["documents"]:,} documents, {len(shards)} shard(s) of {escape(str(settings.get("shard_size")))} '
            f'({escape(str(settings.get("format")))}), seed {settings.get("seed")}.</p>'
            f'<table class="mix">{head}{body}</table>'
            + count_bars_svg([(r["source"], int(r["tokens"])) for r in rows], "mix-sources", "tokens")
            + '<h3>Tokens per language</h3><table class="mix-lang"><tr><th>source</th><th>language</th>'
            f'<th>tokens</th></tr>{lang_body}</table>'
            + count_bars_svg(sorted(by_lang.items(), key=lambda kv: (-kv[1], kv[0])), "mix-languages", "tokens")
            + "</section>")


__all__ = ["language_rows", "mix_rows", "mix_section", "read_mix"]
