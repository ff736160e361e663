#pragma once

#include <mneme/core/storage_backend.h>

#include <QList>
#include <QMutex>
#include <QMutexLocker>
#include <memory>

namespace mneme::test {

// A storage backend (usually the SQLite plugin) that records the filter of every vector search.
class CountingStorage : public StorageBackend
{
public:
    explicit CountingStorage(std::unique_ptr<StorageBackend> inner) : m_inner(std::move(inner)) {}

    QList<RecordFilter> searches() const
    {
        QMutexLocker lock(&m_mutex);
        return m_searches;
    }
    QStringList searchedScopes() const
    {
        QStringList out;
        for (const RecordFilter &f : searches())
            out << (f.scopes.isEmpty() ? QStringLiteral("/") : f.scopes.join(QLatin1Char('+')));
        return out;
    }
    // The filters of the scope samplings (scopeSamples(): a batch's offline scope vote).
    QList<RecordFilter> samplings() const
    {
        QMutexLocker lock(&m_mutex);
        return m_samplings;
    }
    void clear()
    {
        QMutexLocker lock(&m_mutex);
        m_searches.clear();
        m_samplings.clear();
    }
    // Off (the default): the two-phase search is declined, as by a backend without one, so callers
    // use search() and keywordSearch(). On: it is passed through, and the records read are counted.
    void setTwoPhase(bool on) { m_twoPhase = on; }
    int hitRecordsRead() const
    {
        QMutexLocker lock(&m_mutex);
        return m_hitRecordsRead;
    }

    QString location() const override { return m_inner->location(); }
    int schemaVersion() const override { return m_inner->schemaVersion(); }
    std::optional<EmbedderBinding> embedderBinding() const override { return m_inner->embedderBinding(); }
    void bindEmbedder(const EmbedderBinding &b) override { m_inner->bindEmbedder(b); }
    void save(const std::vector<MemoryRecord> &records) override { m_inner->save(records); }
    std::vector<QString> saveUnlessIdentical(const std::vector<MemoryRecord> &records) override
    {
        return m_inner->saveUnlessIdentical(records);
    }
    void update(const MemoryRecord &record) override { m_inner->update(record); }
    int remove(const RecordFilter &filter) override { return m_inner->remove(filter); }
    int reset(const QString &scopePrefix) override { return m_inner->reset(scopePrefix); }
    void restore(const MemoryRecord &record) override { m_inner->restore(record); }
    std::vector<ScoredRecord> search(const Embedding &query, const RecordFilter &filter, int limit) override
    {
        {
            QMutexLocker lock(&m_mutex);
            m_searches << filter;
        }
        return m_inner->search(query, filter, limit);
    }
    std::vector<ScoredRecord> keywordSearch(const QString &text, const RecordFilter &filter, int limit,
                                            double contextWeight = 0) override
    {
        return m_inner->keywordSearch(text, filter, limit, contextWeight);
    }
    std::optional<std::vector<SearchHit>> searchHits(const Embedding &query, const RecordFilter &filter, int limit) override
    {
        if (!m_twoPhase)
            return std::nullopt;
        {
            QMutexLocker lock(&m_mutex);
            m_searches << filter;
        }
        return m_inner->searchHits(query, filter, limit);
    }
    std::optional<std::vector<SearchHit>> keywordHits(const QString &text, const Embedding &query, const RecordFilter &filter,
                                                      int limit, double contextWeight = 0) override
    {
        if (!m_twoPhase)
            return std::nullopt;
        return m_inner->keywordHits(text, query, filter, limit, contextWeight);
    }
    std::vector<std::optional<MemoryRecord>> hitRecords(const std::vector<qint64> &keys) override
    {
        {
            QMutexLocker lock(&m_mutex);
            m_hitRecordsRead += int(keys.size());
        }
        return m_inner->hitRecords(keys);
    }
    std::optional<MemoryRecord> get(const QString &id, bool withEmbedding) override { return m_inner->get(id, withEmbedding); }
    std::vector<MemoryRecord> list(const RecordFilter &filter, int limit, int offset) override
    {
        return m_inner->list(filter, limit, offset);
    }
    std::vector<MemoryRecord> listOrdered(const RecordFilter &filter, const RecordOrder &order, int limit, int offset) override
    {
        return m_inner->listOrdered(filter, order, limit, offset);
    }
    std::optional<MemoryRecord> findExact(const QString &content, const QString &scope, const QString &source,
                                          bool isPrivate) override
    {
        return m_inner->findExact(content, scope, source, isPrivate);
    }
    std::vector<std::optional<MemoryRecord>> findExact(const std::vector<MemoryRecord> &records) override
    {
        return m_inner->findExact(records);
    }
    std::vector<std::optional<MemoryRecord>> findSameContent(const std::vector<MemoryRecord> &records, const QString &scopePrefix) override
    {
        return m_inner->findSameContent(records, scopePrefix);
    }
    std::vector<MemoryRecord> scopeSamples(const RecordFilter &filter, int perScope) override
    {
        {
            QMutexLocker lock(&m_mutex);
            m_samplings << filter;
        }
        return m_inner->scopeSamples(filter, perScope);
    }
    int count(const RecordFilter &filter) override { return m_inner->count(filter); }
    ScopeInfo scopeInfo(const QString &scope, const RecordFilter &visible) override { return m_inner->scopeInfo(scope, visible); }
    QStringList childScopes(const QString &parent, const RecordFilter &visible) override { return m_inner->childScopes(parent, visible); }
    QMap<QString, int> categories(const RecordFilter &filter) override { return m_inner->categories(filter); }
    void touch(const QStringList &ids, const QDateTime &at) override { m_inner->touch(ids, at); }
    std::vector<HistoryEntry> history(const QString &recordId) override { return m_inner->history(recordId); }
    std::optional<Json> readState(const QString &key) override { return m_inner->readState(key); }
    void writeState(const QString &key, const Json &value) override { m_inner->writeState(key, value); }
    QStringList stateKeys(const QString &prefix) override { return m_inner->stateKeys(prefix); }
    void close() override { m_inner->close(); }

private:
    std::unique_ptr<StorageBackend> m_inner;
    mutable QMutex m_mutex;
    QList<RecordFilter> m_searches;
    QList<RecordFilter> m_samplings;
    bool m_twoPhase = false;
    int m_hitRecordsRead = 0;
};

} // namespace mneme::test
