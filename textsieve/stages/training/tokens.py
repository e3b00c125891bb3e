"""`textsieve tokens`: the real token count of every document, with the tokenizer the user trains with.

Why: the word/punctuation counts annotate and DSIR use are a proxy; a token budget, a mixing
ratio or a shard size is in the trainer's tokens. This stage writes the set `sets/tokens_<name>`
beside the annotate shards with one int64 column `ts_tokens_<name>` (rows in annotate's order),
built on the per-document scaffold `stages.doc_set` (resume, refusal, summary.json).

Identity: the set's `info` holds the tokenizer's file fingerprint (SHA-256 of its bytes), kind,
vocabulary size and split pattern. A tokenizer file changed in place re-counts every shard on
the next run (the fingerprint is part of every shard's key); a *different* tokenizer file or
tiktoken pattern under the same name is refused unless `overwrite` (pass another `name` to keep
both). Counts exclude special tokens (see `tokenization.tokenizer`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from textsieve.display import result_display
from textsieve.io.arrow_arrays import numeric_array
from textsieve.options import option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage
from textsieve.stages.planning import PlannedSet, doc_set_plan
from textsieve.tokenization.columns import COLUMN_PREFIX, SET_PREFIX

if TYPE_CHECKING:
    from textsieve.stages.doc_set import DocSetJob
    from textsieve.tokenization.tokenizer import Tokenizer

STAGE_NAME = "tokens"


@dataclass
class TokensConfig:
    """Everything `textsieve tokens` takes (CLI, YAML `tokens:` and `ts.tokens`)."""

    directory: str = option(help="annotate output folder (its shards point at the texts)", positional=True,
                            metavar="ATTRS")
    tokenizer: str = option(help="a Hugging Face tokenizer.json (or a folder holding one) or a tiktoken BPE "
                                 "file (.tiktoken); read from this path, nothing is downloaded", metavar="PATH")
    name: str | None = option(None, help="column suffix: writes ts_tokens_NAME in the set sets/tokens_NAME "
                                         "(default: the file's stem, or its folder's name for tokenizer.json)")
    tiktoken_pattern: str | None = option(None, help="tiktoken files only: the split regex, or a preset "
                                                     "(cl100k_base, o200k_base, r50k_base, gpt2, p50k_base); default: "
                                                     "the preset the file's stem names, else cl100k_base",
                                          metavar="REGEX")
    workers: int | None = option(None, help="processes, one annotate shard each (default: all cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with another tokenizer file or pattern under the "
                                         "same name (without it the run refuses)")


@result_display
@dataclass
class TokensResult:
    output: str  # the set folder DIR/sets/tokens_<name>
    set_name: str  # tokens_<name>
    column: str  # ts_tokens_<name>
    documents: int = 0
    tokens: int = 0
    shards: int = 0
    computed: int = 0  # shards counted by this run (the others unchanged or finished by a killed run)
    skipped: bool = False  # nothing to do: published from these inputs with this tokenizer
    seconds: float = 0.0
    tokenizer: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_doc(self) -> float:
        return self.tokens / self.documents if self.documents else 0.0


def column_name(name: str) -> str:
    return COLUMN_PREFIX + name


def set_name(name: str) -> str:
    return SET_PREFIX + name


def output_schema(name: str) -> pa.Schema:
    """The schema of the set `sets/tokens_<name>`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, (column_name(name), pa.int64())])


def _setup(params: dict[str, Any]) -> Any:
    """Once per worker: limit the tokenizer's own threads when several workers share the cores,
    load the file and check it is still the one the run was started with."""
    from textsieve.tokenization.tokenizer import TokenizerError, load_tokenizer

    threads = int(params["threads"])
    if multiprocessing.parent_process() is not None and "RAYON_NUM_THREADS" not in os.environ:
        os.environ["RAYON_NUM_THREADS"] = str(threads)  # read by tokenizers at its first batch
    tok = load_tokenizer(params["path"], params["name"], pattern=params["pattern"])
    if tok.fingerprint != params["fingerprint"]:
        raise TokenizerError(f"tokens: {params['path']} changed while the run was counting "
                             f"(fingerprint {params['fingerprint']}, now {tok.fingerprint}); run it again")
    if tok.kind == "tiktoken":
        impl = tok._impl
        return lambda texts: [len(x) for x in impl.encode_ordinary_batch(texts, num_threads=threads)]
    return tok.count_batch


@dataclass(frozen=True)
class _Compute:
    """compute(state, texts) with the column name bound (picklable, unlike a closure)."""

    column: str

    def __call__(self, count: Any, texts: list[str]) -> dict[str, pa.Array]:
        return {self.column: numeric_array(count(texts), pa.int64())}  # (from buffers: no pandas)


