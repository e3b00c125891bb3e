"""The funnel's aggregate query: every figure of the dry-run funnel in one SELECT.

Why its own module: the query is shared by the DuckDB funnel (`funnel`), the NumPy funnel
(`funnel_numpy`, which runs it per batch over precomputed line columns) and the report's
breakdowns (one row per source or language), and those must not import each other.
"""

from __future__ import annotations

from textsieve.recipes.sql import Compiled


def line_masks(c: Compiled) -> tuple[dict[str, int], list[int]]:
    """Bit of each line rule (recipe order) and the bit sets whose kept characters the funnel
    needs: each rule alone and every prefix of the line rules."""
    line_bit = {n: 1 << j for j, n in enumerate(n for n in c.order if n in c.line_rules)}
    masks: set[int] = set()
    acc = 0
    for n in c.order:
        if n in line_bit:
            masks.add(line_bit[n])
            acc |= line_bit[n]
            masks.add(acc)
    return line_bit, sorted(masks)


def funnel_sql(c: Compiled, source: str | None = None, precomputed: bool = False,
               group: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The aggregate query and the (figure, rule) order of its output columns. `source` replaces
    the FROM clause (it must be aliased `a`); with `precomputed`, the kept characters of each
    line mask come from columns `__ts_k<mask>` of `a` (see `lines_numpy`) instead of SQL. With
    `group` (an SQL expression over `source`), one row per group value, the value first (the
    report's funnel per source and per language)."""
    names = c.order
    doc_idx = {n: i for i, n in enumerate(n for n in names if n in c.doc_rules)}
    line_bit, masks = line_masks(c)
    base = [f"{c.schema.length_sql} AS _len"]
    base += [f"coalesce({c.doc_rules[n]}, FALSE) AS _d{i}" for n, i in doc_idx.items()]
    mid = ["_len"] + [f"_d{i}" for i in doc_idx.values()]
    if group is not None:
        base.append(f"{group} AS _g")
        mid.append("_g")
    if line_bit and precomputed:
        base += [f'a."__ts_k{b}" AS _k{b}' for b in masks]
        mid += [f"_k{b}" for b in masks]
    elif line_bit:
        bits = " + ".join(f"(CASE WHEN coalesce({c.line_rules[n]}, FALSE) THEN {b} ELSE 0 END)"
                          for n, b in line_bit.items())
        base.append(f"[{bits} for _x in {c.line_source}] AS _lm")
        base.append(f"{c.line_lengths_sql()} AS _ll")
        mid += [f"coalesce(list_sum(list_where(_ll, [(_m & {b}) = {b} for _m in _lm])), 0) AS _k{b}" for b in masks]

    aggs, cols = ["count(*)", "coalesce(sum(_len), 0)"], [("total", ""), ("total_chars", "")]
    doc_acc: list[str] = []
    line_acc = 0
    for n in names:
        if n in doc_idx:
            d = f"_d{doc_idx[n]}"
            aggs += [f"count_if(NOT {d})", f"coalesce(sum(_len) FILTER (WHERE NOT {d}), 0)"]
            doc_acc.append(d)
        else:
            b = line_bit[n]
            aggs += [f"count_if(_k{b} = 0)", f"coalesce(sum(_len - _k{b}), 0)"]
            line_acc |= b
        survive = " AND ".join(doc_acc + ([f"_k{line_acc} > 0"] if line_acc else [])) or "TRUE"
        kept = f"_k{line_acc}" if line_acc else "_len"
        aggs += [f"count(*) - count_if({survive})",
                 f"coalesce(sum(_len), 0) - coalesce(sum({kept}) FILTER (WHERE {survive}), 0)"]
        cols += [("alone", n), ("chars_alone", n), ("cum", n), ("chars_cum", n)]
    sql = (f"WITH base AS (SELECT {', '.join(base)} FROM {source or c.from_sql()}), "
           f"mid AS (SELECT {', '.join(mid)} FROM base) "
           + (f"SELECT {', '.join(aggs)} FROM mid" if group is None else
              f"SELECT _g, {', '.join(aggs)} FROM mid GROUP BY _g"))
    return sql, cols


def funnel_columns(c: Compiled, precomputed: bool = False) -> list[str]:
    """The stored columns of `a` that `funnel_sql(c, precomputed=...)` reads, sorted: the
    document length, every document rule, and (unless the line masks are `precomputed`) the
    line rules and the line columns they iterate. Taken from what the compiler emitted, so a
    batch read with exactly these columns answers the query."""
    names = {c.schema.length_column.name} | c.columns_read(c.doc_rules)
    if c.line_rules and not precomputed:
        names |= c.columns_read(c.line_rules) | {n for n in c.line_columns if c.schema.columns[n].alias == "a"}
    return sorted(names)
