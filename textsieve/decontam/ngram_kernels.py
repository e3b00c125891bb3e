"""The numba kernels of decontamination: words, n-gram keys, index look-ups, matched spans.

Definitions (words, folding, keys, the n-grams left out): `decontam.ngrams`. Inputs are
`text.batch_encoding`'s code-point batches, so all offsets are code points of the Python `str`,
the unit of span columns.

Two index layouts are looked up (built by `decontam.index`):

* exact: the distinct keys sorted (`keys`), the bit set of the benchmarks holding each
  (`masks`, bit b = benchmark b), and bucket offsets over the top `bits` bits of a key
  (`buckets`, 2**bits + 1 entries, ~one key per bucket), so a look-up reads one or two cache
  lines instead of a binary search's ~20;
* Bloom: one filter per benchmark in one bit array (`bloom`; filter b starts at word
  `bbase[b]`, has `bm[b]` bits and `bk[b]` probes); probe i of key x is
  ``(x + i * h2(x)) mod m`` (Kirsch-Mitzenmacher double hashing), h2 a second mix of x.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.text.hashing import FNV64_OFFSET, FNV64_PRIME, fmix64

_IGNORE = np.uint32(0xFFFFFFFF)
_SOLO = np.uint32(0x80000000)
_CP_MASK = np.uint32(0x1FFFFF)
_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the rolling n-gram hash
_LEN_SALT = np.uint64(0xD6E8FEB86659FD93)  # n * this is added before the final mix
_H2_SALT = np.uint64(0xA0761D6478BD642F)


@njit(cache=True, nogil=True)
def doc_words(cps, s, e, fold, ws, we, wh):
    """Words of ``cps[s:e]``: start/end (code points from s) into ws/we, 64-bit hash into wh;
    returns the number of words (the arrays need ``e - s`` slots)."""
    n = 0
    start = -1
    end = 0
    h = FNV64_OFFSET
    for i in range(s, e):
        f = fold[cps[i]]
        if f == 0:
            if start >= 0:
                ws[n] = start
                we[n] = end
                wh[n] = fmix64(h)
                n += 1
                start = -1
            continue
        if f == _IGNORE:
            if start >= 0:
                end = i + 1 - s
            continue
        if f & _SOLO:
            if start >= 0:
                ws[n] = start
                we[n] = end
                wh[n] = fmix64(h)
                n += 1
                start = -1
            ws[n] = i - s
            we[n] = i + 1 - s
            wh[n] = fmix64((FNV64_OFFSET ^ np.uint64(f & _CP_MASK)) * FNV64_PRIME)
            n += 1
            continue
        if start < 0:
            start = i - s
            h = FNV64_OFFSET
        h = (h ^ np.uint64(f)) * FNV64_PRIME
        end = i + 1 - s
    if start >= 0:
        ws[n] = start
        we[n] = end
        wh[n] = fmix64(h)
        n += 1
    return n


@njit(cache=True, nogil=True)
def window_keys(wh, nw, k, out):
    """Keys of the nw - k + 1 windows of k words (nw >= k) into out; returns their number."""
    kk = np.uint64(k)
    salt = kk * _LEN_SALT
    top = np.uint64(1)
    for _ in range(k - 1):
        top *= _BASE
    h = np.uint64(0)
    for j in range(k):
        h = h * _BASE + wh[j]
    out[0] = fmix64(h + salt)
    npos = nw - k + 1
    for p in range(1, npos):
        h = (h - wh[p - 1] * top) * _BASE + wh[p + k - 1]
        out[p] = fmix64(h + salt)
    return npos


@njit(cache=True, nogil=True)
def plain_prefix(cps, s, fold, ws, we, nw, out):
    """``out[i]``: how many of the first i words of ``cps[s:]`` (spans ws/we) are *not* a single
    letter or digit (one folded code point outside the one-word-per-character scripts), so the
    window of k words at p is made only of single letters or digits when
    ``out[p + k] == out[p]`` (`decontam.ngrams`: such n-grams are left out)."""
    out[0] = 0
    for i in range(nw):
        chars = 0
        solo = False
        for j in range(s + ws[i], s + we[i]):
            f = fold[cps[j]]
            if f == _IGNORE:
                continue
            if f & _SOLO:
                solo = True
            chars += 1
            if chars > 1:
                break
        out[i + 1] = out[i] + (0 if chars == 1 and not solo else 1)


@njit(cache=True, nogil=True)
def _keep_plain(out, m, npos, k, plain):
    """Compact the npos keys at ``out[m:]`` to the windows that are not only single letters or
    digits; returns how many are kept."""
    j = m
    for p in range(npos):
        if plain[p + k] != plain[p]:
            out[j] = out[m + p]
            j += 1
    return j - m


@njit(cache=True, nogil=True)
def example_keys(cps, off, fold, n, min_words):
    """The keys of a batch of benchmark examples: every n-gram of an example of >= n words; one
    key of all its words for an example of min_words..n-1 words; none for a shorter one. An
    n-gram made only of single letters or digits (an `A B C ... Z` index line) is left out.
    Returns (keys, short (bool per length < n: some example used whole at that length),
    number of examples left out as too short, number of n-grams left out as letters only)."""
    n_ex = off.shape[0] - 1
    longest = 0
    for d in range(n_ex):
        longest = max(longest, off[d + 1] - off[d])
    ws = np.empty(longest + 1, dtype=np.int64)
    we = np.empty(longest + 1, dtype=np.int64)
    wh = np.empty(longest + 1, dtype=np.uint64)
    plain = np.empty(longest + 2, dtype=np.int64)
    out = np.empty(cps.shape[0] + n_ex, dtype=np.uint64)
    short = np.zeros(n, dtype=np.bool_)
    m = 0
    skipped = 0
    letters = 0
    for d in range(n_ex):
        nw = doc_words(cps, off[d], off[d + 1], fold, ws, we, wh)
        k = n if nw >= n else nw
        if nw < n and (nw < min_words or nw == 0):
            skipped += 1
            continue
        plain_prefix(cps, off[d], fold, ws, we, nw, plain)
        npos = window_keys(wh, nw, k, out[m:])
        kept = _keep_plain(out, m, npos, k, plain)
        letters += npos - kept
        m += kept
        if k < n and kept:
            short[k] = True
    return out[:m].copy(), short, skipped, letters


@njit(cache=True, inline="always")
def _exact_mask(key, keys, masks, buckets, shift):
    b = key >> shift
    for j in range(buckets[b], buckets[b + np.uint64(1)]):
        x = keys[j]
        if x == key:
            return masks[j]
        if x > key:
            break
    return np.uint64(0)


@njit(cache=True, inline="always")
def bloom_probe(bloom, base, m, k, key):
    """Whether all k probes of key are set in the filter at word `base` with m bits."""
    x = key % m
    step = fmix64(key ^ _H2_SALT) % m
    if step == 0:
        step = np.uint64(1)
    for _ in range(k):
        if (bloom[base + (x >> np.uint64(6))] >> (x & np.uint64(63))) & np.uint64(1) == 0:
            return False
        x += step
        if x >= m:
            x -= m
    return True


@njit(cache=True, nogil=True)
def bloom_add(bloom, base, m, k, keys):
    """Set the k probes of every key in the filter at word `base` with m bits."""
    for i in range(keys.shape[0]):
        key = keys[i]
        x = key % m
        step = fmix64(key ^ _H2_SALT) % m
        if step == 0:
            step = np.uint64(1)
        for _ in range(k):
            w = base + (x >> np.uint64(6))
            bloom[w] |= np.uint64(1) << (x & np.uint64(63))
            x += step
            if x >= m:
                x -= m


@njit(cache=True, nogil=True)
def match_batch(cps, doc_off, fold, lengths, exact, keys, masks, buckets, shift, bloom, bbase, bm, bk):
    """Per document: matched n-grams (any length in `lengths`; n-grams made only of single
    letters or digits are not looked up), the OR of their benchmark bits, and the merged spans
    of matched text (code points; score = matched n-grams in the span).

    Returns (counts, doc_masks, span_off (n_docs + 1), span_start, span_end, span_score)."""
    n_docs = doc_off.shape[0] - 1
    counts = np.zeros(n_docs, dtype=np.int64)
    doc_masks = np.zeros(n_docs, dtype=np.uint64)
    span_off = np.zeros(n_docs + 1, dtype=np.int64)
    longest = 0
    for d in range(n_docs):
        longest = max(longest, doc_off[d + 1] - doc_off[d])
    ws = np.empty(longest + 1, dtype=np.int64)
    we = np.empty(longest + 1, dtype=np.int64)
    wh = np.empty(longest + 1, dtype=np.uint64)
    plain = np.empty(longest + 2, dtype=np.int64)
    kbuf = np.empty(longest + 1, dtype=np.uint64)
    reach = np.empty(longest + 1, dtype=np.int64)
    cnt = np.empty(longest + 1, dtype=np.int64)
    cap = 64
    ss = np.empty(cap, dtype=np.int64)
    se = np.empty(cap, dtype=np.int64)
    sc = np.empty(cap, dtype=np.int64)
    ns = 0
    n_bench = bbase.shape[0]
    for d in range(n_docs):
        nw = doc_words(cps, doc_off[d], doc_off[d + 1], fold, ws, we, wh)
        plain_prefix(cps, doc_off[d], fold, ws, we, nw, plain)
        c = 0
        dm = np.uint64(0)
        for i in range(nw):
            reach[i] = 0
            cnt[i] = 0
        for li in range(lengths.shape[0]):
            k = lengths[li]
            if nw < k:
                continue
            npos = window_keys(wh, nw, k, kbuf)
            for p in range(npos):
                if plain[p + k] == plain[p]:  # single letters or digits only: never looked up
                    continue
                key = kbuf[p]
                mask = np.uint64(0)
                if exact:
                    mask = _exact_mask(key, keys, masks, buckets, shift)
                else:
                    for b in range(n_bench):
                        if bloom_probe(bloom, bbase[b], bm[b], bk[b], key):
                            mask |= np.uint64(1) << np.uint64(b)
                if mask != 0:
                    c += 1
                    dm |= mask
                    cnt[p] += 1
                    if p + k > reach[p]:
                        reach[p] = p + k
        counts[d] = c
        doc_masks[d] = dm
        if c:
            cur_s = -1
            cur_e = 0
            cur_c = 0
            for p in range(nw + 1):
                if p < nw and cnt[p] == 0:
                    continue
                if p < nw and cur_s >= 0 and p < cur_e:
                    cur_e = max(cur_e, reach[p])
                    cur_c += cnt[p]
                    continue
                if cur_s >= 0:
                    if ns == cap:
                        cap *= 2
                        ss2 = np.empty(cap, dtype=np.int64)
                        se2 = np.empty(cap, dtype=np.int64)
                        sc2 = np.empty(cap, dtype=np.int64)
                        ss2[:ns] = ss[:ns]
                        se2[:ns] = se[:ns]
                        sc2[:ns] = sc[:ns]
                        ss, se, sc = ss2, se2, sc2
                    ss[ns] = ws[cur_s]
                    se[ns] = we[cur_e - 1]
                    sc[ns] = cur_c
                    ns += 1
                if p < nw:
                    cur_s = p
                    cur_e = reach[p]
                    cur_c = cnt[p]
        span_off[d + 1] = ns
    return counts, doc_masks, span_off, ss[:ns].copy(), se[:ns].copy(), sc[:ns].copy()


# -- building the exact index in place (`decontam.index._fill_exact`) ------------------------------


@njit(cache=True, nogil=True)
def compact_unique(buf, start, end, dst):
    """Write the distinct values of the sorted ``buf[start:end]`` to ``buf[dst:]`` (``dst <= start``,
    so every write lands at or before the value read: safe in place); returns how many. No
    allocation, unlike `np.unique` (a sorted copy, a mask and a gathered result)."""
    n = 0
    for i in range(start, end):
        x = buf[i]
        if n == 0 or buf[dst + n - 1] != x:
            buf[dst + n] = x
            n += 1
    return n


@njit(cache=True, nogil=True)
def merge_segments(buf, seg_off, out_keys, out_masks):
    """k-way merge of the sorted, distinct segments ``buf[seg_off[b]:seg_off[b + 1]]`` (one per
    benchmark b) into out_keys (distinct, sorted) and out_masks (bit b: segment b holds the key);
    returns the number of keys. A binary heap of the k segment heads: O(keys x log k)."""
    k = seg_off.shape[0] - 1
    pos = seg_off[:-1].copy()
    hk = np.empty(max(1, k), dtype=np.uint64)
    hs = np.empty(max(1, k), dtype=np.int64)
    size = 0
    for s in range(k):
        if pos[s] >= seg_off[s + 1]:
            continue
        i = size
        size += 1
        hk[i] = buf[pos[s]]
        hs[i] = s
        while i > 0:  # sift up
            p = (i - 1) // 2
            if hk[p] < hk[i] or (hk[p] == hk[i] and hs[p] < hs[i]):
                break
            hk[p], hk[i] = hk[i], hk[p]
            hs[p], hs[i] = hs[i], hs[p]
            i = p
    n = 0
    while size > 0:
        key = hk[0]
        s = hs[0]
        bit = np.uint64(1) << np.uint64(s)
        if n > 0 and out_keys[n - 1] == key:
            out_masks[n - 1] |= bit
        else:
            out_keys[n] = key
            out_masks[n] = bit
            n += 1
        pos[s] += 1
        if pos[s] < seg_off[s + 1]:
            hk[0] = buf[pos[s]]
        else:
            size -= 1
            hk[0] = hk[size]
            hs[0] = hs[size]
        i = 0
        while True:  # sift down
            a = 2 * i + 1
            if a >= size:
                break
            c = a
            b2 = a + 1
            if b2 < size and (hk[b2] < hk[a] or (hk[b2] == hk[a] and hs[b2] < hs[a])):
                c = b2
            if hk[i] < hk[c] or (hk[i] == hk[c] and hs[i] < hs[c]):
                break
            hk[c], hk[i] = hk[i], hk[c]
            hs[c], hs[i] = hs[i], hs[c]
            i = c
    return n


@njit(cache=True, nogil=True)
def fill_buckets(keys, shift, buckets):
    """``buckets[b]`` = the first index of keys whose top bits (``key >> shift``) are >= b, for the
    sorted keys; buckets has 2**bits + 1 entries, zeroed. Counts then sums in place (no
    temporary, unlike `np.bincount` of a shifted copy)."""
    for i in range(keys.shape[0]):
        buckets[np.int64(keys[i] >> shift) + 1] += 1
    for b in range(1, buckets.shape[0]):
        buckets[b] += buckets[b - 1]
