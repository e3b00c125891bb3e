"""Which licence a repository's licence files hold: a small documented matcher over their text.

BigQuery's `github_repos.licenses` table gives one GitHub licence key per repository (`mit`,
`apache-2.0`, `bsd-3-clause`...), which RedPajama-1T's export query filters on (`mit%`, `bsd%`,
`apache%`). A repository read from a folder or a tarball has no such table, so its key comes from
its top-level licence files (`LICENSE`, `LICENCE*`, `COPYING*`, `UNLICENSE`, `MIT-LICENSE`...):
each file's text, lower-cased with its whitespace and comment markers collapsed, is searched for
the phrase that every copy of a licence carries (the grant of MIT, the first clause of BSD,
Apache's title...) and the phrases that tell its variants apart, which must follow within
`WINDOW` characters (BSD's endorsement clause, a GPL's version). The licence found *first* in the
file wins, and among those found at one place the most specific (`RULES` order): a package's
licence file often ends with the licences of what it bundles (numpy's holds a GPL runtime
exception after its BSD text), and licence texts quote each other (Python's names the GPL). A
file that matches none is `other`. Several files with different licences (`LICENSE-MIT` and `LICENSE-APACHE`) give
their keys sorted and joined by `,`; no licence file gives None.

Why not a library: `license-expression` parses and normalizes SPDX expressions but does not
recognise licence *texts*; the full-text scanners (ScanCode) are large and slow for one file per
repository. The keys are GitHub's (lower-case SPDX ids), so `github_rules.permissive` applies
the export query's test to them unchanged.
"""

from __future__ import annotations

import re

#: a top-level file that holds a licence: LICENSE, LICENCE.txt, COPYING.LESSER, UNLICENSE, MIT-LICENSE...
LICENSE_FILE = re.compile(r"(?i)((un)?licen[cs]e|copying)([-._ ].*)?|[a-z0-9]+[-_]licen[cs]e(\.[a-z]+)?")

#: (key, (phrase, phrases that must follow it within WINDOW characters)), most specific first where
#: two share a first phrase; phrases are in normalized text (lower case, runs of whitespace and of
#: comment markers `#`, `*`, `//`, `--` as one space)
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("psf-2.0", ("python software foundation license",)),
    ("agpl-3.0", ("gnu affero general public license", "version 3")),
    ("lgpl-3.0", ("gnu lesser general public license", "version 3")),
    ("lgpl-2.1", ("gnu lesser general public license", "version 2.1")),
    ("lgpl-2.0", ("gnu library general public license",)),
    ("gpl-3.0", ("gnu general public license", "version 3")),
    ("gpl-2.0", ("gnu general public license", "version 2")),
    ("mpl-2.0", ("mozilla public license", "2.0")),
    ("epl-2.0", ("eclipse public license", "2.0")),
    ("epl-1.0", ("eclipse public license",)),
    ("apache-2.0", ("apache license", "version 2.0")),
    ("apache-2.0", ("shall mean the terms and conditions for use, reproduction, and distribution as defined by "
                    "sections 1 through 9 of this document",)),
    ("bsl-1.0", ("boost software license",)),
    ("bsd-4-clause", ("redistribution and use in source and binary forms", "all advertising materials")),
    ("bsd-3-clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("bsd-3-clause", ("redistribution and use in source and binary forms", "may not be used to endorse")),
    ("bsd-2-clause", ("redistribution and use in source and binary forms",)),
    ("isc", ("permission to use, copy, modify, and/or distribute this software for any purpose with or "
             "without fee is hereby granted", "copyright notice and this permission notice appear in all copies")),
    ("0bsd", ("permission to use, copy, modify, and/or distribute this software for any purpose with or "
              "without fee is hereby granted",)),
    ("isc", ("permission to use, copy, modify, and distribute this software for any purpose with or "
             "without fee is hereby granted",)),
    ("mit", ("permission is hereby granted, free of charge, to any person obtaining a copy",)),
    ("unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("cc0-1.0", ("cc0 1.0 universal",)),
    ("wtfpl", ("do what the fuck you want to public license",)),
    ("zlib", ("this software is provided 'as-is', without any express or implied warranty",
              "altered source versions must be plainly marked as such")),
)
#: how far after a licence's first phrase the phrases telling its variant must come
WINDOW = 3000
OTHER = "other"

_SPACE = re.compile(r"(?:\s|#|\*|//|--)+")


def normalize(text: str) -> str:
    """Lower case; every run of whitespace and comment markers one space (so a licence pasted
    into a comment block, or wrapped at other columns, reads the same)."""
    return _SPACE.sub(" ", text.lower()).strip()


def detect_license(text: str) -> str:
    """The GitHub licence key of one licence file's text (`other` when none matches): the
    licence that starts first in the file, the most specific where several start there."""
    norm = normalize(text)
    best: tuple[int, int] | None = None
    for index, (_key, (first, *then)) in enumerate(RULES):
        at = norm.find(first)
        if at < 0 or (best is not None and at > best[0]):
            continue
        window = norm[at: at + len(first) + WINDOW]
        if all(p in window for p in then) and (best is None or (at, index) < best):
            best = (at, index)
    return RULES[best[1]][0] if best is not None else OTHER


def is_license_file(name: str) -> bool:
    """Whether a top-level file name is a licence file (see `LICENSE_FILE`)."""
    return LICENSE_FILE.fullmatch(name) is not None


def repo_license(texts: list[str]) -> str | None:
    """The key of a repository from its licence files' texts: None without any; one key, or the
    sorted distinct keys joined by `,` (an unrecognised file counts only when nothing else is
    recognised: a NOTICE-like COPYING beside a LICENSE does not make the repository `other`)."""
    if not texts:
        return None
    keys = sorted({detect_license(t) for t in texts})
    known = [k for k in keys if k != OTHER]
    return ",".join(known) if known else OTHER
