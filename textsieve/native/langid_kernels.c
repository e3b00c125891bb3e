/* py3langid's language identifier over a batch of documents (textsieve/models/langid.py). No Python
 * API: loaded with ctypes.
 *
 * ts_langid_scores: for every document, py3langid's byte-DFA walk (`visit_counts`: the distinct
 * features a document's UTF-8 bytes reach, counted, in order of first occurrence) and its naive
 * Bayes scores, log1p(count) * ptc[feature] summed per class, then the class prior pc added. This
 * is the numba pair `_walk` + `_scores` in one pass with the same arithmetic in the same order
 * (float64 accumulators, float32 table entries widened, no fused multiply-add), so both give the
 * same doubles; the C form exists so that a process that runs language id need not import numba
 * (~0.3 s) nor load its cached kernels (~0.35 s) before its first document. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* scores[d * n_classes + c] for the n_docs documents buf[doc_off[d] .. doc_off[d + 1]), and
 * n_features[d], the number of distinct features each reached (0: py3langid has nothing to go on).
 * nextmove, rowbase and out_feat are the DFA (state = nextmove[rowbase[state] + byte]; a state's
 * feature out_feat[state], or -1); ptc is n_feat x n_classes, row-major. Returns 0, or -2 without
 * memory. */
int64_t ts_langid_scores(const uint8_t *buf, const int64_t *doc_off, int64_t n_docs, const uint32_t *nextmove,
                         const int64_t *rowbase, const int64_t *out_feat, int64_t n_feat, const float *ptc,
                         const float *pc, int64_t n_classes, double *scores, int64_t *n_features) {
    int64_t longest = 0;
    for (int64_t d = 0; d < n_docs; d++)
        if (doc_off[d + 1] - doc_off[d] > longest) longest = doc_off[d + 1] - doc_off[d];
    int64_t *slot = malloc((size_t)(n_feat > 0 ? n_feat : 1) * sizeof(int64_t));
    int64_t *feats = malloc((size_t)(longest + 1) * sizeof(int64_t));
    int64_t *counts = malloc((size_t)(longest + 1) * sizeof(int64_t));
    if (slot == NULL || feats == NULL || counts == NULL) {
        free(slot);
        free(feats);
        free(counts);
        return -2;
    }
    for (int64_t f = 0; f < n_feat; f++) slot[f] = -1;
    for (int64_t d = 0; d < n_docs; d++) {
        int64_t k = 0, state = 0;
        for (int64_t i = doc_off[d]; i < doc_off[d + 1]; i++) {
            state = nextmove[rowbase[state] + buf[i]];
            int64_t f = out_feat[state];
            if (f >= 0) {
                int64_t s = slot[f];
                if (s < 0) {
                    slot[f] = k;
                    feats[k] = f;
                    counts[k] = 1;
                    k++;
                } else {
                    counts[s]++;
                }
            }
        }
        double *acc = scores + d * n_classes;
        for (int64_t c = 0; c < n_classes; c++) acc[c] = 0.0;
        for (int64_t j = 0; j < k; j++) {
            slot[feats[j]] = -1;
            double w = log1p((double)counts[j]);
            const float *row = ptc + feats[j] * n_classes;
            for (int64_t c = 0; c < n_classes; c++) acc[c] += w * (double)row[c];
        }
        for (int64_t c = 0; c < n_classes; c++) acc[c] += (double)pc[c];
        n_features[d] = k;
    }
    free(slot);
    free(feats);
    free(counts);
    return 0;
}
