/* annotate's two per-document scans in plain C: the raw-text scan (textsieve/text/raw_kernel.py)
 * and the word / n-gram statistics (textsieve/text/word_kernel.py).
 *
 * Why C: the numba twins (raw_scan_numba.py, word_stats_numba.py) compile for ~8 s on a fresh
 * install, before the first document, and a process that runs them carries numba and LLVM
 * (~125 MB). These functions compute the same values (tests compare them with the numba twins
 * and the pure-Python reference on the dev corpus) and are built by setup.py with the package.
 * No Python API is used: the library is loaded with ctypes, so building it needs only a C
 * compiler. Built with -ffp-contract=off: the entropy sum must round exactly like Python's.
 *
 * Definitions of every output column: raw_kernel.py (D_*, L_*) and word_kernel.py (W_*).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* unicode_props.F_* */
#define F_WORD 1
#define F_SPACE 2
#define F_ASCII_ALPHA 4
#define F_UPPER 8
#define F_LOWER_OR_TITLE 16
#define F_ASCII_PUNCT 32

/* raw_kernel.D_* and L_* */
enum { D_RAW_TOKENS, D_ALPHA_TOKENS, D_UPPER_TOKENS, D_STOP_TOKENS, D_SENTENCES, D_HASH, D_ELLIPSIS3,
       D_ELLIPSIS_CHAR, D_CURLY, D_LINES, D_LINES_ELLIPSIS, N_DOC_STATS };
enum { L_START, L_END, L_TERMINAL, L_BULLET, L_UPPER, L_NORM_WORDS, L_NORM_LEN, L_NORM_NUMERIC, L_JAVASCRIPT,
       N_LINE_STATS };
#define N_WORD_STATS 15
#define COMPACT_PAIRS (1 << 20)

#define FNV_OFFSET 0xCBF29CE484222325ULL
#define FNV_PRIME 0x100000001B3ULL

static const uint32_t BULLETS[] = {0x2022, 0x2023, 0x25B6, 0x25C0, 0x25E6, 0x25A0, 0x25A1, 0x25AA, 0x25AB, 0x2013};
static const uint8_t JAVASCRIPT[] = "javascript";

int ts_scan_layout(void) { return N_DOC_STATS * 100 + N_LINE_STATS * 10000 + N_WORD_STATS; }

