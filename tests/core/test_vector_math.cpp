#include <mneme/core/vector_math.h>

#include <QRandomGenerator>
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace mneme;

namespace {

// Codes of one kind, `offset` bytes into a buffer of their own (a misaligned start when odd).
struct Codes
{
    std::vector<std::int8_t> storage;
    std::size_t offset = 0;
    const std::int8_t *data() const { return storage.data() + offset; }
    std::int8_t *data() { return storage.data() + offset; }
};

Codes makeCodes(const QString &kind, int n, int offset, QRandomGenerator &rng)
{
    Codes c;
    c.storage.assign(std::size_t(n + offset), 0);
    c.offset = std::size_t(offset);
    for (int i = 0; i < n; ++i) {
        int v = 0;
        if (kind == QLatin1String("random"))
            v = rng.bounded(-128, 128);
        else if (kind == QLatin1String("lowest"))
            v = -128;
        else if (kind == QLatin1String("highest"))
            v = 127;
        else if (kind == QLatin1String("alternating"))
            v = i % 2 ? -128 : 127;
        c.data()[i] = std::int8_t(v);
    }
    return c;
}

std::int64_t reference(const std::int8_t *a, const std::int8_t *b, int n)
{
    std::int64_t s = 0;
    for (int i = 0; i < n; ++i)
        s += std::int64_t(a[i]) * b[i];
    return s;
}

std::vector<float> unitVector(int n, QRandomGenerator &rng)
{
    std::vector<float> v(static_cast<std::size_t>(n));
    double norm = 0;
    for (float &x : v) {
        x = float(rng.generateDouble() * 2 - 1);
        norm += double(x) * x;
    }
    for (float &x : v)
        x = float(x / std::sqrt(norm));
    return v;
}

} // namespace

