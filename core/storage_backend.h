#pragma once

#include <mneme/core/export.h>
#include <mneme/core/graph_store.h>
#include <mneme/core/history_entry.h>
#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/record_filter.h>
#include <mneme/core/record_order.h>
#include <mneme/core/scope_info.h>

#include <QMap>
#include <QString>
#include <QStringList>
#include <QtPlugin>
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

struct MNEME_CORE_EXPORT ScoredRecord
{
    MemoryRecord record;
    double score = 0; // search: cosine similarity (-1..1); keywordSearch: BM25 relevance (>= 0, higher is better)
};

// A hit of a search before its record is read: what ranking needs of it (the two-phase search below).
struct MNEME_CORE_EXPORT SearchHit
{
    qint64 key = 0;    // the backend's handle of the record, for hitRecords()
    double score = 0;  // as ScoredRecord::score
    double cosine = 0; // cosine similarity to the query vector (keywordHits: 0 for a record without one)
    double importance = 0;
    QDateTime createdAt;
};

// A record that reads leave out because one of its columns cannot be read (the store was changed
// outside Mneme): what could be read, and the damaged columns as they are stored.
struct MNEME_CORE_EXPORT DamagedRecord
{
    MemoryRecord record;       // every readable field, with the embedding; a damaged field is empty
    QString problem;           // what is wrong: "its categories are not a JSON array"
    Json raw = Json::object(); // the damaged columns as their stored text: {"categories": "..."}
};

// What StorageBackend::check() found, and what its repair did.
struct MNEME_CORE_EXPORT StoreCheck
{
    QStringList problems; // one sentence each, saying what is wrong and what to do
    QStringList repaired; // what the repair rebuilt
    std::vector<DamagedRecord> damaged;
    bool ok() const { return problems.isEmpty() && damaged.empty(); }
};

// The embedder a store was written with (Mneme decision 10).
struct MNEME_CORE_EXPORT EmbedderBinding
{
    QString embedderId; // "builtin/hash-v1", "openai/text-embedding-3-small", ...
    int dimension = 0;
};

// A storage backend keeps records, their embeddings, a lexical index and the history of every change.
// Implementations are thread-safe: Memory calls them from its writer thread and from recall threads
// at once. Every method throws mneme::Error on failure and leaves the store as it was.
class MNEME_CORE_EXPORT StorageBackend
{
public:
    virtual ~StorageBackend() = default;

    // Where the data lives, for messages ("/home/me/.mneme/memory.db").
    virtual QString location() const = 0;
    // The schema version this store is at.
    virtual int schemaVersion() const = 0;

    // The embedder recorded in the store, if any record was ever embedded into it.
    virtual std::optional<EmbedderBinding> embedderBinding() const = 0;
    // Records `binding` when the store has none; throws Error(EmbedderMismatch) naming both
    // embedders, `mneme reset` and `mneme import --reembed` when the store holds another.
    virtual void bindEmbedder(const EmbedderBinding &binding) = 0;

    // Inserts records (ids must be new) in one transaction; writes an ADD history entry for each.
    virtual void save(const std::vector<MemoryRecord> &records) = 0;
    // save() for records that must not be stored twice: a record identical to a stored one (same
    // content, scope, source, privacy and identities, as findExact() matches), or to an earlier one of the batch,
    // is not inserted. Returns, for each record, the id it is stored under: its own, or that of the
    // identical record. A backend that can look up and insert in one transaction does, so that
    // writers saving the same content at once (other processes) store it once; this default looks up
    // first, then saves, and may not.
    virtual std::vector<QString> saveUnlessIdentical(const std::vector<MemoryRecord> &records)
    {
        std::vector<QString> ids(records.size());
        std::vector<MemoryRecord> fresh;
        const std::vector<std::optional<MemoryRecord>> found = findExact(records);
        const auto identityAt = [](const MemoryRecord &r, const QString &key) {
            const std::string k = key.toStdString();
            return r.metadata.is_object() && r.metadata.contains(k) ? r.metadata[k] : Json();
        };
        const auto sameIdentity = [&](const MemoryRecord &a, const MemoryRecord &b) {
            for (const QString &key : RecordFilter::identityKeys())
                if (identityAt(a, key) != identityAt(b, key))
                    return false;
            return true;
        };
        for (std::size_t i = 0; i < records.size(); ++i) {
            const MemoryRecord &r = records[i];
            for (std::size_t k = 0; k < i && !found[i] && ids[i].isEmpty(); ++k) {
                const MemoryRecord &e = records[k];
                if (e.content == r.content && e.scope == r.scope && e.source == r.source && e.isPrivate == r.isPrivate
                    && sameIdentity(e, r))
                    ids[i] = ids[k];
            }
            if (found[i])
                ids[i] = found[i]->id;
            else if (ids[i].isEmpty()) {
                ids[i] = r.id;
                fresh.push_back(r);
            }
        }
        save(fresh);
        return ids;
    }
    // Replaces the record with the same id in one transaction (UPDATE history entry). An empty
    // embedding keeps the stored one. Throws Error(NotFound) for an unknown id.
    virtual void update(const MemoryRecord &record) = 0;
    // Deletes what the filter selects (DELETE history entries); returns how many. An empty filter
    // deletes everything.
    virtual int remove(const RecordFilter &filter) = 0;
    // Deletes what is at or below scopePrefix ("/" = everything) and returns how many. A reset of
    // everything also clears the history and the embedder binding, so a store can be rebuilt with
    // another embedder; a reset of a sub-tree writes DELETE history entries like remove().
    virtual int reset(const QString &scopePrefix) = 0;
    // Re-inserts a record exactly as given (same id and times): used to undo a delete.
    virtual void restore(const MemoryRecord &record) = 0;

