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
    // Off (the default): the two-phase search is declined (SearchResult::hitsDeclined), so callers
    // ask for records. On: it is passed through, and the records read are counted.
    void setTwoPhase(bool on) { m_twoPhase = on; }
    int hitRecordsRead() const
    {
        QMutexLocker lock(&m_mutex);
        return m_hitRecordsRead;
    }

    StorageInfo info() const override { return m_inner->info(); }
    WriteResult write(const WriteRequest &request) override { return m_inner->write(request); }
    SearchResult find(const SearchRequest &request) override
    {
        if (request.output == SearchRequest::Output::Hits && !m_twoPhase) {
            SearchResult declined;
            declined.hitsDeclined = true;
            return declined;
        }
        if (request.kind == SearchRequest::Kind::Vector) {
            QMutexLocker lock(&m_mutex);
            m_searches << request.filter;
        }
        return m_inner->find(request);
    }
    std::vector<std::optional<MemoryRecord>> read(const ReadRequest &request) override
    {
        if (!request.keys.empty())
            return readHits(request.keys);
        return m_inner->read(request);
    }
    std::vector<MemoryRecord> browse(const ListRequest &request) override { return m_inner->browse(request); }
    Aggregate aggregate(const AggregateRequest &request) override
    {
        if (request.kind == AggregateRequest::Kind::ScopeSamples) {
            QMutexLocker lock(&m_mutex);
            m_samplings << request.filter;
        }
        return m_inner->aggregate(request);
    }
    std::vector<std::optional<MemoryRecord>> lookup(const LookupRequest &request) override { return m_inner->lookup(request); }
    void touch(const QStringList &ids, const QDateTime &at) override { m_inner->touch(ids, at); }
    std::vector<HistoryEntry> history(const QString &recordId) override { return m_inner->history(recordId); }
    StateResult state(const StateRequest &request) override { return m_inner->state(request); }
    StoreCheck inspect(InspectMode mode) override { return m_inner->inspect(mode); }
    void close() override { m_inner->close(); }

protected:
    // The records of hits (read() with keys), counted.
    virtual std::vector<std::optional<MemoryRecord>> readHits(const std::vector<qint64> &keys)
    {
        {
            QMutexLocker lock(&m_mutex);
            m_hitRecordsRead += int(keys.size());
        }
        ReadRequest r;
        r.keys = keys;
        return m_inner->read(r);
    }
    StorageBackend &inner() { return *m_inner; }

private:
    std::unique_ptr<StorageBackend> m_inner;
    mutable QMutex m_mutex;
    QList<RecordFilter> m_searches;
    QList<RecordFilter> m_samplings;
    bool m_twoPhase = false;
    int m_hitRecordsRead = 0;
};

} // namespace mneme::test
