"""UT1 blocklist: RPv2's category-id scheme (checked against the golden id table) and the exact
netloc lookup of §11.12, on the invented test list in tests/data/ut1."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from textsieve.models.ut1 import (
    CATEGORIES,
    UT1Index,
    _load,
    build_ut1_model,
    category_ids,
    category_index,
    read_blacklists,
)

UT1_DIR = str(Path(__file__).parent / "data" / "ut1")


def test_category_ids_equal_rpv2_table(resources_dir):
    with gzip.open(resources_dir / "ut1_category_index.json.gz", "rt") as fh:
        golden = json.load(fh)
    assert tuple(golden["raw_categories_config_order"]) == CATEGORIES
    table = category_index()
    assert len(table) == len(golden["id_to_categories"]) == 8191
    assert {str(i): list(c) for i, c in enumerate(table)} == golden["id_to_categories"]


def test_index_from_folder():
    index, found = read_blacklists(UT1_DIR)
    ids = category_ids()
    assert found == ["adult", "chat", "gambling", "phishing"]  # `shopping` is not configured
    assert "shop.example" not in index
    assert index["adult.example"] == 0 and index["casino.test"] == 8 and index["chat.example.org"] == 4
    assert index["both.example"] == ids[("adult", "gambling", "phishing")] == 148
    assert index["spaced.example"] == 0  # lines are stripped


def test_exact_netloc_lookup(tmp_path):
    model = str(tmp_path / "ut1.tsm")
    build_ut1_model(UT1_DIR, model)
    urls = ["https://adult.example/a?b=1", "https://www.adult.example/", "https://ADULT.example/",
            "http://example.com:8080/x", "http://example.com/", "https://sub.adult.example", None, "",
            "http://[broken", "adult.example"]
    expected = [0, None, None, 10, None, 0, None, None, None, None]
    for loaded in (_load(model), _load(UT1_DIR)):
        assert isinstance(loaded, UT1Index)
        values, valid = loaded.lookup(urls)
        assert [int(v) if ok else None for v, ok in zip(values, valid)] == expected
