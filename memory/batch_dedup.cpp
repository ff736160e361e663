#include "memory/batch_dedup_p.h"

#include <mneme/core/vector_math.h>

#include <algorithm>

namespace mneme {

std::vector<bool> BatchDedup::duplicates(const std::vector<const Embedding *> &vectors, double threshold,
                                         const std::vector<int> &groups)
{
    struct Kept
    {
        int group;
        const float *data;
        size_t dimension;
        size_t head; // the dimensions summed exactly before the bound is tried
        float norm;
        float tailNorm; // length of the dimensions after head
    };
    std::vector<bool> out(vectors.size(), false);
    std::vector<Kept> kept;
    kept.reserve(vectors.size());
    for (size_t i = 0; i < vectors.size(); ++i) {
        const Embedding *v = vectors[i];
        if (!v || v->empty())
            continue;
        Kept a{groups.empty() ? 0 : groups[i], v->data(), v->size(), 0, VectorMath::norm(v->data(), v->size()), 0};
        if (!(a.norm > 0))
            continue; // a zero vector is kept but can never match
        // A twelfth of the dimensions (32 of 384), at least 32, in whole 8-float steps: the rest then
        // holds about 92% of an evenly spread vector's length, so an unrelated pair's bound stays
        // below a high threshold. Short vectors are compared in full.
        a.head = a.dimension >= 64 ? std::max<size_t>(32, (a.dimension / 12) & ~size_t(7)) : a.dimension;
        a.tailNorm = a.head < a.dimension ? VectorMath::norm(a.data + a.head, a.dimension - a.head) : 0.0f;
        bool duplicate = false;
        for (const Kept &b : kept) {
            if (b.group != a.group || b.dimension != a.dimension)
                continue;
            const double bound = double(VectorMath::dot(a.data, b.data, a.head)) + double(a.tailNorm) * double(b.tailNorm);
            const double lengths = double(a.norm) * double(b.norm);
            // The margin covers the rounding of the float sums, so a pair is skipped only when even the
            // bound is clearly below the threshold; every other pair is decided on its full cosine.
            if (bound < (threshold - 1e-3) * lengths)
                continue;
            if (VectorMath::dot(a.data, b.data, a.dimension) / (a.norm * b.norm) >= threshold) {
                duplicate = true;
                break;
            }
        }
        if (duplicate)
            out[i] = true;
        else
            kept.push_back(a);
    }
    return out;
}

} // namespace mneme
