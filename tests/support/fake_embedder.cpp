#include "fake_embedder.h"

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <cmath>

namespace mneme::test {

FakeEmbedder::FakeEmbedder(int dimension, QString id)
    : m_id(std::move(id)), m_dimension(dimension)
{
}

std::vector<Embedding> FakeEmbedder::embed(const QStringList &texts)
{
    ++m_calls;
    QMutexLocker lock(&m_mutex);
    m_batches << texts;
    if (!m_failure.isEmpty())
        throw Error(ErrorKind::Embedder, m_failure);
    std::vector<Embedding> out;
    static const QRegularExpression nonWord(QStringLiteral("[^a-z0-9]+"));
    for (const QString &t : texts) {
        if (t.trimmed().isEmpty()) {
            out.emplace_back();
            continue;
        }
        auto it = m_vectors.constFind(t);
        if (it != m_vectors.constEnd()) {
            out.push_back(*it);
            continue;
        }
        Embedding v(size_t(m_dimension), 0.0f);
        for (const QString &w : t.toLower().split(nonWord, Qt::SkipEmptyParts)) {
            uint h = 2166136261u;
            for (const QChar c : w)
                h = (h ^ c.unicode()) * 16777619u;
            v[h % uint(m_dimension)] += 1.0f;
        }
        double n = 0;
        for (float x : v)
            n += double(x) * x;
        if (n > 0)
            for (float &x : v)
                x = float(x / std::sqrt(n));
        out.push_back(std::move(v));
    }
    return out;
}

void FakeEmbedder::setVector(const QString &text, const Embedding &vector)
{
    QMutexLocker lock(&m_mutex);
    m_vectors.insert(text, vector);
}

void FakeEmbedder::failWith(const QString &message)
{
    QMutexLocker lock(&m_mutex);
    m_failure = message;
}

QList<QStringList> FakeEmbedder::batches() const
{
    QMutexLocker lock(&m_mutex);
    return m_batches;
}

} // namespace mneme::test