def _threads(cfg: TokensConfig, n_shards: int) -> int:
    from textsieve.exec.local import default_workers

    cores = default_workers()
    planned = max(1, min(cfg.workers or cores, n_shards))
    return max(1, cores // planned)


def _abs(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def tokens_job(cfg: TokensConfig) -> tuple[DocSetJob, Tokenizer]:
    """The `DocSetJob` of a run (the tokenizer loaded once here, so a bad path fails before any work)."""
    from textsieve.stages.doc_set import DocSetJob, annotate_sources
    from textsieve.tokenization.tokenizer import load_tokenizer

    tok = load_tokenizer(cfg.tokenizer, cfg.name, pattern=cfg.tiktoken_pattern)
    n_shards = len(annotate_sources(cfg.directory, STAGE_NAME))
    col = column_name(tok.name)
    params = {"path": _abs(cfg.tokenizer), "name": tok.name, "pattern": cfg.tiktoken_pattern,
              "fingerprint": tok.fingerprint, "threads": _threads(cfg, n_shards)}
    info = {"tokenizer": _abs(tok.path), "tokenizer_kind": tok.kind, "tokenizer_fingerprint": tok.fingerprint,
            "tokenizer_vocab_size": tok.vocab_size, "tokenizer_eos_id": tok.eos_id,
            "tiktoken_pattern": tok.pattern, "column": col}
    return DocSetJob(stage=STAGE_NAME, set_name=set_name(tok.name), setup=_setup, compute=_Compute(col),
                     params=params, info=info, result_keys=("tokenizer", "tiktoken_pattern"),
                     schema=pa.schema([(col, pa.int64())]), totals=(col,), batch_docs=1000), tok


def run_tokens(cfg: TokensConfig) -> TokensResult:
    """Count every document's tokens into DIR/sets/tokens_<name> (or keep the published counts)."""
    from textsieve.stages.doc_set import run_doc_set

    job, tok = tokens_job(cfg)
    res = run_doc_set(cfg.directory, job, workers=cfg.workers, progress=cfg.progress, overwrite=cfg.overwrite)
    col = column_name(tok.name)
    return TokensResult(output=res.output, set_name=job.set_name, column=col, documents=res.documents,
                        tokens=int(res.summary.get(col, 0)), shards=res.shards, computed=res.computed,
                        skipped=res.skipped, seconds=res.seconds, tokenizer=tok.info())


def _pipeline_run(c: TokensConfig) -> Outcome:
    r = run_tokens(c)
    return Outcome({"documents": r.documents, "tokens": r.tokens, "column": r.column}, ran=not r.skipped)


def _complete(layout: Layout, name: str, c: TokensConfig) -> bool:
    from textsieve.tokenization.tokenizer import load_tokenizer

    return layout.set_complete(set_name(load_tokenizer(c.tokenizer, c.name, pattern=c.tiktoken_pattern).name))


def _tokenizer_file(layout: Layout, name: str, c: TokensConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    return [layout.identities([c.tokenizer])]


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    tok = data["tokens"]
    if tok is not None and not tok.get("tokenizer"):
        errors.append("tokens.tokenizer: give the tokenizer file (a tokenizer.json or tiktoken file)")


def _output_sets(c: TokensConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """Named by the tokenizer, which is read now: a missing or unreadable tokenizer fails the
    dry run, not the run after annotate."""
    from textsieve.tokenization.tokenizer import load_tokenizer

    name = load_tokenizer(c.tokenizer, c.name, pattern=c.tiktoken_pattern).name
    return [PlannedSet(set_name(name), output_schema(name))]

def _summary(res: TokensResult) -> dict[str, Any]:
    return {"attribute_set": res.output, "column": res.column, "documents": res.documents, "tokens": res.tokens,
            "shards": res.shards, "computed": res.computed, "skipped": res.skipped,
            "seconds": round(res.seconds, 3), "tokenizer": res.tokenizer}


def _report(res: TokensResult) -> str:
    what = ("unchanged (same inputs, same tokenizer)" if res.skipped
            else f"{res.computed} of {res.shards} shard(s) counted")
    return (f"tokens: {res.documents:,} documents, {res.tokens:,} tokens ({res.tokens_per_doc:,.1f}/doc) with "
            f"{res.tokenizer['kind']} tokenizer {res.tokenizer['name']} (fingerprint "
            f"{res.tokenizer['fingerprint']}); {what} in {res.seconds:.1f} s -> {res.output} (column {res.column})")


CLI = CliSpec(
    help="real token counts per document (tokenizer.json, tiktoken)",
    description="Count every document's tokens with the tokenizer you train with: a Hugging Face tokenizer.json (or "
                "a folder holding one) or a tiktoken BPE file, read from its path (nothing is downloaded). Writes "
                "the attribute set ATTRS/sets/tokens_NAME with the int64 column ts_tokens_NAME; select --dsir "
                "--tokens, the funnel and the report then count in these tokens. Counts exclude special tokens; a "
                "tokenizer file changed in place is counted again on the next run.",
    examples=("textsieve train tokenizer data/ --vocab 2000 --output tok-help.json",
              "textsieve annotate data/ -o attrs-tok/ --signals rps_doc_word_count",
              "textsieve tokens attrs-tok/ --tokenizer tok-help.json",
              "textsieve tokens attrs-tok/ --tokenizer tok-help.json --name help --workers 1"),
    report=_report, summary=_summary)

STAGE = Stage("tokens", TokensConfig, "tokens", _pipeline_run, order=100, call=run_tokens, cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=_complete, upstream=_tokenizer_file, check=_check_pipeline,
              output_sets=_output_sets,
              estimate=lambda c, e: doc_set_plan("tokens", "real token counts -> sets/tokens_NAME", e.docs))
