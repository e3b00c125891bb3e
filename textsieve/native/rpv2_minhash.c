/* RedPajama-V2 MinHash signatures (spec rpv2-signals.md section 7) in plain C.
 *
 * The same function as textsieve/dedup/minhash_numba.py, for processes that should not pay
 * for numba's JIT (about 125 MB of LLVM, type registries and target context): `annotate
 * --signals minhash` then runs in roughly the memory of numpy + pyarrow. Loaded with ctypes
 * (textsieve/native/__init__.py); no Python API is used, so building it needs only a C
 * compiler, not the Python headers.
 *
 * Definition: the content of a document is its normalized words separated by single ASCII
 * spaces. Shingles are the `ngram`-word windows joined by single spaces, i.e. contiguous slices
 * of the content. A shingle's hash is the first 4 bytes of its SHA-1, read little-endian
 * (datasketch sha1_hash32). Permutation k maps h to ((h*a_k + b_k) mod 2^64 mod (2^61-1)) &
 * 0xFFFFFFFF; signature value k is the minimum over the shingles, starting at 2^32-1.
 *
 * SHA-1 runs on LANES messages at once with GCC vector extensions (one AVX2 register, or two
 * SSE2 registers on older CPUs; target_clones builds AVX-512, AVX2 and baseline variants and picks one
 * at load time). Messages are copied into
 * per-lane padded scratch blocks, so the compression itself is branch-free.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LANES 8
#define SPACE 0x20
#define N_BUCKETS 4 /* shingles of 1, 2, 3 and >= 4 SHA-1 blocks */
#define MERSENNE ((uint64_t)0x1FFFFFFFFFFFFFFFULL)

typedef uint32_t v8u __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MULTIVERSION
#endif

static inline __attribute__((always_inline)) v8u rotl(v8u x, int n) { return (x << n) | (x >> (32 - n)); }

static inline __attribute__((always_inline)) v8u splat(uint32_t x) {
    v8u v = {x, x, x, x, x, x, x, x};
    return v;
}

static inline __attribute__((always_inline)) uint32_t load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* One SHA-1 round: e += rotl(a, 5) + f + k + w, then the registers rotate (the renaming is free
 * once the rounds are unrolled). */
#define SHA1_ROUND(f, k, wt)                                                                         \
    do {                                                                                            \
        v8u tmp_ = rotl(a, 5) + (f) + e + splat(k) + (wt);                                          \
        e = d;                                                                                      \
        d = c;                                                                                      \
        c = rotl(b, 30);                                                                            \
        b = a;                                                                                      \
        a = tmp_;                                                                                   \
    } while (0)

/* Message word t >= 16, computed in place in the 16-word ring. */
#define SHA1_SCHEDULE(t) (w[(t) & 15] = rotl(w[((t) - 3) & 15] ^ w[((t) - 8) & 15] ^ w[((t) - 14) & 15] ^ w[(t) & 15], 1))

/* One SHA-1 compression of LANES blocks; w holds the 16 message words of every lane. The four
 * 20-round phases are separate fully unrolled loops: one loop over 80 rounds with a branch on the
 * round number kept a jump and a computed ring index in every round (1.4x slower). */
static inline __attribute__((always_inline)) void compress(v8u st[5], v8u w[16]) {
    v8u a = st[0], b = st[1], c = st[2], d = st[3], e = st[4];
#pragma GCC unroll 16
    for (int t = 0; t < 16; t++) SHA1_ROUND((b & c) | (~b & d), 0x5A827999u, w[t]);
#pragma GCC unroll 4
    for (int t = 16; t < 20; t++) SHA1_ROUND((b & c) | (~b & d), 0x5A827999u, SHA1_SCHEDULE(t));
#pragma GCC unroll 20
    for (int t = 20; t < 40; t++) SHA1_ROUND(b ^ c ^ d, 0x6ED9EBA1u, SHA1_SCHEDULE(t));
#pragma GCC unroll 20
    for (int t = 40; t < 60; t++) SHA1_ROUND((b & c) | (b & d) | (c & d), 0x8F1BBCDCu, SHA1_SCHEDULE(t));
#pragma GCC unroll 20
    for (int t = 60; t < 80; t++) SHA1_ROUND(b ^ c ^ d, 0xCA62C1D6u, SHA1_SCHEDULE(t));
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
    st[4] += e;
}

static inline __attribute__((always_inline)) int64_t n_blocks(int64_t length) { return (length + 8) / 64 + 1; }

