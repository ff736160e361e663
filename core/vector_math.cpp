#include "core/vector_math.h"

#include <cmath>

namespace mneme {

float VectorMath::dot(const float *a, const float *b, size_t n)
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
