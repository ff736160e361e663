#pragma once

#include <mneme/core/export.h>
#include <mneme/core/memory_record.h>

#include <cstddef>

namespace mneme {

// Small float kernels shared by the memory pipeline and the storage backends.
class MNEME_CORE_EXPORT VectorMath
{
public:
    // Sum of a[i]*b[i]: an AVX2/FMA kernel chosen at run time when the CPU has it, else a portable
    // kernel with eight independent accumulators. Results may differ in the last bits between the two.
    static float dot(const float *a, const float *b, size_t n);
    static float norm(const float *a, size_t n);
    // Cosine similarity; 0 when the lengths differ or either vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);
};

} // namespace mneme