/* Write the padded message buf[0:length] into out (n_blocks(length)*64 bytes). */
static inline __attribute__((always_inline)) void pad_message(const uint8_t *msg, int64_t length, uint8_t *out) {
    int64_t nb = n_blocks(length);
    memcpy(out, msg, (size_t)length);
    memset(out + length, 0, (size_t)(nb * 64 - length));
    out[length] = 0x80;
    uint64_t bits = (uint64_t)length * 8u;
    for (int i = 0; i < 8; i++) out[nb * 64 - 1 - i] = (uint8_t)(bits >> (8 * i));
}

/* H0 of the SHA-1 of LANES messages (n_lanes of them real), byte-swapped: datasketch's
 * sha1_hash32. `scratch` holds LANES padded messages of `stride` bytes each. */
static inline __attribute__((always_inline)) void sha1_h0_lanes(const uint8_t *content, const int64_t *starts, const int64_t *lengths,
                          int n_lanes, uint8_t *scratch, int64_t stride, uint32_t *out) {
    int64_t nb[LANES], max_nb = 0;
    for (int l = 0; l < LANES; l++) {
        int src = l < n_lanes ? l : 0;
        nb[l] = n_blocks(lengths[src]);
        if (nb[l] > max_nb) max_nb = nb[l];
        pad_message(content + starts[src], lengths[src], scratch + l * stride);
    }
    v8u st[5];
    const uint32_t init[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    for (int i = 0; i < 5; i++) st[i] = splat(init[i]);
    uint32_t h0[LANES];
    for (int64_t blk = 0; blk < max_nb; blk++) {
        v8u w[16];
        for (int t = 0; t < 16; t++) {
            uint32_t col[LANES];
            for (int l = 0; l < LANES; l++) {
                /* a finished lane re-reads its last block; its result was captured already */
                int64_t bb = blk < nb[l] ? blk : nb[l] - 1;
                col[l] = load_be32(scratch + l * stride + bb * 64 + 4 * t);
            }
            memcpy(&w[t], col, sizeof(col));
        }
        compress(st, w);
        uint32_t s0[LANES];
        memcpy(s0, &st[0], sizeof(s0));
        for (int l = 0; l < LANES; l++)
            if (blk == nb[l] - 1) h0[l] = s0[l];
    }
    for (int l = 0; l < n_lanes; l++) out[l] = __builtin_bswap32(h0[l]);
}

/* mins[k] = min(mins[k], ((h*a_k + b_k) mod 2^64 mod p) & 0xFFFFFFFF) for the LANES hashes h
 * (a group padded with copies of its first hash: duplicates do not change a minimum). The lane
 * loop is innermost and fixed-length, so it unrolls and the k loop vectorizes with each
 * minimum kept in a register across the group. */
static inline __attribute__((always_inline)) void permute_min(const uint32_t *h, const uint64_t *a,
                                                              const uint64_t *b, int64_t num_perm,
                                                              uint32_t *mins) {
    for (int64_t k = 0; k < num_perm; k++) {
        uint64_t ak = a[k], bk = b[k];
        uint32_t m = mins[k];
        for (int l = 0; l < LANES; l++) {
            uint64_t x = (uint64_t)h[l] * ak + bk; /* wraps mod 2^64, as numpy does in RPv2 */
            uint64_t r = (x & MERSENNE) + (x >> 61); /* x mod p up to one subtraction: 2^61 = 1 (mod p) */
            r = r >= MERSENNE ? r - MERSENNE : r;
            uint32_t v = (uint32_t)r;
            m = v < m ? v : m;
        }
        mins[k] = m;
    }
}

/* Signatures of n_docs documents; content[offsets[d]:offsets[d+1]] is document d.
 * Writes sig[n_docs][num_perm] and valid[n_docs] (0 when a document has < ngram words; its row
 * is all 0xFFFFFFFF). Returns 0, or -1 for a leading/trailing space, -2 for consecutive spaces
 * (*bad_doc names the document), -3 when memory runs out. */
MULTIVERSION
int ts_rpv2_signatures(const uint8_t *content, const int64_t *offsets, int64_t n_docs,
                       int64_t ngram, const uint64_t *a, const uint64_t *b, int64_t num_perm,
                       uint32_t *sig, uint8_t *valid, int64_t *bad_doc) {
    int64_t max_len = 0;
    for (int64_t d = 0; d < n_docs; d++)
        if (offsets[d + 1] - offsets[d] > max_len) max_len = offsets[d + 1] - offsets[d];
    int64_t *word_start = malloc(sizeof(int64_t) * (size_t)(max_len / 2 + 3));
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(max_len / 2 + 3)); /* shingles by block count */
    int64_t capacity = 4 * 64; /* per-lane scratch bytes; grows for long shingles */
    uint8_t *scratch = malloc((size_t)(LANES * capacity));
    int rc = 0;
    if (!word_start || !order || !scratch) {
        rc = -3;
        goto done;
    }
    for (int64_t d = 0; d < n_docs; d++) {
        int64_t s0 = offsets[d], s1 = offsets[d + 1];
        uint32_t *mins = sig + d * num_perm;
        for (int64_t k = 0; k < num_perm; k++) mins[k] = 0xFFFFFFFFu;
        /* words: word j is content[word_start[j] : word_start[j+1] - 1] */
        int64_t n_words = 0;
        if (s1 > s0) {
            if (content[s0] == SPACE || content[s1 - 1] == SPACE) {
                rc = -1;
                *bad_doc = d;
                goto done;
            }
            word_start[n_words++] = s0;
            for (int64_t i = s0 + 1; i < s1 - 1; i++) {
                if (content[i] == SPACE) {
                    if (content[i - 1] == SPACE) {
                        rc = -2;
                        *bad_doc = d;
                        goto done;
                    }
                    word_start[n_words++] = i + 1;
                }
            }
        }
        word_start[n_words] = s1 + 1;
        if (n_words < ngram) {
            valid[d] = 0;
            continue;
        }
        valid[d] = 1;
        int64_t n_sh = n_words - ngram + 1;
        /* group shingles by SHA-1 block count (1, 2, 3, >= 4) so that the lanes of one vector
         * compression mostly finish together; the minimum does not depend on the order */
        int64_t bucket[N_BUCKETS + 1] = {0};
        for (int64_t i = 0; i < n_sh; i++) {
            int64_t nb = n_blocks(word_start[i + ngram] - 1 - word_start[i]);
            bucket[(nb < N_BUCKETS ? nb : N_BUCKETS)]++;
        }
        for (int k = 1; k <= N_BUCKETS; k++) bucket[k] += bucket[k - 1];
        for (int64_t i = n_sh - 1; i >= 0; i--) {
            int64_t nb = n_blocks(word_start[i + ngram] - 1 - word_start[i]);
            order[--bucket[(nb < N_BUCKETS ? nb : N_BUCKETS)]] = i;
        }
        int64_t starts[LANES], lengths[LANES];
        uint32_t hashes[LANES];
        for (int64_t g = 0; g < n_sh; g += LANES) {
            int n_lanes = (int)(n_sh - g < LANES ? n_sh - g : LANES);
            int64_t longest = 0;
            for (int l = 0; l < n_lanes; l++) {
                int64_t i = order[g + l];
                starts[l] = word_start[i];
                lengths[l] = word_start[i + ngram] - 1 - word_start[i];
                if (lengths[l] > longest) longest = lengths[l];
            }
            if (n_blocks(longest) * 64 > capacity) {
                capacity = n_blocks(longest) * 64;
                uint8_t *grown = realloc(scratch, (size_t)(LANES * capacity));
                if (!grown) {
                    rc = -3;
                    goto done;
                }
                scratch = grown;
            }
            sha1_h0_lanes(content, starts, lengths, n_lanes, scratch, capacity, hashes);
            for (int l = n_lanes; l < LANES; l++) hashes[l] = hashes[0];
            permute_min(hashes, a, b, num_perm, mins);
        }
    }
done:
    free(word_start);
    free(order);
    free(scratch);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Fast signatures (signal group minhash_fast; NOT RPv2-compatible): the definition is in
 * textsieve/dedup/fast_minhash.py. Words are hashed with xxHash64 (seed 0), shingles with a
 * rolling polynomial over the word hashes and MurmurHash3's fmix64, permutations with fmix32.
 * ------------------------------------------------------------------------------------------- */

#define XP1 0x9E3779B185EBCA87ULL
#define XP2 0xC2B2AE3D27D4EB4FULL
#define XP3 0x165667B19E3779F9ULL
#define XP4 0x85EBCA77C2B2AE63ULL
#define XP5 0x27D4EB2F165667C5ULL
#define POLY 0x9E3779B97F4A7C15ULL

static inline __attribute__((always_inline)) uint64_t rotl64(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static inline __attribute__((always_inline)) uint64_t read64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (x86-64, aarch64) */
    return v;
}

static inline __attribute__((always_inline)) uint64_t read32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline __attribute__((always_inline)) uint64_t xxh_round(uint64_t acc, uint64_t lane) {
    return rotl64(acc + lane * XP2, 31) * XP1;
}

static inline __attribute__((always_inline)) uint64_t xxh_merge(uint64_t acc, uint64_t val) {
    return (acc ^ xxh_round(0, val)) * XP1 + XP4;
}

/* xxHash64 of p[0:n] with seed 0 (the reference algorithm). */
static uint64_t xxh64(const uint8_t *p, int64_t n) {
    const uint8_t *end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v1 = XP1 + XP2, v2 = XP2, v3 = 0, v4 = -XP1;
        while (p + 32 <= end) {
            v1 = xxh_round(v1, read64(p));
            v2 = xxh_round(v2, read64(p + 8));
            v3 = xxh_round(v3, read64(p + 16));
            v4 = xxh_round(v4, read64(p + 24));
            p += 32;
        }
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = XP5;
    }
    h += (uint64_t)n;
    while (p + 8 <= end) {
        h ^= xxh_round(0, read64(p));
        h = rotl64(h, 27) * XP1 + XP4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= read32(p) * XP1;
        h = rotl64(h, 23) * XP2 + XP3;
        p += 4;
    }
    while (p < end) {
        h ^= (uint64_t)(*p) * XP5;
        h = rotl64(h, 11) * XP1;
        p++;
    }
    h ^= h >> 33;
    h *= XP2;
    h ^= h >> 29;
    h *= XP3;
    h ^= h >> 32;
    return h;
}

