"""`textsieve pii`: span signals of personal data per document, the attribute set `DIR/sets/pii`.

Why an attribute set, not a filter: what to do with personal data is a curation choice made
later. A recipe can drop documents (`ts_pii_count == 0`), and `select --redact pii` (or a
recipe's `redact: [pii]`) writes the chosen documents with every span replaced by a
placeholder (`textsieve.personal_data.redact`). The detectors and their rules are in `textsieve.personal_data.detect`.

Columns (one row per annotated document, in annotate's order; offsets are characters of the
Python str, as annotate's spans):
  ts_pii_email, ts_pii_ip, ts_pii_phone, ts_pii_credit_card, ts_pii_iban
      list<struct<start, end, score: int64>>; score 1, except ip: the IP version (4/6) and
      phone: the country calling code. Only the `types` asked for are written.
  ts_pii_count  int64, the number of spans over those columns (`summary.json` has its total).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from textsieve.io.arrow_arrays import numeric_array
from textsieve.options import check_choices, option, progress_option
from textsieve.personal_data.detect import DETECTOR_VERSION, LENIENCIES, PII_TYPES, PiiSettings, detect
from textsieve.signals.spans import free_spans, spans_array
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, set_named
from textsieve.stages.doc_set import DocSetError, DocSetJob, DocSetResult, run_doc_set
from textsieve.stages.doc_set import output_schema as _doc_set_schema
from textsieve.stages.planning import PlannedSet, doc_set_plan

SET_NAME = "pii"
PREFIX = "ts_pii_"
COUNT = "ts_pii_count"


class PiiError(DocSetError):
    """A `textsieve pii` setting that cannot be used."""


@dataclass
class PiiConfig:
    """What `textsieve pii` (and the API/YAML stage) takes."""

    directory: str = option(help="output folder of `textsieve annotate`", positional=True, metavar="ANNOTATED_DIR")
    types: str | list[str] | None = option(
        None, help=f"comma list of what to find: {', '.join(PII_TYPES)} (default: all)", metavar="TYPES")
    phone_regions: str | list[str] = option(
        "US", help="comma list of regions (ISO 3166 codes) whose national-format numbers are phones; "
                   "international +CC numbers are found for every region", metavar="CC[,CC]")
    phone_leniency: str = option("valid", choices=LENIENCIES,
                                 help="libphonenumber leniency: possible (right length), valid (exists in the "
                                      "numbering plan), strict_grouping, exact_grouping (as the plan groups "
                                      "digits)")
    workers: int | None = option(None, help="processes (default: all cores)")
    overwrite: bool = option(False, help="replace a sets/pii set made with other settings")
    progress: bool = progress_option()


def _split(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def pii_settings(cfg: PiiConfig) -> PiiSettings:
    """The detector settings of a config, checked (one clear error per bad value)."""
    check_choices(cfg)
    types = _split(cfg.types) or list(PII_TYPES)
    bad = [t for t in types if t not in PII_TYPES]
    if bad:
        raise PiiError(f"pii: unknown type(s) {', '.join(bad)}; valid: {', '.join(PII_TYPES)}")
    import phonenumbers

    regions = [r.upper() for r in _split(cfg.phone_regions)]
    known = phonenumbers.SUPPORTED_REGIONS
    bad = [r for r in regions if r not in known]
    if bad:
        raise PiiError(f"pii: unknown phone region(s) {', '.join(bad)}; use ISO 3166 codes such as US, GB, DE")
    if "phone" in types and not regions:
        raise PiiError("pii: --phone-regions is empty; give at least one region (e.g. US)")
    return PiiSettings(types=tuple(t for t in PII_TYPES if t in types), phone_regions=tuple(dict.fromkeys(regions)),
                       phone_leniency=cfg.phone_leniency)


def columns(settings: PiiSettings) -> pa.Schema:
    """The set's computed columns for these settings (after id, shard, row)."""
    return pa.schema([free_spans(PREFIX + t) for t in settings.types] + [pa.field(COUNT, pa.int64())])


