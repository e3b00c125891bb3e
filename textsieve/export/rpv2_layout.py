"""`export rpv2` into RedPajama-V2's released layout (issue 13 item 3).

Per attribute shard of shard key K (`interop.rpv2_release`): `quality_signals/K.signals.json.gz`
(records `id, id_int, metadata, quality_signals` in the released key order, compact JSON as
RPv2's msgspec writes it), `minhash/K.minhash.parquet` (the worker's schema, §7.4) and, where
the `sets/dedup_exact` set flags documents, `duplicates/K.duplicates.parquet` (§9). Shards that
`import rpv2` made carry the released key order and which files their key had in the footer,
so import -> export gives back the same files; rows without a released record (the tail
bucket) get none.

The files are published as one unit (`io.publish`: staged in `OUT/.textsieve/staging-export_rpv2-KEY/`,
switched in by `OUT/manifest.json`), so a killed export leaves the previous export, or nothing,
never a part that looks complete; `import rpv2` refuses a folder an export left unfinished. A
target that holds files no export published (a downloaded release, say) is refused unless
`overwrite`.
"""

from __future__ import annotations

import hashlib
import json

import fsspec
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.interop import rpv2_release as rel_
from textsieve.io.attributes import attribute_set_dir, attribute_shards, read_shard_meta, set_files, shard_rel
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import Publication, content_key, read_manifest
from textsieve.io.runstate import holds_output


class ExportLayoutError(TextsieveError, ValueError):
    """An attribute shard that has no place in RPv2's layout."""


def _key(meta: dict, path: str) -> str:
    key = (meta.get("rpv2") or {}).get("key")
    if key:
        return str(key)
    shard = str(meta.get("shard") or "")
    suffix = rel_.COMPONENTS["documents"]
    if shard.endswith(suffix) and rel_.KEY_RE.match(shard[: -len(suffix)]):
        return shard[: -len(suffix)]
    raise ExportLayoutError(f"{path}: its input {shard!r} is not named {{snapshot}}/{{shard}}/{{lang}}_{{bucket}}"
                            ".json.gz as in RPv2's layout; export it as one record file instead (-o FILE.jsonl.gz)")


def _exact_flags(directory: str) -> dict[str, str]:
    """{attribute shard rel: path} of the `sets/dedup_exact` set, {} when there is none."""
    try:
        return set_files(directory, "dedup_exact")[1]
    except FileNotFoundError:
        return {}


def _spans(value: list | None) -> list | None:
    return None if value is None else [[s["start"], s["end"], s["score"]] for s in value]


STAGE = "export_rpv2"


def _open(directory: str, ofs: fsspec.AbstractFileSystem, out: str, overwrite: bool) -> Publication:
    """The export's publication: keyed by the annotate folder's and the exact set's contents; a
    target holding other files is refused unless `overwrite`."""
    afs, aroot = fsspec.core.url_to_fs(directory)
    sets = {}
    for name in ("", "dedup_exact"):
        where = fsspec.core.url_to_fs(attribute_set_dir(directory, name))[1] if name else aroot
        where = where.rstrip("/")
        sets[name] = content_key(afs, where) if afs.exists(where) else None
    key = hashlib.sha256(json.dumps(sorted(sets.items())).encode()).hexdigest()[:16]
    previous = read_manifest(ofs, out) if ofs.exists(out) else None
    if not overwrite and (previous is None or previous.stage != STAGE) and holds_output(ofs, out, ()):
        raise ExportLayoutError(f"export rpv2: {out} already holds files that no `export rpv2` published (a release "
                                "folder?); choose an empty folder, or pass --overwrite to replace its files")
    return Publication(ofs, out, STAGE, key, info={"settings": key})


def write_release(directory: str, output: str, overwrite: bool = False) -> int:
    """Write the layout, published as one unit; returns the number of quality_signals records written."""
    from textsieve.io.locations import source_locations
    from textsieve.io.overlap import check_apart

    check_apart("export rpv2", output, [directory, *source_locations(directory)])
    fs, paths = attribute_shards(directory)
    root = fsspec.core.url_to_fs(directory)[1].rstrip("/")
    ofs, out = fsspec.core.url_to_fs(output)
    out = out.rstrip("/")
    ofs.makedirs(out, exist_ok=True)
    remove_stale_temps(ofs, out)
    pub = _open(directory, ofs, out, overwrite)
    try:
        n = _write_files(fs, paths, root, directory, pub)
    except BaseException:
        pub.abandon()
        raise
    pub.commit()
    return n


