/* The textsieve extraction engine's kernels (textsieve/extraction/). No Python API: loaded with ctypes.
 *
 * ts_find_words: every occurrence of a few short words in a page, in one pass (sieve.mark_boilerplate).
 * ts_tree_raw: gradient-boosted decision trees for many rows at once (the block classifier, blocks.py).
 *
 * Every tree is a run of nodes in one array (tree t starts at offsets[t]); a leaf's children are
 * itself, so walking `depth` steps from a tree's root always ends on its leaf. A row goes left when
 * its feature, rounded to float32 as scikit-learn rounds its inputs, is <= the node's float64
 * threshold. The raw score is accumulated tree by tree in scikit-learn's order
 * (raw = init; raw += rate * leaf), so the NumPy fallback and scikit-learn give the same doubles. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Start offsets (ascending) and word indexes of every occurrence of the n_words words (their bytes
 * concatenated in `words`, word w at words[word_off[w] .. word_off[w + 1]), each at least 2 bytes,
 * at most 64 words) in buf[0 .. n). A table of the words' first two bytes lets the scan skip every
 * other position with one lookup. At one offset the first matching word counts, and the scan goes
 * on at the next byte. At most max_out are written; the return value is the number found (more
 * than max_out: call again with room). Returns -1 for words it cannot take, -2 without memory. */
int64_t ts_find_words(const uint8_t *buf, int64_t n, const uint8_t *words, const int64_t *word_off,
                      int64_t n_words, int64_t *out_pos, int64_t *out_word, int64_t max_out) {
    if (n_words > 64) return -1;
    for (int64_t w = 0; w < n_words; w++)
        if (word_off[w + 1] - word_off[w] < 2) return -1;
    uint64_t *pair = calloc(65536, sizeof(uint64_t)); /* bit w: word w starts with these two bytes */
    if (pair == NULL) return -2;
    for (int64_t w = 0; w < n_words; w++) {
        const uint8_t *p = words + word_off[w];
        pair[(p[0] << 8) | p[1]] |= (uint64_t)1 << w;
    }
    int64_t found = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
        uint64_t cand = pair[(buf[i] << 8) | buf[i + 1]];
        while (cand) {
            int w = __builtin_ctzll(cand);
            cand &= cand - 1;
            int64_t len = word_off[w + 1] - word_off[w];
            if (i + len <= n && memcmp(buf + i, words + word_off[w], (size_t)len) == 0) {
                if (found < max_out) {
                    out_pos[found] = i;
                    out_word[found] = w;
                }
                found++;
                break;
            }
        }
    }
    free(pair);
    return found;
}

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
