#!/usr/bin/env bash
# Digest of every output textsieve writes on a slice of the dev corpus, for refactors that must
# keep outputs byte-identical: run it before and after, then `diff` the two digest files.
#
#   benchmarks/output_digest.sh WORKDIR > before.txt     # (with the old checkout's textsieve)
#   benchmarks/output_digest.sh WORKDIR2 > after.txt
#   diff before.txt after.txt
#
# It runs annotate (rule signals, MinHash, language id, an n-gram LM, importance weights, a
# classifier), dedup exact (raw and rpv2), dedup fuzzy, dsir fit, select (recipe, DSIR, both),
# eval kl/lm and the RPv2 exports, and prints one sha256 per file (Parquet files are digested
# by their rows and schema, without the footer's timings) plus the commands' stdout.
# TEXTSIEVE (default: textsieve on PATH) and TEXTSIEVE_SHARED (default: ../shared) can be set.
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${TEXTSIEVE_SHARED:-$here/../shared}
ts=${TEXTSIEVE:-textsieve}
py=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
set +o pipefail  # head closes the pipe early
zcat "$shared/corpora/dev/web_sample.jsonl.gz" | head -2000 | gzip -n > pool.jsonl.gz
zcat "$shared/corpora/dev/web_sample.jsonl.gz" | head -2600 | tail -600 | gzip -n > ccnet.jsonl.gz
zcat "$shared/corpora/dev/target_wiki.jsonl.gz" | head -300 | gzip -n > wiki.jsonl.gz
set -o pipefail
res=$shared/golden/rpv2_resources
q=(-q)
export SOURCE_DATE_EPOCH=1700000000  # model files are byte-reproducible with it
{
$ts train lm --corpus wiki.jsonl.gz -o lm.tsm --order 3 "${q[@]}"
$ts train importance --target wiki.jsonl.gz --source ccnet.jsonl.gz --name wikipedia -o imp.tsm "${q[@]}"
$ts train classifier --positive wiki.jsonl.gz --negative ccnet.jsonl.gz --label wiki --lang en -o cls.tsm "${q[@]}"
$ts annotate pool.jsonl.gz -o attrs --resources "$res" --workers 2 "${q[@]}"
$ts annotate pool.jsonl.gz -o attrs-models --resources "$res" --workers 2 --lang auto --signals rpv2 \
  --model wiki=lm.tsm --model wikipedia=imp.tsm --model wikiref=cls.tsm "${q[@]}"
$ts dedup exact attrs "${q[@]}"
$ts dedup exact attrs --normalize rpv2 "${q[@]}"
$ts dedup fuzzy attrs --threshold 0.8 --threshold 0.7 "${q[@]}"
$ts dsir fit --target wiki.jsonl.gz --raw attrs --name wiki "${q[@]}"
$ts select attrs --recipe gopher -o sel-gopher "${q[@]}"
$ts select attrs --recipe c4 -o sel-c4 --format parquet "${q[@]}"
$ts select attrs --dsir wiki --k 300 -o sel-dsir "${q[@]}"
$ts select attrs --recipe gopher --dsir wiki --k 200 -o sel-both "${q[@]}"
$ts select attrs --recipe c4 --dry-run --json
$ts eval kl --selection sel-dsir --target wiki.jsonl.gz --pool attrs
$ts eval lm --selection sel-dsir --target wiki.jsonl.gz --pool attrs
$ts export rpv2 attrs -o rpv2.jsonl "${q[@]}"
$ts export rpv2-clusters attrs --threshold 0.8 -o clusters.parquet "${q[@]}"
} > stdout.txt 2> stderr.txt || { cat stderr.txt >&2; exit 1; }
$py - <<'EOF'
import gzip, hashlib, io, json, pathlib, re, zipfile
import numpy as np
import pyarrow.parquet as pq
root = pathlib.Path(".")
TIMING = re.compile(r'"([a-z_]*seconds?|elapsed|started|finished|wall_s|time\w*)": [0-9.e+-]+')
def zip_digest(z: zipfile.ZipFile) -> bytes:
    """Members of a zip (model files): header.json without its creation time, arrays by value."""
    out = b""
    for name in sorted(z.namelist()):
        data = z.read(name)
        if name.endswith(".json"):
            doc = json.loads(data)
            doc.pop("created", None)
            data = json.dumps(doc, sort_keys=True).encode()
        elif name.endswith(".npz") or data[:2] == b"PK":
            arrays = np.load(io.BytesIO(data))
            data = b"".join(k.encode() + arrays[k].tobytes() for k in sorted(arrays.files))
        out += name.encode() + hashlib.sha256(data).digest()
    return out
def digest(p: pathlib.Path) -> str:
    if zipfile.is_zipfile(p):
        return hashlib.sha256(zip_digest(zipfile.ZipFile(p))).hexdigest()[:16]
    if p.suffix == ".parquet":
        t = pq.read_table(p)
        h = hashlib.sha256(str(t.schema.remove_metadata()).encode())
        for col in t.columns:
            h.update(str(col.to_pylist()).encode())
        return h.hexdigest()[:16]
    data = p.read_bytes()
    if p.suffix == ".gz":
        data = gzip.decompress(data)
    if p.suffix in (".json", ".txt") or p.name.endswith(".jsonl"):
        data = TIMING.sub("T", data.decode()).encode()
    return hashlib.sha256(data).hexdigest()[:16]
for p in sorted(root.rglob("*")):
    if p.is_file() and p.name not in ("stderr.txt",) and not p.name.startswith("."):
        print(p, digest(p))
EOF