    // Nearest records to `query` by cosine similarity among those the filter selects, best first,
    // without their embeddings (get(id, true) reads one).
    virtual std::vector<ScoredRecord> search(const Embedding &query, const RecordFilter &filter, int limit) = 0;
    // Records matching the words of `text` (full-text, BM25), best first. Returns nothing for a
    // text with no searchable word. A word found in a record's context (MemoryRecord::context)
    // counts `contextWeight` times as much as one found in its content (0: the content alone).
    virtual std::vector<ScoredRecord> keywordSearch(const QString &text, const RecordFilter &filter, int limit,
                                                    double contextWeight = 0) = 0;

    // The two-phase search, for a caller that ranks many hits and keeps a few: the hits of search()
    // and keywordSearch() with their importance and creation time instead of their records, then
    // the records of the hits it keeps. Hits do not carry access counts. A backend that cannot
    // answer without reading every record returns nothing (the default), and so may a backend for
    // some filters (one on metadata); the caller then uses search() and keywordSearch().
    // keywordHits() gives each hit its cosine similarity to `query` as well.
    virtual std::optional<std::vector<SearchHit>> searchHits(const Embedding &query, const RecordFilter &filter, int limit)
    {
        Q_UNUSED(query)
        Q_UNUSED(filter)
        Q_UNUSED(limit)
        return std::nullopt;
    }
    virtual std::optional<std::vector<SearchHit>> keywordHits(const QString &text, const Embedding &query,
                                                              const RecordFilter &filter, int limit, double contextWeight = 0)
    {
        Q_UNUSED(text)
        Q_UNUSED(query)
        Q_UNUSED(filter)
        Q_UNUSED(limit)
        Q_UNUSED(contextWeight)
        return std::nullopt;
    }
    // The records of hits (without embeddings), in the order of `keys`; nothing for one deleted since.
    virtual std::vector<std::optional<MemoryRecord>> hitRecords(const std::vector<qint64> &keys)
    {
        return std::vector<std::optional<MemoryRecord>>(keys.size());
    }