def output_schema(cfg: PiiConfig | None = None) -> pa.Schema:
    """The schema of the `sets/pii` set's shards (`run --dry-run` checks recipes against it)."""
    job = pii_job(cfg or PiiConfig(directory=""))
    return _doc_set_schema(job)


def _setup(settings: PiiSettings) -> PiiSettings:
    import phonenumbers  # noqa: F401  (loaded once per worker; its metadata loads lazily per region)

    return settings


def _compute(settings: PiiSettings, texts: list[str]) -> dict[str, pa.Array]:
    per_type: dict[str, list[list[tuple[int, int, int]]]] = {t: [] for t in settings.types}
    counts: list[int] = []
    for text in texts:
        found = detect(text, settings)
        n = 0
        for t in settings.types:
            spans = found.get(t, [])
            per_type[t].append(list(spans))
            n += len(spans)
        counts.append(n)
    # (built from buffers: `pa.array` loads pandas through pyarrow's shim)
    out: dict[str, pa.Array] = {PREFIX + t: spans_array(v) for t, v in per_type.items()}
    out[COUNT] = numeric_array(counts, pa.int64())
    return out


def pii_job(cfg: PiiConfig) -> DocSetJob:
    """The `DocSetJob` of a config: what `run_doc_set` computes and how the result is identified."""
    import phonenumbers

    settings = pii_settings(cfg)
    info: dict[str, Any] = {"detector_version": DETECTOR_VERSION, "types": list(settings.types),
                            "phone_regions": list(settings.phone_regions), "phone_leniency": settings.phone_leniency,
                            "phonenumbers": phonenumbers.__version__}
    schema = columns(settings)
    return DocSetJob(stage="pii", set_name=SET_NAME, setup=_setup, compute=_compute, params=settings, info=info,
                     result_keys=("types", "phone_regions", "phone_leniency", "detector_version", "phonenumbers"),
                     schema=schema, totals=tuple(f.name for f in schema if f.name == COUNT), batch_docs=500)


def run_pii(cfg: PiiConfig) -> DocSetResult:
    """Find personal data in every document of `cfg.directory` and publish `DIR/sets/pii`."""
    return run_doc_set(cfg.directory, pii_job(cfg), workers=cfg.workers, progress=cfg.progress,
                       overwrite=cfg.overwrite)


def _pipeline_run(c: PiiConfig) -> Outcome:
    r = run_pii(c)
    return Outcome({"documents": r.documents, "spans": int(r.summary.get("ts_pii_count", 0))}, ran=not r.skipped)


def _report(res: DocSetResult) -> str:
    what = "already up to date" if res.skipped else f"{res.computed} shard(s) computed"
    return (f"pii: {res.documents:,} documents, {res.summary.get('ts_pii_count', 0):,} span(s) found; {what} "
            f"({res.seconds:.1f} s) -> {res.output}")


CLI = CliSpec(
    help="find e-mails, IPs, phones, card numbers, IBANs (span signals)",
    description="Write the attribute set ANNOTATED_DIR/sets/pii: per document the spans of e-mail addresses, IPv4/IPv6 "
                "addresses, phone numbers (libphonenumber), Luhn-checked payment card numbers and mod-97-checked "
                "IBANs (ts_pii_<type>) and their number (ts_pii_count). Recipes use `ts_pii_count == 0`; `select "
                "--redact pii` writes the chosen documents with each span replaced by a placeholder such as "
                "|||EMAIL_ADDRESS|||.",
    examples=("textsieve pii attrs/", "textsieve pii attrs/ --types email,ip --overwrite",
              "textsieve select attrs/ --recipe gopher --redact pii -o pii-redacted/"),
    report=_report)

STAGE = Stage("pii", PiiConfig, "pii", _pipeline_run, order=90, call=run_pii, cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named(SET_NAME),
              output_sets=lambda c, layout, where: [PlannedSet(SET_NAME, output_schema(c))],
              estimate=lambda c, e: doc_set_plan("pii", "personal data spans -> sets/pii", e.docs))


__all__ = ["STAGE", "COUNT", "PREFIX", "SET_NAME", "PiiConfig", "PiiError", "columns", "output_schema", "pii_job",
           "run_pii"]
