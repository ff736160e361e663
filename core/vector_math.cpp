#include <mneme/core/vector_math.h>

#include <algorithm>
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

// Portable 8-bit kernel: four independent 32-bit accumulators; exact.
std::int32_t dotInt8Portable(const std::int8_t *a, const std::int8_t *b, size_t n)
{
    std::int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += std::int32_t(a[i]) * b[i];
        s1 += std::int32_t(a[i + 1]) * b[i + 1];
        s2 += std::int32_t(a[i + 2]) * b[i + 2];
        s3 += std::int32_t(a[i + 3]) * b[i + 3];
    }
    for (; i < n; ++i)
        s0 += std::int32_t(a[i]) * b[i];
    return (s0 + s1) + (s2 + s3);
}

#ifdef MNEME_DOT_AVX2
// AVX2 8-bit kernel: 16 codes of each side widened to 16 bits, multiplied and summed in pairs into
// eight 32-bit lanes (vpmaddwd: exact, a pair is at most 2 * 128^2), 32 codes per step on two
// accumulators.
__attribute__((target("avx2"))) inline __m256i widen(const std::int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

__attribute__((target("avx2"))) std::int32_t dotInt8Avx2(const std::int8_t *a, const std::int8_t *b, size_t n)
{
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(widen(a + i), widen(b + i)));
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(widen(a + i + 16), widen(b + i + 16)));
    }
    for (; i + 16 <= n; i += 16)
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(widen(a + i), widen(b + i)));
    const __m256i acc = _mm256_add_epi32(acc0, acc1);
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    std::int32_t r = _mm_cvtsi128_si32(s);
    for (; i < n; ++i)
        r += std::int32_t(a[i]) * b[i];
    return r;
}

// AVX-512 VNNI 8-bit kernel: vpdpbusd multiplies unsigned by signed bytes, so one side is offset by
// 128 (a ^ 0x80 = a + 128) and 128 times the sum of the other side taken off at the end:
// sum((a + 128) b) - 128 sum(b) = sum(a b), exact (no saturation in vpdpbusd). 64 codes per step,
// the tail one by one.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) std::int32_t dotInt8Vnni(const std::int8_t *a, const std::int8_t *b, size_t n)
{
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i products = _mm512_setzero_si512(), sums = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i vb = _mm512_loadu_si512(b + i);
        products = _mm512_dpbusd_epi32(products, _mm512_xor_si512(_mm512_loadu_si512(a + i), flip), vb);
        sums = _mm512_dpbusd_epi32(sums, ones, vb);
    }
    std::int32_t r = _mm512_reduce_add_epi32(products) - 128 * _mm512_reduce_add_epi32(sums);
    for (; i < n; ++i)
        r += std::int32_t(a[i]) * b[i];
    return r;
}
#endif

using DotKernel = float (*)(const float *, const float *, size_t);
using DotInt8Kernel = std::int32_t (*)(const std::int8_t *, const std::int8_t *, size_t);

bool hasVnni()
{
#ifdef MNEME_DOT_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

bool hasAvx2([[maybe_unused]] bool fma)
{
#ifdef MNEME_DOT_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && (!fma || __builtin_cpu_supports("fma"));
#else
    return false;
#endif
}

DotKernel chooseDot()
{
#ifdef MNEME_DOT_AVX2
    if (hasAvx2(true))
        return &dotAvx2;
#endif
    return &dotPortable;
}

DotInt8Kernel chooseDotInt8()
{
#ifdef MNEME_DOT_AVX2
    if (hasVnni())
        return &dotInt8Vnni;
    if (hasAvx2(false))
        return &dotInt8Avx2;
#endif
    return &dotInt8Portable;
}

const DotKernel kDot = chooseDot();
const DotInt8Kernel kDotInt8 = chooseDotInt8();

} // namespace

float VectorMath::dot(const float *a, const float *b, size_t n)
{
    return kDot(a, b, n);
}

float VectorMath::dot(const float *a, const float *b, size_t n, Kernel kernel)
{
    return kernel == Kernel::Portable ? dotPortable(a, b, n) : kDot(a, b, n);
}

std::int32_t VectorMath::dotInt8(const std::int8_t *a, const std::int8_t *b, size_t n, Kernel kernel)
{
    switch (kernel) {
    case Kernel::Portable:
        return dotInt8Portable(a, b, n);
    case Kernel::Avx2:
#ifdef MNEME_DOT_AVX2
        return hasAvx2(false) ? dotInt8Avx2(a, b, n) : dotInt8Portable(a, b, n);
#else
        return dotInt8Portable(a, b, n);
#endif
    case Kernel::Fastest:
        break;
    }
    return kDotInt8(a, b, n);
}

float VectorMath::quantise(const float *in, std::int8_t *out, size_t n)
{
    float largest = 0;
    bool finite = true;
    for (size_t i = 0; i < n; ++i) {
        finite = finite && std::isfinite(in[i]);
        largest = std::max(largest, std::fabs(in[i]));
    }
    if (!finite || !(largest > 0)) {
        std::fill(out, out + n, std::int8_t(0));
        return 0;
    }
    const float scale = largest / 127.0f;
    const float inverse = 127.0f / largest;
    // Rounded half away from zero (as std::lround, without its call per element: this loop is how
    // an index file's vectors get their codes on load, a million of them at a time).
    const auto code = [](float r) {
        r = std::clamp(r, -127.0f, 127.0f);
        return std::int8_t(int(r + std::copysign(0.5f, r)));
    };
    if (std::isfinite(inverse)) {
        for (size_t i = 0; i < n; ++i)
            out[i] = code(in[i] * inverse);
    } else { // subnormal values only: 127 / largest overflows, each value over largest does not
        for (size_t i = 0; i < n; ++i)
            out[i] = code(in[i] / largest * 127.0f);
    }
    return scale;
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