    virtual std::optional<MemoryRecord> get(const QString &id, bool withEmbedding = false) = 0;
    // The records the filter selects, newest first (created_at descending, then id).
    virtual std::vector<MemoryRecord> list(const RecordFilter &filter, int limit, int offset) = 0;
    // The records the filter selects in `order`, `limit` of them from `offset` (a negative limit: all),
    // without their embeddings: for browsing a store page by page. The default sorts what list()
    // gives, reading every selected record; a backend that can sort where it stores overrides it.
    virtual std::vector<MemoryRecord> listOrdered(const RecordFilter &filter, const RecordOrder &order, int limit, int offset)
    {
        if (order.isNewestFirst())
            return list(filter, limit, offset);
        std::vector<MemoryRecord> all = list(filter, -1, 0);
        std::stable_sort(all.begin(), all.end(), [&](const MemoryRecord &a, const MemoryRecord &b) { return order.before(a, b); });
        const std::size_t from = std::min(all.size(), std::size_t(std::max(offset, 0)));
        const std::size_t to = limit < 0 ? all.size() : std::min(all.size(), from + std::size_t(limit));
        return std::vector<MemoryRecord>(std::make_move_iterator(all.begin() + from), std::make_move_iterator(all.begin() + to));
    }
    // A record with exactly this content, scope, source and privacy, if one exists.
    virtual std::optional<MemoryRecord> findExact(const QString &content, const QString &scope,
                                                  const QString &source, bool isPrivate) = 0;
    // For each of `records`, one stored with exactly its content, scope, source and privacy, and the
    // same identities (the metadata keys RecordFilter::identityKeys(), a missing one missing), if one
    // exists: findExact() for a whole batch, in one read of the store.
    virtual std::vector<std::optional<MemoryRecord>> findExact(const std::vector<MemoryRecord> &records) = 0;
    // For each of `records`, one stored with exactly its content, source, privacy and identities in
    // any scope at or below `scopePrefix` (the record's own scope is not looked at), if one exists: the
    // lookup of a batch whose scopes are still to be chosen. The default looks in each record's own
    // scope only (findExact()).
    virtual std::vector<std::optional<MemoryRecord>> findSameContent(const std::vector<MemoryRecord> &records,
                                                                     const QString &scopePrefix)
    {
        Q_UNUSED(scopePrefix)
        return findExact(records);
    }
    // Up to `perScope` of the newest records (with their embeddings) of each scope among those the
    // filter selects, grouped by scope (scopes sorted, newest first within each): the exemplars a
    // batch's offline analysis compares new records with. The default lists and reads them one by one.
    virtual std::vector<MemoryRecord> scopeSamples(const RecordFilter &filter, int perScope)
    {
        std::map<QString, std::vector<MemoryRecord>> byScope;
        for (const MemoryRecord &r : list(filter, -1, 0)) {
            std::vector<MemoryRecord> &taken = byScope[r.scope];
            if (int(taken.size()) < perScope)
                if (std::optional<MemoryRecord> full = get(r.id, true))
                    taken.push_back(std::move(*full));
        }
        std::vector<MemoryRecord> out;
        for (auto &[scope, records] : byScope)
            for (MemoryRecord &r : records)
                out.push_back(std::move(r));
        return out;
    }
    virtual int count(const RecordFilter &filter) = 0;
    // Statistics of `scope` and below, counting only the records `visible` selects (its scopes are
    // ignored; an empty filter: every record).
    virtual ScopeInfo scopeInfo(const QString &scope, const RecordFilter &visible) = 0;
    // Immediate child scopes of `parent` that hold records `visible` selects (directly or below),
    // sorted (its scopes are ignored).
    virtual QStringList childScopes(const QString &parent, const RecordFilter &visible) = 0;
    // Category -> number of records among those the filter selects.
    virtual QMap<QString, int> categories(const RecordFilter &filter) = 0;
    // Sets last_accessed = at and increments access_count (no history entry).
    virtual void touch(const QStringList &ids, const QDateTime &at) = 0;
    // Every change of one record, oldest first.
    virtual std::vector<HistoryEntry> history(const QString &recordId) = 0;

    // Small named JSON documents kept beside the records (Memory keeps a conversation's rolling
    // summary and last messages here). Keys are non-empty, at most 200 characters, without control
    // characters; another key throws Error(InvalidArgument). State has no history: a reset of
    // everything clears it, a reset of a sub-tree leaves it.
    // The document stored under `key`, or nothing when there is none.
    virtual std::optional<Json> readState(const QString &key) = 0;
    // Stores `value` (any JSON) under `key`, replacing what was there, in a transaction of its own;
    // a null value deletes the key (deleting a missing key is no error).
    virtual void writeState(const QString &key, const Json &value) = 0;
    // The keys that start with `prefix` (empty: every key), sorted.
    virtual QStringList stateKeys(const QString &prefix) = 0;

    // Records that reads leave out because a column of theirs cannot be read, oldest first: to
    // export what is left of them, and to report them.
    virtual std::vector<DamagedRecord> damagedRecords() { return {}; }
    // Checks the store: its file, the derived data (keyword index, lookup tables, vector index) and
    // every record. With `repair`, rebuilds the derived data from the records; records themselves are
    // never changed (a damaged one is reported). A backend without a check says so in `problems`.
    virtual StoreCheck check(bool repair)
    {
        Q_UNUSED(repair)
        StoreCheck c;
        c.problems << QStringLiteral("the storage backend at %1 has no integrity check").arg(location());
        return c;
    }

    // The graph half of the store (graph memory: core/graph_store.h), owned by the backend and valid
    // until it is destroyed; null for a backend that keeps no graph.
    virtual GraphStore *graph() { return nullptr; }

    // Flushes and releases the store; later calls throw Error(Storage).
    virtual void close() = 0;
};

// Builds storage backends from configuration. A plugin answers to the keys its metadata names.
// Config keys common to file backends: "path" (file of the store, created with its folder when
// missing), "read_only" (open without writing).
class MNEME_CORE_EXPORT StorageFactory
{
public:
    virtual ~StorageFactory() = default;
    virtual std::unique_ptr<StorageBackend> createStorage(const QString &key, const Json &config) = 0;
};

} // namespace mneme

#define MNEME_STORAGE_FACTORY_IID "org.mneme.StorageFactory/1.5"
Q_DECLARE_INTERFACE(mneme::StorageFactory, MNEME_STORAGE_FACTORY_IID)