static inline __attribute__((always_inline)) uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDULL;
    k ^= k >> 33;
    k *= 0xC4CEB9FE1A85EC53ULL;
    k ^= k >> 33;
    return k;
}

/* Fast signatures of n_docs documents (same layout as ts_rpv2_signatures; s: num_perm seeds).
 * Returns 0, or -3 when memory runs out. */
MULTIVERSION
int ts_fast_signatures(const uint8_t *content, const int64_t *offsets, int64_t n_docs, int64_t ngram,
                       const uint32_t *s, int64_t num_perm, uint32_t *sig, uint8_t *valid) {
    int64_t max_len = 0;
    for (int64_t d = 0; d < n_docs; d++)
        if (offsets[d + 1] - offsets[d] > max_len) max_len = offsets[d + 1] - offsets[d];
    uint64_t *wh = malloc(sizeof(uint64_t) * (size_t)(max_len / 2 + 2));
    uint32_t *hs = malloc(sizeof(uint32_t) * (size_t)(max_len / 2 + 2));
    if (!wh || !hs) {
        free(wh);
        free(hs);
        return -3;
    }
    uint64_t top = 1; /* POLY ** (ngram - 1) */
    for (int64_t j = 0; j < ngram - 1; j++) top *= POLY;
    for (int64_t d = 0; d < n_docs; d++) {
        int64_t n_words = 0, i = offsets[d], end = offsets[d + 1];
        while (i < end) {
            if (content[i] == SPACE) {
                i++;
                continue;
            }
            int64_t j = i;
            while (j < end && content[j] != SPACE) j++;
            wh[n_words++] = xxh64(content + i, j - i);
            i = j;
        }
        uint32_t *out = sig + d * num_perm;
        if (n_words < ngram) {
            valid[d] = 0;
            for (int64_t k = 0; k < num_perm; k++) out[k] = 0xFFFFFFFFu;
            continue;
        }
        uint64_t r = 0;
        for (int64_t j = 0; j < ngram; j++) r = r * POLY + wh[j];
        int64_t n_sh = n_words - ngram + 1;
        for (int64_t k = 0; k < n_sh; k++) {
            if (k) r = (r - wh[k - 1] * top) * POLY + wh[k + ngram - 1];
            hs[k] = (uint32_t)fmix64(r);
        }
        for (int64_t k = 0; k < num_perm; k++) { /* a vectorisable 32-bit min-reduction */
            uint32_t sk = s[k], m = 0xFFFFFFFFu;
            for (int64_t q = 0; q < n_sh; q++) {
                uint32_t x = hs[q] ^ sk;
                x ^= x >> 16;
                x *= 0x85EBCA6Bu;
                x ^= x >> 13;
                x *= 0xC2B2AE35u;
                x ^= x >> 16;
                m = x < m ? x : m;
            }
            out[k] = m;
        }
        valid[d] = 1;
    }
    free(wh);
    free(hs);
    return 0;
}
