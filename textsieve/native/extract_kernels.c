/* The textsieve extraction engine's kernels (textsieve/extraction/). No Python API: loaded with ctypes.
 *
 * ts_boilerplate_edits: sieve.mark_boilerplate's edits (boilerplate words in class/id values), one pass.
 * ts_parse_blocks: blocks.parse_blocks over resiliparse's minimal-HTML output.
 * ts_block_features: blocks.features' matrix.
 * ts_tree_raw: gradient-boosted decision trees for many rows at once (the block classifier, blocks.py).
 *
 * Every tree is a run of nodes in one array (tree t starts at offsets[t]); a leaf's children are
 * itself, so walking `depth` steps from a tree's root always ends on its leaf. A row goes left when
 * its feature, rounded to float32 as scikit-learn rounds its inputs, is <= the node's float64
 * threshold. The raw score is accumulated tree by tree in scikit-learn's order
 * (raw = init; raw += rate * leaf), so the NumPy fallback and scikit-learn give the same doubles. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ts_tree_raw(const double *x, int64_t n_rows, int64_t n_cols, const int64_t *offsets, int64_t n_trees,
                 int64_t depth, const int64_t *feature, const double *cut, const int64_t *left,
                 const int64_t *right, const double *value, double init, double rate, double *out) {
    for (int64_t r = 0; r < n_rows; r++) {
        const double *row = x + r * n_cols;
        double raw = init;
        for (int64_t t = 0; t < n_trees; t++) {
            int64_t node = offsets[t];
            for (int64_t d = 0; d < depth; d++) {
                double v = (double)(float)row[feature[node]];
                node = v <= cut[node] ? left[node] : right[node];
            }
            raw += rate * value[node];
        }
        out[r] = raw;
    }
}

/* ---------------------------------------------------------------------------------------------
 * ts_boilerplate_edits: the edits of sieve.mark_boilerplate in one pass over the page's UTF-8
 * bytes, ASCII-lowercased on the fly (bytes.lower()). Every offset where one of the words starts
 * (at one offset the first matching word counts; the scan goes on at the next byte, as
 * ts_find_words) is checked as sieve._check_hit checks it; an accepted hit records the value's
 * begin and end offsets and whether its attribute is `class` (1) or `id` (0). Edits come out
 * with non-decreasing begins. At most max_out are written; the return value is the number found
 * (more than max_out: call again with room), -1 for words it cannot take.
 * ------------------------------------------------------------------------------------------- */

static inline uint8_t lower_ascii(uint8_t b) { return (b >= 'A' && b <= 'Z') ? (uint8_t)(b + 32) : b; }

static inline int ascii_space(uint8_t b) { return b == ' ' || (b >= '\t' && b <= '\r'); }

/* whether lower(buf[i .. i + len)) == word (word lowercase) */
static inline int lower_equals(const uint8_t *buf, int64_t i, int64_t n, const char *word, int64_t len) {
    if (i < 0 || i + len > n) return 0;
    for (int64_t k = 0; k < len; k++)
        if (lower_ascii(buf[i + k]) != (uint8_t)word[k]) return 0;
    return 1;
}

/* _ATTR_HEAD = rb"\s(class|id)\s*=\s*$" searched in low[max(0, q - 16) : q]: 1 for class, 0 for
 * id, -1 for no match. A match must end at q, so reading backwards is forced: whitespace, "=",
 * whitespace, the name, one whitespace byte, all inside the window. */
static int attr_head(const uint8_t *buf, int64_t q) {
    int64_t w0 = q - 16 > 0 ? q - 16 : 0, j = q;
    while (j > w0 && ascii_space(buf[j - 1])) j--;
    if (j <= w0 || buf[j - 1] != '=') return -1;
    j--;
    while (j > w0 && ascii_space(buf[j - 1])) j--;
    if (j - 5 - 1 >= w0 && lower_equals(buf, j - 5, j, "class", 5) && ascii_space(buf[j - 6])) return 1;
    if (j - 2 - 1 >= w0 && lower_equals(buf, j - 2, j, "id", 2) && ascii_space(buf[j - 3])) return 0;
    return -1;
}

