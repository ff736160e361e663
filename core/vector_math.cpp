#include <mneme/core/vector_math.h>

#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MNEME_DOT_AVX2 1
#endif

namespace mneme {

namespace {

// Portable kernel: eight independent accumulators keep the additions off one dependency chain and
// let the compiler use vector registers without reassociating floating point itself.
float dotPortable(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
        s4 += a[i + 4] * b[i + 4];
        s5 += a[i + 5] * b[i + 5];
        s6 += a[i + 6] * b[i + 6];
        s7 += a[i + 7] * b[i + 7];
    }
    float s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    for (; i < n; ++i)
        s += a[i] * b[i];
    return s;
}

#ifdef MNEME_DOT_AVX2
// AVX2 + FMA: four 8-wide accumulators (32 floats per step), chosen at run time when the CPU has them.
__attribute__((target("avx2,fma"))) float dotAvx2(const float *a, const float *b, size_t n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    const __m256 acc = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    float r = _mm_cvtss_f32(s);
    for (; i < n; ++i)
        r += a[i] * b[i];
    return r;
}
#endif

using DotKernel = float (*)(const float *, const float *, size_t);

DotKernel chooseDot()
{
#ifdef MNEME_DOT_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &dotAvx2;
#endif
    return &dotPortable;
}

const DotKernel kDot = chooseDot();

} // namespace

float VectorMath::dot(const float *a, const float *b, size_t n)
{
    return kDot(a, b, n);
}

float VectorMath::norm(const float *a, size_t n)
{
    return std::sqrt(dot(a, a, n));
}

double VectorMath::cosine(const Embedding &a, const Embedding &b)
{
    if (a.size() != b.size() || a.empty())
        return 0;
    const double na = norm(a.data(), a.size());
    const double nb = norm(b.data(), b.size());
    if (na <= 0 || nb <= 0)
        return 0;
    return dot(a.data(), b.data(), a.size()) / (na * nb);
}

} // namespace mneme
