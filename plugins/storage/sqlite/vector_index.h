#pragma once

#include "core/record_filter.h"

#include <QHash>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

namespace mneme {

// The in-process copy of every stored embedding of one SQLite store, with the record attributes that
// RecordFilter tests (scope, categories, source, privacy, creation time, id), so a search scores and
// filters without touching the database. Vectors live in one contiguous float array; a removal moves
// the last slot into the hole. Not thread-safe: SqliteStorage guards it with its own mutex.
class VectorIndex
{
public:
    // The attributes of one record that filters look at.
    struct Item
    {
        qint64 rowid = 0;
        QString id;
        QString scope;
        QStringList categories;
        QString source;
        bool isPrivate = false;
        bool hasCreated = false;
        qint64 createdMs = 0;     // milliseconds since the epoch, UTC
    };

    struct Hit
    {
        qint64 rowid = 0;
        double score = 0;         // cosine similarity
    };

    // Empties the index and fixes the vector length of what it will hold; marks it loaded.
    void reset(int dimension);
    // Forgets everything and marks it not loaded (the next search reloads it).
    void invalidate();
    bool isLoaded() const { return m_loaded; }
    int dimension() const { return m_dimension; }
    std::size_t size() const { return m_rowids.size(); }

    // Adds the item or replaces the one with the same rowid. `vector` has dimension() floats.
    void upsert(const Item &item, const float *vector);
    // Replaces the attributes of an indexed record, keeping its vector; no-op when it is not indexed.
    void updateAttributes(const Item &item);
    void remove(qint64 rowid);
    bool contains(qint64 rowid) const { return m_slotOfRow.contains(rowid); }
    // The stored vector of a record (dimension() floats), or nullptr.
    const float *vector(qint64 rowid) const;

    // The records the filter's scope, category, id, time, source and privacy conditions select,
    // by descending cosine similarity to `query` (ties: lower rowid first). Metadata conditions are
    // not looked at. At most `limit` hits; limit < 0 returns every selected record, ranked.
    std::vector<Hit> search(const float *query, const RecordFilter &filter, int limit) const;

private:
    int intern(QHash<QString, int> &table, QStringList &names, const QString &value);
    void fill(std::size_t slot, const Item &item);

    bool m_loaded = false;
    int m_dimension = 0;

    std::vector<float> m_vectors;           // size() * dimension()
    std::vector<float> m_norms;
    std::vector<qint64> m_rowids;
    std::vector<QString> m_ids;
    std::vector<int> m_scope;               // index into m_scopeNames
    std::vector<std::vector<int>> m_cats;   // indexes into m_categoryNames
    std::vector<int> m_source;              // index into m_sourceNames
    std::vector<std::uint8_t> m_private;
    std::vector<qint64> m_created;          // INT64_MIN when unknown
    QHash<qint64, std::size_t> m_slotOfRow;
    QHash<QString, std::size_t> m_slotOfId;

    QHash<QString, int> m_scopeIds;
    QStringList m_scopeNames;
    QHash<QString, int> m_categoryIds;
    QStringList m_categoryNames;
    QHash<QString, int> m_sourceIds;
    QStringList m_sourceNames;
};

} // namespace mneme