typedef uint8_t v32b __attribute__((vector_size(32)));
typedef uint8_t v32b_u __attribute__((vector_size(32), aligned(1), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define MULTIVERSION
#endif

/* The four-letter prefixes of up to 8 words, each letter in all 32 lanes (0 for an absent word:
 * no byte | 0x20 is 0). */
typedef struct {
    v32b letter[8][4];
    const uint8_t *pre;
    int n_pre;
} Prefixes;

static inline __attribute__((always_inline)) void prefixes_init(Prefixes *p, const uint8_t *pre, int n_pre) {
    for (int w = 0; w < 8; w++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) p->letter[w][k][l] = w < n_pre ? pre[4 * w + k] : 0;
    p->pre = pre;
    p->n_pre = n_pre;
}

/* The first offset in [i, n - 3) where the four bytes, ASCII-lowercased, equal one of the
 * prefixes (lowercase letters: b | 0x20 == c holds exactly for the letter c in either case),
 * 32 offsets per step; n - 3 (or i) when there is none. */
static inline __attribute__((always_inline)) int64_t next_prefix(const Prefixes *p, const uint8_t *buf, int64_t i,
                                                                 int64_t n) {
    v32b case_bit;
    for (int l = 0; l < 32; l++) case_bit[l] = 0x20;
    for (; i + 32 + 3 <= n; i += 32) {
        /* unaligned vector loads (a memcpy into a vector array compiled to two 16-byte stores and
         * a 32-byte reload: a store-forwarding stall that cost 2/3 of the time) */
        v32b x0 = *(const v32b_u *)(buf + i) | case_bit, x1 = *(const v32b_u *)(buf + i + 1) | case_bit;
        v32b x2 = *(const v32b_u *)(buf + i + 2) | case_bit, x3 = *(const v32b_u *)(buf + i + 3) | case_bit;
        v32b any = {0};
        for (int w = 0; w < 8; w++)
            any |= (x0 == p->letter[w][0]) & (x1 == p->letter[w][1]) & (x2 == p->letter[w][2]) & (x3 == p->letter[w][3]);
        uint64_t lanes[4];
        memcpy(lanes, &any, sizeof(lanes));
        for (int k = 0; k < 4; k++)
            if (lanes[k]) return i + 8 * k + __builtin_ctzll(lanes[k]) / 8;
    }
    for (; i + 3 < n; i++)
        for (int w = 0; w < p->n_pre; w++)
            if ((buf[i] | 0x20) == p->pre[4 * w] && (buf[i + 1] | 0x20) == p->pre[4 * w + 1] &&
                (buf[i + 2] | 0x20) == p->pre[4 * w + 2] && (buf[i + 3] | 0x20) == p->pre[4 * w + 3])
                return i;
    return n - 3 > i ? n - 3 : i;
}

static const char *const CONTENT_WORDS[] = {"content", "article", "entry", "main", "body", "text", "story", "post"};
static const char *const KEEP_TAGS[] = {"article", "main", "body", "html"};

MULTIVERSION
int64_t ts_boilerplate_edits(const uint8_t *buf, int64_t n, const uint8_t *words, const int64_t *word_off,
                             int64_t n_words, int64_t max_value_bytes, int64_t *out_begin, int64_t *out_stop,
                             uint8_t *out_class, int64_t max_out) {
    if (n_words > 64) return -1;
    /* bit w of first[x] (second[x]): word w's first (second) byte is x, so one lookup of each
     * of a position's two bytes rules out nearly every position */
    uint64_t first[256] = {0}, second[256] = {0};
    for (int64_t w = 0; w < n_words; w++) {
        if (word_off[w + 1] - word_off[w] < 2) return -1;
        first[words[word_off[w]]] |= (uint64_t)1 << w;
        second[words[word_off[w] + 1]] |= (uint64_t)1 << w;
    }
    uint8_t lower[256];
    for (int c = 0; c < 256; c++) lower[c] = lower_ascii((uint8_t)c);
    /* with every word at least 4 lowercase letters long (at most 8 words), ts_next_prefix skips
     * 32 offsets per step to the next one where a word's first four letters stand */
    uint8_t pre[8 * 4];
    int prefixed = n_words <= 8;
    for (int64_t w = 0; w < n_words && prefixed; w++)
        for (int k = 0; k < 4 && prefixed; k++) {
            prefixed = word_off[w + 1] - word_off[w] >= 4 && words[word_off[w] + k] >= 'a' && words[word_off[w] + k] <= 'z';
            pre[4 * w + k] = words[word_off[w] + k];
        }
    Prefixes prefixes;
    if (prefixed) prefixes_init(&prefixes, pre, (int)n_words);
    int64_t found = 0, last_begin = -1;
    for (int64_t i = 0; i + 1 < n; i++) {
        if (prefixed) {
            i = next_prefix(&prefixes, buf, i, n);
            if (i + 3 >= n) break;
        }
        uint64_t cand = first[lower[buf[i]]] & second[lower[buf[i + 1]]];
        if (__builtin_expect(cand == 0, 1)) continue;
        int hit = 0;
        while (cand) {
            int w = __builtin_ctzll(cand);
            cand &= cand - 1;
            if (lower_equals(buf, i, n, (const char *)words + word_off[w], word_off[w + 1] - word_off[w])) {
                hit = 1;
                break;
            }
        }
        if (!hit) continue;
        /* q: the last quote before i, at most max_value_bytes back */
        int64_t lo = i - max_value_bytes > 0 ? i - max_value_bytes : 0, q = -1;
        for (int64_t k = i - 1; k >= lo; k--)
            if (buf[k] == '"' || buf[k] == '\'') {
                q = k;
                break;
            }
        if (q < 0 || q + 1 == last_begin) continue;
        int bad = 0;
        for (int64_t k = q; k < i && !bad; k++) bad = buf[k] == '<' || buf[k] == '>';
        if (bad) continue;
        int is_class = attr_head(buf, q);
        if (is_class < 0) continue;
        int64_t stop = -1;
        for (int64_t k = i; k < n; k++)
            if (buf[k] == buf[q]) {
                stop = k;
                break;
            }
        int64_t lt = -1;
        for (int64_t k = q - 1; k >= 0; k--)
            if (buf[k] == '<') {
                lt = k;
                break;
            }
        if (stop < 0 || lt < 0) continue;
        for (int64_t k = lt; k < q && !bad; k++) bad = buf[k] == '>';
        if (bad) continue;
        /* _TAG_NAME = rb"<([a-z][a-z0-9]*)" on the lowercased page, not one of KEEP_TAGS */
        int64_t t0 = lt + 1, t1 = t0;
        if (t1 >= n || !(lower_ascii(buf[t1]) >= 'a' && lower_ascii(buf[t1]) <= 'z')) continue;
        while (t1 < n && ((lower_ascii(buf[t1]) >= 'a' && lower_ascii(buf[t1]) <= 'z') || (buf[t1] >= '0' && buf[t1] <= '9')))
            t1++;
        for (int k = 0; k < 4 && !bad; k++)
            bad = (int64_t)strlen(KEEP_TAGS[k]) == t1 - t0 && lower_equals(buf, t0, t1, KEEP_TAGS[k], t1 - t0);
        /* _CONTENT_WORDS searched in the value, case-insensitively */
        for (int64_t k = q + 1; k < stop && !bad; k++)
            for (int c = 0; c < 8 && !bad; c++)
                bad = lower_equals(buf, k, stop, CONTENT_WORDS[c], (int64_t)strlen(CONTENT_WORDS[c]));
        if (bad) continue;
        if (found < max_out) {
            out_begin[found] = q + 1;
            out_stop[found] = stop;
            out_class[found] = (uint8_t)is_class;
        }
        found++;
        last_begin = q + 1;
    }
    return found;
}

/* ---------------------------------------------------------------------------------------------
 * ts_parse_blocks: blocks.parse_blocks over resiliparse's minimal-HTML output (UTF-8, lone
 * surrogates as their 3-byte forms). Per line ('\n'): strip Python's whitespace (str.isspace), replace
 * each tag (<[^>]*>) by a space, decode the entities resiliparse writes (&amp; &quot; &lt; &gt;),
 * split on whitespace and join with single spaces; the linked characters are the same text's
 * length for the content of every <a\b[^>]*>(.*?)</a> (regex `findall` semantics); the kind is
 * the line's opening <h1-6>, <p> or <pre>. A line without words makes no block.
 *
 * Writes the blocks' texts one after another to `text` (UTF-8; at most n bytes) and per block
 * four int64s to `info`: the end of its text in code points (from the first block's start),
 * its kind (0 none, 1 p, 2 h, 3 pre), its linked code points and its words. Returns the number
 * of blocks, or -1 when a line holds what only Python decodes exactly (another entity, a
 * non-ASCII character right after "<a" or a block tag's name): the caller parses the page in
 * Python then. At most max_blocks are written (-2 when there are more).
 * ------------------------------------------------------------------------------------------- */

/* the code point at s[i] (valid UTF-8, surrogates allowed) and its byte length */
static inline uint32_t utf8_at(const uint8_t *s, int64_t i, int *len) {
    uint8_t b = s[i];
    if (b < 0x80) { *len = 1; return b; }
    if (b < 0xE0) { *len = 2; return ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F); }
    if (b < 0xF0) { *len = 3; return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F); }
    *len = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) | ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/* Python's str.isspace (Unicode 14; str.split() and str.strip() split and strip on these) */