/* Is the token cps[s:e] (FNV-1a hash h) one of language slot `lang`'s stop words? */
static int is_stop(const uint32_t *cps, int64_t s, int64_t e, uint64_t h, int64_t lang, const uint64_t *sw_hash,
                   const int64_t *sw_lang_off, const int64_t *sw_word_off, const uint32_t *sw_chars) {
    if (lang < 0) return 0;
    int64_t lo = sw_lang_off[lang], hi = sw_lang_off[lang + 1], end = hi;
    while (lo < hi) { /* leftmost position with hash >= h */
        int64_t mid = (lo + hi) >> 1;
        if (sw_hash[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < end && sw_hash[lo] == h; lo++) {
        int64_t ws = sw_word_off[lo], we = sw_word_off[lo + 1];
        if (we - ws == e - s && memcmp(sw_chars + ws, cps + s, (size_t)(e - s) * sizeof(uint32_t)) == 0) return 1;
    }
    return 0;
}

/* The stop words of every language slot a batch uses, as open-addressing tables of (index + 1)
 * into sw_hash, keyed by a token's hash: one probe or two per token where the binary search over
 * a language's sorted hashes took ~8 dependent steps (30% of the scan's time on the dev corpus).
 * Built per call (ctypes releases the GIL: calls may run at once). */
typedef struct {
    int32_t *slots;      /* every language's table, one after the other */
    int64_t *off, *mask; /* per language slot: where its table starts, its size - 1 */
} StopTables;

static inline uint64_t stop_slot(uint64_t h) { return (h ^ (h >> 29)) * 0x9E3779B97F4A7C15ULL >> 20; }

/* 0, or -1 without memory (then is_stop's binary search is used). */
static int build_stop_tables(StopTables *t, int64_t n_langs, const uint64_t *sw_hash, const int64_t *sw_lang_off) {
    t->off = malloc((size_t)(n_langs + 1) * sizeof(int64_t));
    t->mask = malloc((size_t)(n_langs > 0 ? n_langs : 1) * sizeof(int64_t));
    t->slots = NULL;
    if (!t->off || !t->mask) return -1;
    int64_t total = 0;
    for (int64_t l = 0; l < n_langs; l++) {
        int64_t size = 16;
        while (size < 4 * (sw_lang_off[l + 1] - sw_lang_off[l])) size <<= 1;
        t->off[l] = total;
        t->mask[l] = size - 1;
        total += size;
    }
    t->slots = calloc((size_t)(total > 0 ? total : 1), sizeof(int32_t));
    if (!t->slots) return -1;
    for (int64_t l = 0; l < n_langs; l++) {
        int32_t *tab = t->slots + t->off[l];
        for (int64_t k = sw_lang_off[l]; k < sw_lang_off[l + 1]; k++) {
            int64_t slot = (int64_t)(stop_slot(sw_hash[k]) & (uint64_t)t->mask[l]);
            while (tab[slot]) slot = (slot + 1) & t->mask[l];
            tab[slot] = (int32_t)(k + 1);
        }
    }
    return 0;
}

static void free_stop_tables(StopTables *t) {
    free(t->slots);
    free(t->off);
    free(t->mask);
}

/* is_stop through the tables: the same answer (every entry with the token's hash is compared). */
static inline int is_stop_hashed(const StopTables *t, const uint32_t *cps, int64_t s, int64_t e, uint64_t h,
                                 int64_t lang, const uint64_t *sw_hash, const int64_t *sw_word_off,
                                 const uint32_t *sw_chars) {
    if (lang < 0) return 0;
    const int32_t *tab = t->slots + t->off[lang];
    int64_t mask = t->mask[lang];
    for (int64_t slot = (int64_t)(stop_slot(h) & (uint64_t)mask); tab[slot]; slot = (slot + 1) & mask) {
        int64_t k = tab[slot] - 1;
        if (sw_hash[k] != h) continue;
        int64_t ws = sw_word_off[k], we = sw_word_off[k + 1];
        if (we - ws == e - s && memcmp(sw_chars + ws, cps + s, (size_t)(e - s) * sizeof(uint32_t)) == 0) return 1;
    }
    return 0;
}

static inline int is_stop_mark(uint32_t c) { return c == 46 || c == 33 || c == 63; }

/* raw_scan_numba.scan_raw: doc_stats [n_docs x N_DOC_STATS], line_stats [room x N_LINE_STATS] (room:
 * newlines + one per document), line_off [n_docs + 1], all int64 and zeroed by the caller.
 * Returns the number of lines written. */
int64_t ts_scan_raw(const uint32_t *cps, const int64_t *doc_off, int64_t n_docs, const int64_t *doc_lang,
                    const uint8_t *flags, const uint8_t *norm_len, const uint8_t *norm_numeric,
                    const uint8_t *norm_ascii, const uint64_t *sw_hash, const int64_t *sw_lang_off,
                    const int64_t *sw_word_off, const uint32_t *sw_chars, int64_t *doc_stats, int64_t *line_stats,
                    int64_t *line_off) {
    int64_t nl = 0, n_langs = 0;
    for (int64_t d = 0; d < n_docs; d++)
        if (doc_lang[d] + 1 > n_langs) n_langs = doc_lang[d] + 1;
    StopTables stops;
    int hashed = build_stop_tables(&stops, n_langs, sw_hash, sw_lang_off) == 0;
    for (int64_t d = 0; d < n_docs; d++) {
        const int64_t s0 = doc_off[d], e0 = doc_off[d + 1], lang = doc_lang[d];
        int64_t *ds = doc_stats + d * N_DOC_STATS;
        /* raw tokens: \w+ | [^\w\s]+ (wordpunct.tokenize_into), counted as they are found */
        int64_t n_tok = 0, n_alpha = 0, n_upper = 0, n_stop = 0;
        for (int64_t i = s0; i < e0;) {
            uint8_t f = flags[cps[i]];
            if (f & F_SPACE) { i++; continue; }
            int is_word = (f & F_WORD) != 0;
            uint8_t acc = f;
            uint64_t h = (FNV_OFFSET ^ (uint64_t)cps[i]) * FNV_PRIME;
            int64_t j = i + 1;
            for (; j < e0; j++) {
                uint8_t g = flags[cps[j]];
                if (is_word ? !(g & F_WORD) : ((g & F_WORD) || (g & F_SPACE))) break;
                acc |= g;
                h = (h ^ (uint64_t)cps[j]) * FNV_PRIME;
            }
            n_tok++;
            if (acc & F_ASCII_ALPHA) n_alpha++;
            if ((acc & F_UPPER) && !(acc & F_LOWER_OR_TITLE)) n_upper++; /* str.isupper() */
            if (hashed ? is_stop_hashed(&stops, cps, i, j, h, lang, sw_hash, sw_word_off, sw_chars)
                       : is_stop(cps, i, j, h, lang, sw_hash, sw_lang_off, sw_word_off, sw_chars))
                n_stop++;
            i = j;
        }
        ds[D_RAW_TOKENS] = n_tok;
        ds[D_ALPHA_TOKENS] = n_alpha;
        ds[D_UPPER_TOKENS] = n_upper;
        ds[D_STOP_TOKENS] = n_stop;
        /* sentences: non-overlapping matches of \b[^.!?]+[.!?]* */
        int64_t n_sent = 0;
        for (int64_t i = s0; i < e0;) {
            uint32_t c = cps[i];
            if (is_stop_mark(c)) { i++; continue; }
            int prev_word = i > s0 && (flags[cps[i - 1]] & F_WORD) != 0;
            int cur_word = (flags[c] & F_WORD) != 0;
            if (prev_word == cur_word) { i++; continue; } /* no word boundary here */
            n_sent++;
            while (i < e0 && !is_stop_mark(cps[i])) i++;
            while (i < e0 && is_stop_mark(cps[i])) i++;
        }
        ds[D_SENTENCES] = n_sent;
        /* symbol counts */
        int64_t n_hash = 0, n_ell3 = 0, n_ellc = 0, n_curly = 0, dots = 0;
        for (int64_t i = s0; i < e0; i++) {
            uint32_t c = cps[i];
            if (c == 46) { dots++; continue; }
            if (dots) { n_ell3 += dots / 3; dots = 0; }
            if (c == 35) n_hash++;
            else if (c == 0x2026) n_ellc++;
            else if (c == 123 || c == 125) n_curly++;
        }
        n_ell3 += dots / 3;
        ds[D_HASH] = n_hash;
        ds[D_ELLIPSIS3] = n_ell3;
        ds[D_ELLIPSIS_CHAR] = n_ellc;
        ds[D_CURLY] = n_curly;
        /* lines: [^\n]*\n | [^\n]+$ */
        line_off[d] = nl;
        int64_t n_ell_lines = 0;
        for (int64_t ls = s0; ls < e0;) {
            int64_t le = ls;
            while (le < e0 && cps[le] != 10) le++;
            if (le < e0) le++; /* include the newline */
            int64_t *row = line_stats + nl * N_LINE_STATS;
            row[L_START] = ls - s0;
            row[L_END] = le - s0;
            int64_t r = le - 1;
            while (r >= ls && (flags[cps[r]] & F_SPACE)) r--;
            if (r >= ls) {
                uint32_t c = cps[r];
                if (c == 46 || c == 33 || c == 63 || c == 0x201D) row[L_TERMINAL] = 1;
                if (c == 0x2026 || (r - 2 >= ls && c == 46 && cps[r - 1] == 46 && cps[r - 2] == 46)) n_ell_lines++;
            }
            int64_t q = ls;
            while (q < le && (flags[cps[q]] & F_SPACE)) q++;
            if (q < le) {
                for (size_t b = 0; b < sizeof BULLETS / sizeof BULLETS[0]; b++)
                    if (cps[q] == BULLETS[b]) { row[L_BULLET] = 1; break; }
            }
            int64_t n_up = 0, words = 0, nlen = 0, nnum = 0, njs = 0, js_pos = 0;
            int in_word = 0;
            for (int64_t k = ls; k < le; k++) {
                uint32_t c = cps[k];
                uint8_t g = flags[c];
                if (g & F_UPPER) n_up++;
                if (g & F_ASCII_PUNCT) continue; /* deleted by normalization, transparent inside words */
                if (g & F_SPACE) {
                    if (in_word && js_pos == 10) njs++;
                    in_word = 0;
                    continue;
                }
                if (!in_word) { in_word = 1; words++; js_pos = 0; }
                nlen += norm_len[c];
                nnum += norm_numeric[c];
                if (js_pos >= 0) {
                    if (js_pos < 10 && norm_len[c] == 1 && norm_ascii[c] == JAVASCRIPT[js_pos]) js_pos++;
                    else js_pos = -1;
                }
            }
            if (in_word && js_pos == 10) njs++;
            if (words > 1) nlen += words - 1;
            row[L_UPPER] = n_up;
            row[L_NORM_WORDS] = words;
            row[L_NORM_LEN] = nlen;
            row[L_NORM_NUMERIC] = nnum;
            row[L_JAVASCRIPT] = njs;
            nl++;
            ls = le;
        }
        ds[D_LINES] = nl - line_off[d];
        ds[D_LINES_ELLIPSIS] = n_ell_lines;
    }
    line_off[n_docs] = nl;
    free_stop_tables(&stops);
    return nl;
}

static int64_t table_size(int64_t n) {
    int64_t size = 16;
    while (size < 2 * n) size <<= 1;
    return size;
}

static inline int64_t pair_slot(uint64_t key, int64_t mask) {
    return (int64_t)(((key * 0x9E3779B97F4A7C15ULL) >> 20) & (uint64_t)mask);
}

/* Dense ids, in first-occurrence order, of the pairs (left[i], right[i]), i < n, into out; returns
 * their number, or -1 when memory ran out. Long inputs keep only ids in the table and compare a
 * pair at its id's first position (4 bytes a slot instead of 12), as word_stats_numba does.
 * Here left[i] is the id of the (g-1)-gram at word i and right[i] the word after it, so the pair
 * is the g-gram at i; left_count[id] says how often each (g-1)-gram occurs. When the one at i
 * occurs once, the g-gram occurs once too and takes the next id without entering the table (the
 * id it would have been given: ids go in first-occurrence order either way). On web text most
 * 3-grams are already unique, so the passes for the longer n-grams hash only the few repeated
 * positions: 2.0x faster on the dev corpus, the same ids. (Testing the (g-1)-gram at i + 1 as
 * well skipped more positions but cost as much as it saved.) */
static int64_t pair_ids(const int32_t *left, const int32_t *right, int64_t n, const int32_t *left_count,
                        int32_t *out) {
    int64_t n_repeated = 0;
    for (int64_t i = 0; i < n; i++) n_repeated += left_count[left[i]] > 1;
    int64_t size = table_size(n_repeated), mask = size - 1, n_ids = 0;
    int32_t *vals = malloc((size_t)size * sizeof(int32_t));
    int compact = n > COMPACT_PAIRS;
    uint64_t *keys = compact ? NULL : malloc((size_t)size * sizeof(uint64_t));
    int32_t *rep = compact ? malloc((size_t)n * sizeof(int32_t)) : NULL;
    if (!vals || (compact ? !rep : !keys)) { free(vals); free(keys); free(rep); return -1; }
    memset(vals, 0xFF, (size_t)size * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        if (left_count[left[i]] <= 1) {
            out[i] = (int32_t)n_ids++;
            continue;
        }
        uint64_t key = ((uint64_t)(uint32_t)left[i] << 32) | (uint64_t)(uint32_t)right[i];
        for (int64_t slot = pair_slot(key, mask);; slot = (slot + 1) & mask) {
            int32_t v = vals[slot];
            if (v < 0) {
                vals[slot] = (int32_t)n_ids;
                if (compact) rep[n_ids] = (int32_t)i;
                else keys[slot] = key;
                out[i] = (int32_t)n_ids++;
                break;
            }
            if (compact ? (left[rep[v]] == left[i] && right[rep[v]] == right[i]) : keys[slot] == key) {
                out[i] = v;
                break;
            }
        }
    }
    free(vals); free(keys); free(rep);
    return n_ids;
}

/* One document's statistics (word_stats_numba.word_stats, one row); 0, or -1 out of memory. */
static int doc_word_stats(const uint8_t *buf, int64_t s0, int64_t e0, int64_t *st, double *entropy) {
    int64_t n = 1;
    for (int64_t k = s0; k < e0; k++) n += buf[k] == 32;
    int64_t size = table_size(n), mask = size - 1, n_ids = 0;
    int32_t *slots = malloc((size_t)size * sizeof(int32_t));
    int32_t *ids = malloc((size_t)n * sizeof(int32_t));
    int32_t *wlen = malloc((size_t)n * sizeof(int32_t));
    int64_t *rep_start = malloc((size_t)n * sizeof(int64_t));
    int64_t *rep_end = malloc((size_t)n * sizeof(int64_t));
    int64_t *counts = NULL;
    int32_t *cur = NULL, *next = NULL, *gcount = NULL, *first = NULL;
    int rc = -1;
    if (!slots || !ids || !wlen || !rep_start || !rep_end) goto done;
    memset(slots, 0xFF, (size_t)size * sizeof(int32_t));
    int64_t s = s0;
    for (int64_t w = 0; w < n; w++) { /* each word hashed as it is found, compared with its id's first */
        int64_t e = s;
        int32_t chars = 0;
        uint64_t h = FNV_OFFSET;
        while (e < e0 && buf[e] != 32) {
            uint8_t b = buf[e];
            chars += (b & 0xC0) != 0x80;
            h = (h ^ (uint64_t)b) * FNV_PRIME;
            e++;
        }
        wlen[w] = chars;
        for (int64_t slot = (int64_t)(h & (uint64_t)mask);; slot = (slot + 1) & mask) {
            int32_t cand = slots[slot];
            if (cand < 0) {
                slots[slot] = (int32_t)n_ids;
                ids[w] = (int32_t)n_ids;
                rep_start[n_ids] = s;
                rep_end[n_ids] = e;
                n_ids++;
                break;
            }
            if (rep_end[cand] - rep_start[cand] == e - s && memcmp(buf + rep_start[cand], buf + s, (size_t)(e - s)) == 0) {
                ids[w] = cand;
                break;
            }
        }
        s = e + 1;
    }
    free(slots); slots = NULL;
    free(rep_start); rep_start = NULL;
    free(rep_end); rep_end = NULL;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) total += wlen[i];
    counts = calloc((size_t)n_ids, sizeof(int64_t));
    if (!counts) goto done;
    for (int64_t i = 0; i < n; i++) counts[ids[i]]++;
    double ent = 0.0; /* Python: sum(-c / N * log(c / N) for c in Counter(W).values()), in id order */
    for (int64_t u = 0; u < n_ids; u++) {
        double c = (double)counts[u];
        ent += (-c / (double)n) * log(c / (double)n);
    }
    st[0] = n;
    st[1] = total;
    st[2] = n_ids;
    *entropy = ent;
    gcount = malloc((size_t)(n_ids > 0 ? n_ids : 1) * sizeof(int32_t)); /* the words' counts, for the 2-grams */
    if (!gcount) goto done;
    for (int64_t u = 0; u < n_ids; u++) gcount[u] = (int32_t)counts[u];
    free(counts); counts = NULL;
    cur = ids;
    for (int64_t g_size = 2; g_size <= 10; g_size++) {
        int64_t m = n - g_size + 1;
        if (m <= 0) break;
        next = malloc((size_t)m * sizeof(int32_t));
        if (!next) goto done;
        int64_t n_g = pair_ids(cur, ids + g_size - 1, m, gcount, next); /* gcount: the (g-1)-grams' */
        if (n_g < 0) goto done;
        if (cur != ids) free(cur);
        cur = next;
        next = NULL;
        free(gcount);
        gcount = calloc((size_t)n_g, sizeof(int32_t));
        first = malloc((size_t)n_g * sizeof(int32_t));
        if (!gcount || !first) goto done;
        memset(first, 0xFF, (size_t)n_g * sizeof(int32_t));
        for (int64_t i = 0; i < m; i++) {
            int32_t g = cur[i];
            gcount[g]++;
            if (first[g] < 0) first[g] = (int32_t)i;
        }
        if (g_size <= 4) {
            int64_t best = 0;
            for (int64_t g = 1; g < n_g; g++)
                if (gcount[g] > gcount[best]) best = g; /* strict '>' keeps the earliest n-gram on ties */
            if (gcount[best] > 1) {
                int64_t p = first[best], chars = 0;
                for (int64_t i = p; i < p + g_size; i++) chars += wlen[i];
                st[3 + g_size - 2] = chars;
                st[6 + g_size - 2] = gcount[best];
            }
        } else {
            int64_t covered = 0, upto = 0; /* words before `upto` are counted already */
            for (int64_t i = 0; i < m; i++) {
                if (gcount[cur[i]] > 1) {
                    int64_t lo = i > upto ? i : upto, hi = i + g_size;
                    for (int64_t k = lo; k < hi; k++) covered += wlen[k];
                    if (hi > lo) upto = hi;
                }
            }
            st[9 + g_size - 5] = covered;
        }
        free(first); first = NULL; /* gcount stays: the next pass reads it */
    }
    rc = 0;
done:
    free(slots); free(rep_start); free(rep_end); free(counts);
    if (cur != ids) free(cur);
    free(next); free(gcount); free(first); free(ids); free(wlen);
    return rc;
}

/* word_stats_numba.word_stats: stats [n_docs x N_WORD_STATS] int64 and entropy [n_docs], zeroed by
 * the caller; `buf` holds every document's normalized UTF-8, doc_off the n_docs + 1 byte offsets.
 * Returns 0, or -1 when memory ran out. */
int ts_word_stats(const uint8_t *buf, const int64_t *doc_off, int64_t n_docs, int64_t *stats, double *entropy) {
    for (int64_t d = 0; d < n_docs; d++) {
        if (doc_off[d + 1] == doc_off[d]) continue;
        if (doc_word_stats(buf, doc_off[d], doc_off[d + 1], stats + d * N_WORD_STATS, entropy + d) != 0) return -1;
    }
    return 0;
}

/* per ASCII byte: the byte it becomes (A-Z lowered), 0 to delete (`string.punctuation`), 1 for
 * whitespace (space, \t-\r, \x1c-\x1f); bytes 0 and 1 themselves are kept (told apart below).
 * A constant table: ctypes releases the GIL, so threads may call in at once. */
static const uint8_t ASCII_MAP[128] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 1, 1, 1, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 1, 1, 1, 1,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 0, 0, 0, 0, 0, 0,
    0, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 0, 0, 0, 0, 0,
    0, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 0, 0, 0, 0, 127,
};

