#pragma once

#include "core/memory_record.h"

#include <cstddef>

namespace mneme {

// Small float kernels shared by the memory pipeline and the storage backends.
class VectorMath
{
public:
    // Sum of a[i]*b[i]. Eight independent accumulators keep the additions off one dependency chain
    // and let the compiler use vector registers without reassociating floating point itself.
    static float dot(const float *a, const float *b, size_t n);
    static float norm(const float *a, size_t n);
    // Cosine similarity; 0 when the lengths differ or either vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);
};

} // namespace mneme