def _write_files(fs: fsspec.AbstractFileSystem, paths: list[str], root: str, directory: str,
                 pub: Publication) -> int:
    ofs = pub.fs
    exact = _exact_flags(directory)
    n = 0

    def add(rel: str) -> str:
        """Stage `rel` (the caller writes `pub.staged(rel)` next) and list it in the export."""
        staged.append(rel)
        return pub.staged(rel)

    staged: list[str] = []
    for path in paths:
        meta = read_shard_meta(fs, path)
        key = _key(meta, path)
        info = meta.get("rpv2") or {}
        present = set(info.get("present") or ("quality_signals", "minhash"))
        with fs.open(path, "rb") as fh:
            table = read_table(fh)
        names = table.column_names
        cols = table.to_pydict()
        rows = range(table.num_rows)
        ids = cols["id"]
        id_ints = cols["id_int"] if "id_int" in cols else [rel_.id_int(i) for i in ids]
        if "quality_signals" in present:
            in_sig = cols.get("rpv2_signals") or [True] * table.num_rows
            order = info.get("signal_order") or [c for c in names if _is_span(table.schema.field(c).type)]
            meta_order = info.get("metadata_order") or list(rel_.METADATA_KEYS)

            lines = (rel_.signals_line(ids[i], id_ints[i], _metadata(cols, key, meta_order, i),
                                       [(s, _spans(cols[s][i])) for s in order])
                     for i in rows if in_sig[i])
            n += rel_.write_gzip_lines(ofs, add(f"quality_signals/{key}{rel_.COMPONENTS['quality_signals']}"), lines)
        if "minhash" in present and all(s in cols for s in rel_.SIGNATURES):
            in_mh = cols.get("rpv2_minhash") or [True] * table.num_rows
            keep = [i for i in rows if in_mh[i]]
            mh = rel_.minhash_table(key, [ids[i] for i in keep], [id_ints[i] for i in keep],
                                    {s: [cols[s][i] for i in keep] for s in rel_.SIGNATURES})
            rel_.write_parquet(ofs, add(f"minhash/{key}{rel_.COMPONENTS['minhash']}"), mh)
        flags_path = exact.get(shard_rel(root, path))
        if flags_path is not None:
            efs = fsspec.core.url_to_fs(directory)[0]
            with efs.open(flags_path, "rb") as fh:
                flags = read_table(fh, columns=["row", "dup_exact_keep"]).to_pydict()
            by_row = dict(zip(flags["row"], flags["dup_exact_keep"]))
            dup = [i for i in rows if by_row.get(cols["row"][i]) is False]
            if dup or "duplicates" in present:
                digests = cols.get("ccnet_digest") or [None] * table.num_rows
                rel_.write_parquet(ofs, add(f"duplicates/{key}{rel_.COMPONENTS['duplicates']}"),
                                   rel_.duplicates_table(key, [ids[i] for i in dup],
                                                         [_digest(digests[i]) for i in dup]))
    for rel in staged:
        pub.add(rel)
    return n


def _metadata(cols: dict, key: str, order: list[str], i: int) -> dict:
    """A record's `metadata` (§2.3) in the released key order, from the ccnet_* columns."""
    def col(name: str) -> str | None:
        values = cols.get(name)
        return None if values is None else values[i]

    values = {"cc_segment": col("ccnet_cc_segment"), "cc_net_source": key + rel_.COMPONENTS["documents"],
              "url": col("ccnet_url"), "source_domain": col("ccnet_source_domain"), "language": col("ccnet_language"),
              "snapshot_id": key.split("/", 1)[0]}
    return {k: values.get(k) for k in order}


def _digest(value: str | None) -> str | None:
    return value[5:] if value and value.startswith("sha1:") else value


def _is_span(typ: pa.DataType) -> bool:
    if not pa.types.is_list(typ) or not pa.types.is_struct(typ.value_type):
        return False
    return {typ.value_type.field(i).name for i in range(typ.value_type.num_fields)} == {"start", "end", "score"}
