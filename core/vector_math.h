#pragma once

#include <mneme/core/export.h>
#include <mneme/core/memory_record.h>

#include <cstddef>
#include <cstdint>

namespace mneme {

// Small vector kernels shared by the memory pipeline and the storage backends.
class MNEME_CORE_EXPORT VectorMath
{
public:
    // Which implementation a kernel uses: the fastest this CPU runs (chosen at run time), the AVX2 one
    // (the portable one on a CPU without AVX2), or the portable one every CPU runs: for tests that
    // hold one to the other.
    enum class Kernel {
        Fastest,
        Avx2,
        Portable
    };

    // Sum of a[i]*b[i]: an AVX2/FMA kernel chosen at run time when the CPU has it, else a portable
    // kernel with eight independent accumulators. Results may differ in the last bits between the two.
    static float dot(const float *a, const float *b, size_t n);
    // The same with the kernel named (Fastest and Avx2 are the same kernel here).
    static float dot(const float *a, const float *b, size_t n, Kernel kernel);
    // Sum of a[i]*b[i] over signed 8-bit codes, exact (every kernel gives the same integer) for any n
    // up to 2^31 / 128^2 = 131,072: AVX-512 VNNI, else AVX2, else portable, chosen at run time.
    static std::int32_t dotInt8(const std::int8_t *a, const std::int8_t *b, size_t n, Kernel kernel = Kernel::Fastest);
    // Scalar quantisation of one vector: out[i] = round(in[i] / scale), in -127..127, with the scale
    // returned (the largest |in[i]| over 127), so that in[i] is within scale / 2 of out[i] * scale and
    // the dot product of two vectors is about scaleA * scaleB * dotInt8(codesA, codesB). A vector that
    // is zero or holds a non-finite value gets zero codes and scale 0.
    static float quantise(const float *in, std::int8_t *out, size_t n);
    static float norm(const float *a, size_t n);
    // Cosine similarity; 0 when the lengths differ or either vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);
};

} // namespace mneme
