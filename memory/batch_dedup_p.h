#pragma once

#include <mneme/core/memory_record.h>

#include <vector>

namespace mneme {

// Near-duplicates within one batch of saves: an item is a duplicate when the cosine of its vector
// with the vector of an earlier item that was kept reaches the threshold. Items without a vector (null,
// empty or zero) are never duplicates and never match; vectors of different lengths never match.
//
// Exact, and cheaper than comparing every pair in full: for a pair, the dot product of the first
// dimensions (a twelfth of them) plus the product of the two remaining lengths bounds the whole dot
// product (Cauchy–Schwarz), and most unrelated pairs fall below the threshold on that bound alone.
class BatchDedup
{
public:
    // One flag per vector, true for a duplicate. With `groups` (one key per vector), a vector is
    // compared only with earlier ones of its own group: records of different sources or privacy
    // never drop one another.
    static std::vector<bool> duplicates(const std::vector<const Embedding *> &vectors, double threshold,
                                        const std::vector<int> &groups = {});
};

} // namespace mneme
