"""UT1 domain blocklist: `rps_doc_ut1_blacklist` (RPv2 §4.4, §5.4, §11.12).

The user provides a UT1-style folder (`CATEGORY/domains`, one domain per line; the UT1 archive
cannot be downloaded here or shipped). Only RPv2's 13 configured categories are read:
`adult, agressive, agressif, arjel, chat, dating, ddos, filehosting, gambling, porn,
mixed_adult, phishing, violence`.

Category ids (RPv2's scheme): sort the 13 categories; enumerate every non-empty subset, by size
(1 to 13), each size in lexicographic combination order (`itertools.combinations` of the
sorted list). 0 = {adult}, 12 = {violence}, 13 = {adult, agressif}, ..., 8190 = all 13. A
domain's id is the id of the *set* of categories that list it. Lines are stripped; blank lines
are skipped.

Lookup (§11.12): the document URL's netloc (`urllib.parse.urlsplit(url).netloc`, as CCNet's
`source_domain`), looked up exactly: no lowercasing, no `www.` or port stripping, no parent
domains. No URL or no entry gives null. The signal is an int span column.

Model: `textsieve train ut1 --blacklists DIR --output ut1.tsm` (domains and ids in a `.tsm`
with the category table in its header), or `--models ut1=DIR` to index the folder at load time.
A model named N gives `rps_doc_N_blacklist`, so `--models ut1=...` gives RPv2's
`rps_doc_ut1_blacklist`.
"""

from __future__ import annotations

import hashlib
import os
from itertools import combinations
from urllib.parse import urlsplit

import numpy as np

from textsieve.models.format import load_model_file, save_model
from textsieve.models.registry import register_model_kind
from textsieve.signals.registry import DocScores, Signal
from textsieve.text.views import BatchViews

KIND = "ut1"
#: RPv2's configured UT1 categories, in its config order (`configs/rp_v2.0.conf`).
CATEGORIES = ("adult", "agressive", "agressif", "arjel", "chat", "dating", "ddos", "filehosting", "gambling",
              "porn", "mixed_adult", "phishing", "violence")
DOMAINS_MEMBER = "domains.txt"


def category_index(categories: tuple[str, ...] = CATEGORIES) -> list[tuple[str, ...]]:
    """RPv2's id table: position i holds the sorted category set with id i."""
    cats = sorted(set(categories))
    return [combo for size in range(1, len(cats) + 1) for combo in combinations(cats, size)]


def category_ids(categories: tuple[str, ...] = CATEGORIES) -> dict[tuple[str, ...], int]:
    return {combo: i for i, combo in enumerate(category_index(categories))}


def read_blacklists(folder: str) -> tuple[dict[str, int], list[str]]:
    """{domain: category id} from `folder/CATEGORY/domains`, and the categories found."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"UT1 blacklists folder not found: {folder}")
    per_domain: dict[str, set[str]] = {}
    found = []
    for cat in sorted(CATEGORIES):
        path = os.path.join(folder, cat, "domains")
        if not os.path.isfile(path):
            continue
        found.append(cat)
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                domain = line.strip()
                if domain:
                    per_domain.setdefault(domain, set()).add(cat)
    if not found:
        raise ValueError(f"{folder}: no UT1 category lists found; expected CATEGORY/domains files for "
                         f"some of: {', '.join(CATEGORIES)}")
    ids = category_ids()
    return {d: ids[tuple(sorted(cats))] for d, cats in per_domain.items()}, found


def build_ut1_model(folder: str, output: str) -> tuple[str, dict]:
    """Index a UT1 folder into a `.tsm`; returns (fingerprint, header)."""
    index, found = read_blacklists(folder)
    domains = sorted(index)
    blob = "\n".join(domains).encode("utf-8", "surrogateescape")
    digest = hashlib.sha256()
    for cat in found:
        with open(os.path.join(folder, cat, "domains"), "rb") as fh:
            digest.update(cat.encode() + b"\0" + fh.read() + b"\0")
    training_data = {"fingerprint": digest.hexdigest(), "documents": len(domains), "domains": len(domains),
                     "categories_found": found, "source": os.path.abspath(folder)}
    params = {"categories": list(CATEGORIES), "id_scheme": "rpv2: non-empty subsets of the sorted categories "
              "by size, then lexicographic", "lookup": "exact urlsplit(url).netloc"}
    counts = {c: int(n) for c, n in zip(*np.unique([index[d] for d in domains], return_counts=True))} if domains \
        else {}
    fp = save_model(output, KIND, params, {"category_id": np.array([index[d] for d in domains], dtype=np.int16)},
                    training_data, {"domains_per_category_id": {str(k): v for k, v in counts.items()}},
                    {DOMAINS_MEMBER: blob})
    return fp, load_model_file(output).header


class UT1Index:
    def __init__(self, domain_to_id: dict[str, int]):
        self.domain_to_id = domain_to_id

    def lookup(self, urls: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
        values = np.zeros(len(urls), dtype=np.int64)
        valid = np.zeros(len(urls), dtype=bool)
        get = self.domain_to_id.get
        for i, url in enumerate(urls):
            if not url:
                continue
            try:
                cid = get(urlsplit(url).netloc)
            except ValueError:  # a malformed URL (e.g. a bad IPv6 literal) has no domain
                continue
            if cid is not None:
                values[i], valid[i] = cid, True
        return values, valid


def _load(path: str) -> UT1Index:
    if os.path.isdir(path):
        return UT1Index(read_blacklists(path)[0])
    mf = load_model_file(path)
    domains = mf.extra[DOMAINS_MEMBER].decode("utf-8", "surrogateescape").split("\n") if mf.extra.get(
        DOMAINS_MEMBER) else []
    return UT1Index(dict(zip(domains, mf.arrays["category_id"].tolist())))


def _signals(name: str, loaded: UT1Index) -> list[Signal]:
    def fn(v: BatchViews) -> DocScores:
        values, valid = loaded.lookup(v.urls)
        return DocScores(values, valid)

    return [Signal(f"rps_doc_{name}_blacklist", "doc", "int", "blocklist",
                   f"UT1 category id of the URL's exact netloc in blocklist {name!r} (RPv2 §5.4), null if unlisted",
                   (), fn)]


def _is_ut1_folder(path: str) -> bool:
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, c, "domains")) for c in CATEGORIES)


register_model_kind(KIND, load=_load, signals=_signals, sniff=_is_ut1_folder)