static inline int unicode_space(uint32_t c) {
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The byte-level part of normalize.normalize (RPv2 §3.2) over UTF-8 documents, in one pass:
 * `string.punctuation` deleted, A-Z lowered, every run of `str.isspace()` characters (ASCII
 * \t-\r, \x1c-\x1f and space; U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000) collapsed to one space and trimmed at both ends: `" ".join(x.split())`. Other
 * sequences are copied whole. For a pure-ASCII document that is the whole normalization (lower()
 * and NFD change nothing else there); the caller applies lower() and NFD to the others. `out` has
 * room for every input byte (the result is never longer); out_off gets n_docs + 1 offsets. */
void ts_normalize_collapse(const uint8_t *src, const int64_t *off, int64_t n_docs, uint8_t *out, int64_t *out_off) {
    int64_t o = 0;
    out_off[0] = 0;
    for (int64_t d = 0; d < n_docs; d++) {
        const uint8_t *s = src + off[d];
        int64_t n = off[d + 1] - off[d];
        int gap = 0; /* whitespace seen since the last kept character */
        int64_t start = o;
        int64_t i = 0;
        while (i < n) {
            uint8_t c = s[i];
            if (c < 0x80) { /* branch-free: a web text's spaces fall at random, and mispredicted */
                i++;
                uint8_t m = ASCII_MAP[c];
                int keep = (m > 1) | (c < 2);
                int lead = keep & gap & (o > start); /* a space before this character */
                out[o] = ' ';
                o += lead;
                out[o] = c < 2 ? c : m;
                o += keep;
                gap = ((m == 1) & (c >= 2)) | (gap & !keep);
                continue;
            }
            /* the callers pass Python's UTF-8 (surrogatepass: a lone surrogate is ED A0-BF xx, no
             * space); anything malformed (a cut or broken sequence, an overlong form) is copied
             * one byte at a time and is never taken for whitespace */
            int64_t len = c >= 0xF8 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (i + len > n) len = 1;
            for (int64_t k = 1; k < len; k++)
                if ((s[i + k] & 0xC0) != 0x80) len = 1;
            uint32_t cp = 0;
            if (len == 2) cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
            else if (len == 3) cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800)) cp = 0; /* overlong: not a space */
            if (unicode_space(cp)) {
                gap = 1;
                i += len;
                continue;
            }
            if (gap && o > start) out[o++] = ' ';
            gap = 0;
            memcpy(out + o, s + i, (size_t)len);
            o += len;
            i += len;
        }
        out_off[d + 1] = o;
    }
}