static inline int py_space(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* \b after an ASCII word character at s[i] (the pattern's end): 1 at the string's end or before
 * an ASCII non-word byte, 0 before an ASCII word byte, -1 before a non-ASCII character (whether it
 * is a Unicode word character is Python's to say) */
static inline int word_end(const uint8_t *s, int64_t i, int64_t end) {
    if (i >= end) return 1;
    uint8_t b = s[i];
    if (b >= 0x80) return -1;
    return !((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_');
}

static inline int starts_with(const uint8_t *s, int64_t i, int64_t end, const char *lit) {
    int64_t len = (int64_t)strlen(lit);
    return i + len <= end && memcmp(s + i, lit, (size_t)len) == 0;
}

/* The text of s[a .. b) as parse_blocks makes it (tags out, entities decoded, whitespace
 * collapsed). Appends its UTF-8 to out (when out is not NULL), adds its code points to *cps and
 * its words to *words. Returns 0, or -1 for an entity it does not decode. */
static int block_text(const uint8_t *s, int64_t a, int64_t b, uint8_t *out, int64_t *used, int64_t *cps,
                      int64_t *words) {
    int gap = 0; /* whitespace (or a tag) since the last word character */
    int64_t n_words = 0, n_cps = 0, pos = used ? *used : 0;
    for (int64_t i = a; i < b;) {
        const uint8_t *emit = s + i;
        int len;
        uint32_t c;
        if (s[i] == '<') {
            int64_t k = i + 1;
            while (k < b && s[k] != '>') k++;
            if (k < b) { /* a tag: a space */
                gap = 1;
                i = k + 1;
                continue;
            }
        }
        if (s[i] == '&') {
            static const char *const names[] = {"&amp;", "&quot;", "&lt;", "&gt;"};
            static const char chars[] = {'&', '"', '<', '>'};
            int which = -1;
            for (int e = 0; e < 4 && which < 0; e++)
                if (starts_with(s, i, b, names[e])) which = e;
            if (which < 0) return -1;
            emit = (const uint8_t *)&chars[which];
            len = 1;
            c = (uint8_t)chars[which];
            i += (int64_t)strlen(names[which]);
        } else {
            c = utf8_at(s, i, &len);
            i += len;
        }
        if (py_space(c)) {
            gap = 1;
            continue;
        }
        if (gap || n_words == 0) {
            if (n_words > 0) {
                if (out) out[pos] = ' ';
                pos++;
                n_cps++;
            }
            n_words++;
            gap = 0;
        }
        if (out) memcpy(out + pos, emit, (size_t)len);
        pos += len;
        n_cps++;
    }
    if (used) *used = pos;
    *cps += n_cps;
    *words += n_words;
    return 0;
}

int64_t ts_parse_blocks(const uint8_t *s, int64_t n, uint8_t *text, int64_t *info, int64_t max_blocks) {
    int64_t n_blocks = 0, used = 0, cp_end = 0;
    for (int64_t ls = 0; ls <= n;) {
        int64_t le = ls;
        while (le < n && s[le] != '\n') le++;
        /* strip */
        int64_t a = ls, b = le;
        while (a < b) {
            int len;
            uint32_t c = utf8_at(s, a, &len);
            if (!py_space(c)) break;
            a += len;
        }
        while (b > a) {
            int64_t k = b - 1;
            while (k > a && (s[k] & 0xC0) == 0x80) k--;
            int len;
            if (!py_space(utf8_at(s, k, &len))) break;
            b = k;
        }
        if (a < b) {
            int64_t start_used = used, cps = 0, words = 0;
            if (block_text(s, a, b, text, &used, &cps, &words) < 0) return -1;
            if (words == 0) {
                used = start_used;
            } else {
                if (n_blocks >= max_blocks) return -2;
                /* kind: _BLOCK_TAG = <(h[1-6]|p|pre)\b at the line's start */
                int64_t kind = 0;
                if (s[a] == '<') {
                    int end;
                    if (a + 2 < b && s[a + 1] == 'h' && s[a + 2] >= '1' && s[a + 2] <= '6' && (end = word_end(s, a + 3, b)) != 0) {
                        if (end < 0) return -1;
                        kind = 2;
                    } else if (a + 1 < b && s[a + 1] == 'p') {
                        if ((end = word_end(s, a + 2, b)) < 0) return -1;
                        if (end) kind = 1;
                        else if (starts_with(s, a + 1, b, "pre")) {
                            if ((end = word_end(s, a + 4, b)) < 0) return -1;
                            if (end) kind = 3;
                        }
                    }
                }
                /* linked characters: _ANCHOR = <a\b[^>]*>(.*?)</a>, findall */
                int64_t linked = 0, ignored = 0;
                for (int64_t p = a; p + 1 < b;) {
                    if (s[p] == '<' && s[p + 1] == 'a') {
                        int end = word_end(s, p + 2, b);
                        if (end < 0) return -1;
                        if (end) {
                            int64_t q = p + 2;
                            while (q < b && s[q] != '>') q++;
                            if (q < b) {
                                int64_t r = q + 1;
                                while (r + 4 <= b && memcmp(s + r, "</a>", 4) != 0) r++;
                                if (r + 4 <= b) {
                                    if (block_text(s, q + 1, r, NULL, NULL, &linked, &ignored) < 0) return -1;
                                    p = r + 4;
                                    continue;
                                }
                            }
                        }
                    }
                    p++;
                }
                cp_end += cps;
                info[4 * n_blocks] = cp_end;
                info[4 * n_blocks + 1] = kind;
                info[4 * n_blocks + 2] = linked;
                info[4 * n_blocks + 3] = words;
                n_blocks++;
            }
        }
        ls = le + 1;
    }
    return n_blocks;
}

/* ---------------------------------------------------------------------------------------------
 * ts_block_features: blocks.features' matrix (n rows of blocks.FEATURES, row-major) in one pass,
 * with the same double arithmetic as its NumPy twin (blocks._features_numpy). What needs Python's
 * Unicode tables or NumPy's own arithmetic comes in ready: log1p of the words and characters
 * (np.log1p), whether each text starts with a capital (str.isupper), whether it recurs on the
 * page, and the window link density column (np.convolve, which may sum through BLAS), written at
 * column `window_col` by the caller. The texts come as one UTF-32 array (block b is
 * text[cp_end[b - 1] .. cp_end[b])) beside its str.lower() (same length), or, when lowering changed
 * the length, a 0/1 array that says which code points lowering changes (lowered_is_flags = 1).
 * ------------------------------------------------------------------------------------------- */

static inline int sentence_end_cp(uint32_t c) {
    return c == '.' || c == '!' || c == '?' || c == ':' || c == '"' || c == 0x201C || c == 0x201D || c == 0xBB ||
           c == 0xAB || c == 0x2026;
}

void ts_block_features(int64_t n, const double *words, const double *chars, const double *link, const int64_t *kind,
                       const double *log_words, const double *log_chars, const uint8_t *starts_upper,
                       const uint8_t *repeated, const uint32_t *text, const uint32_t *lowered, int64_t lowered_is_flags,
                       const int64_t *cp_end, int64_t start, int64_t end, const int64_t *kept, const int64_t *marker,
                       int64_t cut, int64_t n_cols, double *out) {
    enum { OWN = 13, NB = 7, PREV = OWN, NEXT = OWN + NB, CTX = OWN + 2 * NB, PROSE = CTX + 13 };
    static const int nb_cols[NB] = {0, 1, 2, 3, 9, 10, 12}; /* blocks.NEIGHBOUR within OWN */
    double total = 0.0, max_words = 0.0, span_words = 0.0, prose_total = 0.0;
    int64_t first_prose = -1, last_prose = -1;
    for (int64_t i = 0; i < n; i++) {
        double *row = out + i * n_cols;
        int64_t s0 = i ? cp_end[i - 1] : 0, s1 = cp_end[i];
        int64_t digits = 0, upper = 0, commas = 0, separator = 0;
        for (int64_t k = s0; k < s1; k++) {
            uint32_t c = text[k];
            digits += c >= '0' && c <= '9';
            upper += lowered_is_flags ? lowered[k] != 0 : c != lowered[k];
            commas += c == ',';
            separator |= c == '|' || c == 0xA9 || (c == 0xBB && k < s0 + 3);
        }
        row[0] = log_words[i];
        row[1] = log_chars[i];
        row[2] = link[i];
        row[3] = s1 > s0 && sentence_end_cp(text[s1 - 1]);
        row[4] = starts_upper[i];
        row[5] = (double)digits / chars[i];
        row[6] = (double)upper / chars[i];
        row[7] = (double)separator;
        row[8] = (double)commas / (words[i] > 1.0 ? words[i] : 1.0);
        row[9] = kind[i] == 1;
        row[10] = kind[i] == 2;
        row[11] = kind[i] == 3;
        row[12] = kind[i] == 0;
        total += words[i];
        if (words[i] > max_words) max_words = words[i];
        if (i >= start && i < end) span_words += words[i];
        if (((words[i] >= 10) || (words[i] >= 5 && row[3] > 0)) && link[i] <= 0.5) {
            if (first_prose < 0) first_prose = i;
            last_prose = i;
            prose_total += words[i];
        }
    }
    if (total == 0.0) total = 1.0;
    double before = 0.0, through = 0.0, log_n = log1p((double)n), log_total = log1p(total);
    double biggest = max_words > 1.0 ? max_words : 1.0;
    for (int64_t i = 0; i < n; i++) {
        double *row = out + i * n_cols, index = (double)i;
        for (int c = 0; c < NB; c++) {
            row[PREV + c] = i > 0 ? out[(i - 1) * n_cols + nb_cols[c]] : 0.0;
            row[NEXT + c] = i + 1 < n ? out[(i + 1) * n_cols + nb_cols[c]] : 0.0;
        }
        double *ctx = row + CTX;
        ctx[0] = index / (double)n;
        ctx[1] = before / total;
        ctx[2] = (before + words[i]) / total;
        ctx[3] = index >= (double)start && index < (double)end;
        ctx[4] = (double)kept[i];
        ctx[5] = (double)marker[i];
        ctx[6] = index >= (double)cut;
        ctx[7] = index < (double)start ? ((double)start - index) / (double)n
                 : index >= (double)end ? (index - (double)end + 1.0) / (double)n : 0.0;
        ctx[8] = log_n;
        ctx[9] = log_total;
        ctx[10] = span_words / total;
        ctx[11] = repeated[i];
        ctx[12] = i > 0 ? (double)kept[i - 1] : 0.0;
        before += words[i];
        double *pr = row + PROSE;
        int is_prose = ((words[i] >= 10) || (words[i] >= 5 && row[3] > 0)) && link[i] <= 0.5;
        double prose_words = is_prose ? words[i] : 0.0;
        through += prose_words;
        if (first_prose >= 0) {
            pr[0] = (index - (double)first_prose) / (double)n;
            pr[1] = (index - (double)last_prose) / (double)n;
            pr[2] = (through - prose_words) / prose_total;
            pr[3] = (prose_total - through) / prose_total;
        } else {
            pr[0] = pr[1] = pr[2] = pr[3] = 0.0;
        }
        pr[4] = words[i] / biggest;
        pr[5] = 0.0; /* window link density: the caller's */
        pr[6] = i >= 2 ? out[(i - 2) * n_cols + 0] : 0.0;
        pr[7] = i >= 2 ? out[(i - 2) * n_cols + 2] : 0.0;
        pr[8] = i + 2 < n ? out[(i + 2) * n_cols + 0] : 0.0;
        pr[9] = i + 2 < n ? out[(i + 2) * n_cols + 2] : 0.0;
    }
}