class TestVectorMath : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // The 8-bit kernels (the fastest, AVX-512 VNNI on a CPU that has it; AVX2; portable) give the
    // exact integer sum, whatever the length (the vector body, the 16-code step, the scalar
    // tail) and the alignment of either side.
    void dotInt8IsExact_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("offsetA");
        QTest::addColumn<int>("offsetB");
        for (const char *kind : {"random", "lowest", "highest", "alternating"})
            for (int n : {0, 1, 3, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 383, 384, 385, 1536, 4099})
                for (auto [oa, ob] : {std::pair{0, 0}, std::pair{1, 3}, std::pair{7, 0}})
                    QTest::addRow("%s n=%d a+%d b+%d", kind, n, oa, ob) << QString::fromLatin1(kind) << n << oa << ob;
    }
    void dotInt8IsExact()
    {
        QFETCH(QString, kind);
        QFETCH(int, n);
        QFETCH(int, offsetA);
        QFETCH(int, offsetB);
        QRandomGenerator rng(quint32(n * 131 + offsetA * 7 + offsetB));
        const Codes a = makeCodes(kind, n, offsetA, rng);
        const Codes b = makeCodes(kind == QLatin1String("alternating") ? QStringLiteral("lowest") : kind, n, offsetB, rng);
        const std::int64_t want = reference(a.data(), b.data(), n);
        for (VectorMath::Kernel kernel : {VectorMath::Kernel::Fastest, VectorMath::Kernel::Avx2, VectorMath::Kernel::Portable})
            QCOMPARE(std::int64_t(VectorMath::dotInt8(a.data(), b.data(), std::size_t(n), kernel)), want);
    }

    // The float kernels agree with a double-precision sum within float rounding, misaligned too.
    void dotFloatKernelsAgree_data()
    {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("offset");
        for (int n : {0, 1, 7, 8, 9, 31, 32, 33, 383, 384, 385, 1536})
            for (int offset : {0, 1, 3})
                QTest::addRow("n=%d +%d", n, offset) << n << offset;
    }
    void dotFloatKernelsAgree()
    {
        QFETCH(int, n);
        QFETCH(int, offset);
        QRandomGenerator rng(quint32(n + 1000 * offset));
        std::vector<float> a(std::size_t(n + offset)), b(std::size_t(n + offset));
        double want = 0, magnitude = 0;
        for (int i = 0; i < n; ++i) {
            a[std::size_t(i + offset)] = float(rng.generateDouble() * 2 - 1);
            b[std::size_t(i + offset)] = float(rng.generateDouble() * 2 - 1);
            want += double(a[std::size_t(i + offset)]) * b[std::size_t(i + offset)];
            magnitude += std::fabs(double(a[std::size_t(i + offset)]) * b[std::size_t(i + offset)]);
        }
        const double bound = 1e-6 * (magnitude + 1);
        QVERIFY(std::fabs(VectorMath::dot(a.data() + offset, b.data() + offset, std::size_t(n)) - want) <= bound);
        QVERIFY(std::fabs(VectorMath::dot(a.data() + offset, b.data() + offset, std::size_t(n), VectorMath::Kernel::Portable) - want)
                <= bound);
    }

    // Quantised codes stay within half a step of each component, and the dot product of two unit
    // vectors computed from their codes is within the bound the steps imply of the float one:
    // |a.b - a'.b'| <= |a| |b - b'| + |a - a'| |b'|, each |x - x'| at most scale / 2 * sqrt(n).
    void quantisedDotIsClose_data()
    {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("offset");
        for (int n : {1, 3, 17, 64, 383, 384, 385, 1536})
            for (int offset : {0, 1})
                QTest::addRow("n=%d +%d", n, offset) << n << offset;
    }
    void quantisedDotIsClose()
    {
        QFETCH(int, n);
        QFETCH(int, offset);
        QRandomGenerator rng(quint32(7 * n + offset));
        for (int round = 0; round < 20; ++round) {
            const std::vector<float> a = unitVector(n, rng), b = unitVector(n, rng);
            Codes ca = makeCodes(QStringLiteral("zero"), n, offset, rng), cb = makeCodes(QStringLiteral("zero"), n, 0, rng);
            const float sa = VectorMath::quantise(a.data(), ca.data(), std::size_t(n));
            const float sb = VectorMath::quantise(b.data(), cb.data(), std::size_t(n));
            QVERIFY(sa > 0 && sb > 0);
            double errA = 0, errB = 0, normB = 0;
            for (int i = 0; i < n; ++i) {
                QVERIFY(ca.data()[i] >= -127 && ca.data()[i] <= 127);
                const double da = double(a[std::size_t(i)]) - double(ca.data()[i]) * sa;
                const double db = double(b[std::size_t(i)]) - double(cb.data()[i]) * sb;
                QVERIFY2(std::fabs(da) <= sa * 0.5 * (1 + 1e-5), qPrintable(QString::number(da)));
                QVERIFY(std::fabs(db) <= sb * 0.5 * (1 + 1e-5));
                errA += da * da;
                errB += db * db;
                normB += double(cb.data()[i]) * cb.data()[i] * sb * sb;
            }
            const double exact = VectorMath::dot(a.data(), b.data(), std::size_t(n));
            const double approx = double(sa) * sb * VectorMath::dotInt8(ca.data(), cb.data(), std::size_t(n));
            const double bound = std::sqrt(errB) + std::sqrt(errA) * std::sqrt(normB) + 1e-6;
            QVERIFY2(std::fabs(exact - approx) <= bound, qPrintable(QStringLiteral("%1 vs %2").arg(exact).arg(approx)));
            const double stated = (sa + sb) * 0.5 * std::sqrt(double(n)) * 1.01 + 1e-6;
            QVERIFY(std::fabs(exact - approx) <= stated);
        }
    }

    // A zero vector, or one with a NaN or an infinity, gets zero codes and scale 0 (never a code
    // from a non-finite value); the largest component maps to +-127.
    void quantiseEdges()
    {
        std::int8_t out[4] = {1, 1, 1, 1};
        const float zero[4] = {0, 0, 0, 0};
        QCOMPARE(VectorMath::quantise(zero, out, 4), 0.0f);
        QCOMPARE(VectorMath::dotInt8(out, out, 4), 0);
        const float nan[4] = {0.5f, std::numeric_limits<float>::quiet_NaN(), 0.1f, 0.2f};
        std::fill(out, out + 4, std::int8_t(1));
        QCOMPARE(VectorMath::quantise(nan, out, 4), 0.0f);
        QCOMPARE(VectorMath::dotInt8(out, out, 4), 0);
        const float inf[4] = {std::numeric_limits<float>::infinity(), 0, 0, 0};
        QCOMPARE(VectorMath::quantise(inf, out, 4), 0.0f);
        const float v[4] = {-0.5f, 0.25f, 0.0f, 0.125f};
        const float s = VectorMath::quantise(v, out, 4);
        QCOMPARE(s, 0.5f / 127.0f);
        QCOMPARE(int(out[0]), -127);
        QCOMPARE(int(out[1]), 64);
        QCOMPARE(int(out[2]), 0);
        QCOMPARE(int(out[3]), 32);
        // Subnormal values only (127 over the largest overflows; the fuzzer found it): codes as for
        // any vector, the largest at +-127.
        const float tiny = std::numeric_limits<float>::denorm_min();
        const float sub[4] = {4 * tiny, -2 * tiny, 0.0f, tiny};
        std::fill(out, out + 4, std::int8_t(1));
        VectorMath::quantise(sub, out, 4);
        QCOMPARE(int(out[0]), 127);
        QCOMPARE(int(out[1]), -64);
        QCOMPARE(int(out[2]), 0);
        QCOMPARE(int(out[3]), 32);
    }
};

QTEST_APPLESS_MAIN(TestVectorMath)
#include "test_vector_math.moc"