/* views.bad_word_hits (LDNOOBW, RPv2 §4.4) over normalized contents: for every word start i and
 * every entry size n in `sizes`, whether words i..i+n-1 (bytes from word i's first to word
 * i+n-1's last, single spaces between: the contents are normalized) equal an entry. Entries are
 * an open-addressing table of `mask + 1` slots (slot_entry: entry index + 1, 0 = empty) keyed by
 * FNV-1a 64 of their UTF-8 (entry_hash), bytes in entry_bytes[entry_off[e]:entry_off[e + 1]].
 * first_slot (first_mask + 1 slots: index + 1 into first_hash, 0 = empty) holds the FNV-1a of every
 * entry's first word: a word that starts none is passed after hashing it once (a filter only: a
 * hash collision costs a look, never a count). Counts go to out[docs[k]] for the n_docs documents
 * listed in `docs`. */
static int has_first(uint64_t h, const int64_t *first_slot, int64_t first_mask, const uint64_t *first_hash) {
    for (int64_t slot = (int64_t)(h & (uint64_t)first_mask);; slot = (slot + 1) & first_mask) {
        int64_t f = first_slot[slot];
        if (f == 0) return 0;
        if (first_hash[f - 1] == h) return 1;
    }
}

void ts_bad_word_hits(const uint8_t *buf, const int64_t *doc_off, const int64_t *docs, int64_t n_docs,
                      const int64_t *slot_entry, int64_t mask, const uint64_t *entry_hash, const uint8_t *entry_bytes,
                      const int64_t *entry_off, const int64_t *sizes, int64_t n_sizes, const int64_t *first_slot,
                      int64_t first_mask, const uint64_t *first_hash, int64_t *out) {
    int64_t max_n = n_sizes ? sizes[n_sizes - 1] : 0;
    for (int64_t k = 0; k < n_docs; k++) {
        int64_t d = docs[k];
        int64_t s = doc_off[d], e = doc_off[d + 1];
        int64_t hits = 0;
        int64_t i = max_n > 0 ? s : e; /* no entry sizes: nothing to count */
        while (i < e) { /* i: the start of a word */
            uint64_t h = FNV_OFFSET;
            int64_t j = i, next_start = -1, si = 0;
            for (int64_t n = 1; n <= max_n && j <= e; n++) {
                if (n > 1) { /* the space that joins the next word */
                    if (j >= e) break;
                    h = (h ^ (uint64_t)' ') * FNV_PRIME;
                    j++;
                }
                while (j < e && buf[j] != ' ') h = (h ^ (uint64_t)buf[j++]) * FNV_PRIME;
                if (n == 1) {
                    next_start = j + 1;
                    if (!has_first(h, first_slot, first_mask, first_hash)) break;
                }
                while (si < n_sizes && sizes[si] < n) si++;
                if (si < n_sizes && sizes[si] == n) {
                    int64_t len = j - i;
                    for (int64_t slot = (int64_t)(h & (uint64_t)mask);; slot = (slot + 1) & mask) {
                        int64_t ent = slot_entry[slot];
                        if (ent == 0) break;
                        ent--;
                        if (entry_hash[ent] == h && entry_off[ent + 1] - entry_off[ent] == len &&
                            memcmp(entry_bytes + entry_off[ent], buf + i, (size_t)len) == 0) {
                            hits++;
                            break;
                        }
                    }
                }
            }
            i = next_start;
        }
        out[d] = hits;
    }
}
