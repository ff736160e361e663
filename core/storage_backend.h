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
#include <span>
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

// What a backend is and can do (StorageBackend::info()).
struct MNEME_CORE_EXPORT StorageInfo
{
    enum Capability : unsigned {
        // find() answers SearchRequest::Output::Hits (the two-phase search) and read() reads hit keys.
        SearchHits = 1u << 0,
        // write(InsertUnlessIdentical) looks up and inserts in one transaction, so writers (other
        // processes, other hosts) saving the same content at once store it once.
        AtomicDedup = 1u << 1,
        // inspect() checks the store (else its StoreCheck says there is no check).
        Check = 1u << 2,
        // Several processes may open the store at once (on one host: a SQLite file; on several: a server).
        SharedWriters = 1u << 3,
        // The backend keeps graph memory: graph() returns its GraphStore (core/graph_store.h).
        Graph = 1u << 4,
    };
    QString location; // where the data lives, for messages ("/home/me/.mneme/memory.db"); never a password
    int schemaVersion = 0;
    std::optional<EmbedderBinding> binding; // the embedder recorded in the store, if any
    unsigned capabilities = 0;
    bool has(Capability c) const { return (capabilities & c) != 0; }
};

// A change of the store: one kind of operation, on a batch of records where it takes records.
struct MNEME_CORE_EXPORT WriteRequest
{
    enum class Kind {
        // Inserts `records` (ids must be new); an ADD history entry each.
        Insert,
        // Insert, except a record identical to a stored one (same content, scope, source, privacy and
        // identities, as lookup() matches) or to an earlier one of the batch: WriteResult::ids has, for
        // each record, the id it is stored under, its own or the identical record's.
        InsertUnlessIdentical,
        // Replaces the stored record with the same id (UPDATE history entry); an empty embedding keeps
        // the stored one. One record; Error(NotFound) for an unknown id.
        Update,
        // Re-inserts one record exactly as given (same id and times): the undo of a delete.
        Restore,
        // Deletes what `filter` selects (DELETE history entries); an empty filter deletes everything.
        // WriteResult::count: how many.
        Remove,
        // Deletes what is at or below `scopePrefix` ("/": everything). A reset of everything also clears
        // the history, the state and the embedder binding (a store rebuilt with another embedder); a
        // reset of a sub-tree writes DELETE history entries like Remove. WriteResult::count: how many.
        Reset,
        // Records `binding` when the store has none; Error(EmbedderMismatch) naming both embedders,
        // `mneme reset` and `mneme import --reembed` when the store holds another.
        BindEmbedder,
    };
    Kind kind = Kind::Insert;
    std::span<const MemoryRecord> records; // owned by the caller for the call
    RecordFilter filter;
    QString scopePrefix;
    EmbedderBinding binding;
};

struct MNEME_CORE_EXPORT WriteResult
{
    std::vector<QString> ids; // InsertUnlessIdentical
    int count = 0;            // Remove, Reset: records deleted
};

// A search: nearest by cosine similarity to `vector`, or the records matching the words of `text`
// (full-text, BM25, evidence normalised to 0..1 as the SQLite keyword signal).
struct MNEME_CORE_EXPORT SearchRequest
{
    enum class Kind {
        Vector,
        Keyword
    };
    enum class Output {
        Records, // ScoredRecords without embeddings
        Hits,    // SearchHits: the ranking fields only; read() reads the kept ones (SearchHits capability)
    };
    Kind kind = Kind::Vector;
    Output output = Output::Records;
    Embedding vector; // Vector: the query (required); Keyword hits: each hit's cosine to it (may be empty)
    QString text;     // Keyword
    RecordFilter filter;
    int limit = 10; // <= 0: nothing
    // Keyword: a word found in a record's context (MemoryRecord::context) counts this many times as much
    // as one found in its content (0: the content alone).
    double contextWeight = 0;
};

// How a vector search was answered (SearchResult::answer), for a recall's stats (RecallStats). A
// keyword search's answer has a detail alone, when the backend gives one ("keyword index of 3,225
// records").
struct MNEME_CORE_EXPORT VectorSearchAnswer
{
    enum class Method {
        Unknown, // the backend does not say (or the search was not a vector search)
        Exact,   // every vector the filter selects was compared with the query
        Index,   // an approximate index (an HNSW graph) answered: it may miss a nearer record
    };
    Method method = Method::Unknown;
    // An index is being built (in the background, or by a bulk load): until it is, searches are
    // answered exactly rather than made to wait.
    bool indexBuilding = false;
    // In words, for people: "HNSW graph of 3,225 records", "exact scan of 4,000 records: the HNSW graph
    // is being built".
    QString detail;
};

struct MNEME_CORE_EXPORT SearchResult
{
    std::vector<ScoredRecord> records; // Output::Records, best first
    std::vector<SearchHit> hits;       // Output::Hits, best first
    // Output::Hits from a backend without the SearchHits capability, or for a filter with metadata
    // conditions the backend judges on the records only: ask for records instead. A backend with the
    // capability never sets it for a filter without metadata conditions.
    bool hitsDeclined = false;
    VectorSearchAnswer answer; // how it was answered (Kind::Keyword: its detail alone, when the backend gives one)
};

// Reads of records by id or by hit key, in the order asked; nothing for one that is not stored.
struct MNEME_CORE_EXPORT ReadRequest
{
    QStringList ids;
    std::vector<qint64> keys; // SearchHit::key (without embeddings)
    bool withEmbedding = false;
};

// A page of the records the filter selects, in `order` (ties by id), without embeddings.
struct MNEME_CORE_EXPORT ListRequest
{
    RecordFilter filter;
    RecordOrder order; // default: newest first
    int limit = -1;    // < 0: all
    int offset = 0;
};

// Figures over the records a filter selects.
struct MNEME_CORE_EXPORT AggregateRequest
{
    enum class Kind {
        Count,        // Aggregate::count of `filter`
        ScopeInfo,    // statistics of `scope` and below, counting what `filter` selects (its scopes ignored)
        ChildScopes,  // immediate child scopes of `scope` holding records `filter` selects (its scopes ignored), sorted
        Categories,   // category -> records of `filter`
        ScopeSamples, // up to `perScope` of the last stored records with an embedding of each scope of `filter` (with it), scopes sorted
    };
    Kind kind = Kind::Count;
    RecordFilter filter;
    QString scope;
    int perScope = 0;
};

struct MNEME_CORE_EXPORT Aggregate
{
    int count = 0;
    ScopeInfo scopeInfo;
    QStringList scopes;
    QMap<QString, int> categories;
    std::vector<MemoryRecord> samples;
};

// Stored records identical to given ones: same content, source and privacy, and either the same scope
// or (with `anyScopeBelow`) any scope at or below it; with `identities`, the same metadata identities
// (RecordFilter::identityKeys(), a missing one missing) too.
struct MNEME_CORE_EXPORT LookupRequest
{
    std::span<const MemoryRecord> records; // owned by the caller for the call
    std::optional<QString> anyScopeBelow;
    bool identities = true;
};

// Small named JSON documents kept beside the records (a conversation's rolling summary). Keys are
// non-empty, at most 200 characters, without control characters (else Error(InvalidArgument)). State
// has no history: a reset of everything clears it, a reset of a sub-tree leaves it.
struct MNEME_CORE_EXPORT StateRequest
{
    enum class Kind {
        Read,  // StateResult::value: the document under `key`, if any
        Write, // stores `value` under `key` in a transaction of its own; a null value deletes it
        Keys,  // StateResult::keys: the keys starting with `key` (empty: all), sorted
    };
    Kind kind = Kind::Read;
    QString key;
    Json value;

    static constexpr int kMaxKeyLength = 200;
    // Throws Error(InvalidArgument) saying what is wrong with a key a backend is asked to read or write.
    static void checkKey(const QString &key);
};

struct MNEME_CORE_EXPORT StateResult
{
    std::optional<Json> value;
    QStringList keys;
};

// A storage backend keeps records, their embeddings, a lexical index, the history of every change,
// the embedder binding and state documents. Its contract is the twelve operations below; the inline
// functions after them are conveniences built on them, for callers.
//
// Threads: implementations are thread-safe. Memory calls them from its writer thread and from recall
// threads at once; a backend serialises or snapshots as it needs (each read sees one committed state
// of the store). Errors: every operation throws mneme::Error on failure and leaves the store as it
// was (each write is one transaction); none puts a password or other secret into an error or a log.
// After close() every operation throws Error(Storage).
class MNEME_CORE_EXPORT StorageBackend
{
public:
    virtual ~StorageBackend() = default;

    // --- The operations a backend implements ---

    virtual StorageInfo info() const = 0;
    virtual WriteResult write(const WriteRequest &request) = 0;
    virtual SearchResult find(const SearchRequest &request) = 0;
    virtual std::vector<std::optional<MemoryRecord>> read(const ReadRequest &request) = 0;
    virtual std::vector<MemoryRecord> browse(const ListRequest &request) = 0;
    virtual Aggregate aggregate(const AggregateRequest &request) = 0;
    // One answer per record of the request, in its order.
    virtual std::vector<std::optional<MemoryRecord>> lookup(const LookupRequest &request) = 0;
    // Sets last_accessed = at and increments access_count (no history entry).
    virtual void touch(const QStringList &ids, const QDateTime &at) = 0;
    // Every change of one record, oldest first.
    virtual std::vector<HistoryEntry> history(const QString &recordId) = 0;
    virtual StateResult state(const StateRequest &request) = 0;
    enum class InspectMode {
        Damaged, // StoreCheck::damaged only: records reads leave out because a column cannot be read
        Check,   // the store, its derived data (keyword index, lookup tables, vector index) and every record
        Repair,  // Check, rebuilding the derived data from the records (records are never changed)
    };
    virtual StoreCheck inspect(InspectMode mode) = 0;
    // Flushes and releases the store.
    virtual void close() = 0;
    // The graph half of the store (graph memory: core/graph_store.h), owned by the backend and valid
    // until it is destroyed; null for a backend without the Graph capability.
    virtual GraphStore *graph() { return nullptr; }

    // --- Conveniences over the operations ---

    QString location() const { return info().location; }
    int schemaVersion() const { return info().schemaVersion; }
    std::optional<EmbedderBinding> embedderBinding() const { return info().binding; }
    void bindEmbedder(const EmbedderBinding &binding) { write(writeOf(WriteRequest::Kind::BindEmbedder, {}, binding)); }

    void save(const std::vector<MemoryRecord> &records) { write(writeOf(WriteRequest::Kind::Insert, records)); }
    std::vector<QString> saveUnlessIdentical(const std::vector<MemoryRecord> &records)
    {
        return write(writeOf(WriteRequest::Kind::InsertUnlessIdentical, records)).ids;
    }
    void update(const MemoryRecord &record) { write(writeOf(WriteRequest::Kind::Update, {&record, 1})); }
    void restore(const MemoryRecord &record) { write(writeOf(WriteRequest::Kind::Restore, {&record, 1})); }
    int remove(const RecordFilter &filter)
    {
        WriteRequest w = writeOf(WriteRequest::Kind::Remove);
        w.filter = filter;
        return write(w).count;
    }
    int reset(const QString &scopePrefix)
    {
        WriteRequest w = writeOf(WriteRequest::Kind::Reset);
        w.scopePrefix = scopePrefix;
        return write(w).count;
    }

    // A vector search; `answer`, when given, receives how it was answered (SearchResult::answer).
    std::vector<ScoredRecord> search(const Embedding &query, const RecordFilter &filter, int limit,
                                     VectorSearchAnswer *answer = nullptr)
    {
        SearchResult r = find(searchOf(SearchRequest::Kind::Vector, SearchRequest::Output::Records, query, {}, filter, limit, 0));
        if (answer)
            *answer = std::move(r.answer);
        return std::move(r.records);
    }
    // A keyword search; `answer`, when given, receives the backend's account of how it was answered
    // (SearchResult::answer: its detail alone, when the backend gives one).
    std::vector<ScoredRecord> keywordSearch(const QString &text, const RecordFilter &filter, int limit, double contextWeight = 0,
                                            VectorSearchAnswer *answer = nullptr)
    {
        SearchResult r = find(searchOf(SearchRequest::Kind::Keyword, SearchRequest::Output::Records, {}, text, filter, limit, contextWeight));
        if (answer)
            *answer = std::move(r.answer);
        return std::move(r.records);
    }
    // The two-phase search: hits, then hitRecords() of the kept ones. Nothing when the backend declines
    // (SearchResult::hitsDeclined).
    std::optional<std::vector<SearchHit>> searchHits(const Embedding &query, const RecordFilter &filter, int limit,
                                                     VectorSearchAnswer *answer = nullptr)
    {
        return hitsOf(searchOf(SearchRequest::Kind::Vector, SearchRequest::Output::Hits, query, {}, filter, limit, 0), answer);
    }
    std::optional<std::vector<SearchHit>> keywordHits(const QString &text, const Embedding &query, const RecordFilter &filter,
                                                      int limit, double contextWeight = 0, VectorSearchAnswer *answer = nullptr)
    {
        return hitsOf(searchOf(SearchRequest::Kind::Keyword, SearchRequest::Output::Hits, query, text, filter, limit, contextWeight),
                      answer);
    }
    std::optional<MemoryRecord> get(const QString &id, bool withEmbedding = false)
    {
        ReadRequest r;
        r.ids = QStringList{id};
        r.withEmbedding = withEmbedding;
        std::vector<std::optional<MemoryRecord>> out = read(r);
        return out.empty() ? std::nullopt : std::move(out.front());
    }
    std::vector<std::optional<MemoryRecord>> hitRecords(const std::vector<qint64> &keys)
    {
        ReadRequest r;
        r.keys = keys;
        return read(r);
    }
    // Newest first (created_at descending, then id).
    std::vector<MemoryRecord> list(const RecordFilter &filter, int limit, int offset)
    {
        return browse(ListRequest{filter, RecordOrder(), limit, offset});
    }
    std::vector<MemoryRecord> listOrdered(const RecordFilter &filter, const RecordOrder &order, int limit, int offset)
    {
        return browse(ListRequest{filter, order, limit, offset});
    }
    // A record with exactly this content, scope, source and privacy (identities not compared).
    std::optional<MemoryRecord> findExact(const QString &content, const QString &scope, const QString &source, bool isPrivate)
    {
        MemoryRecord r;
        r.content = content;
        r.scope = scope;
        r.source = source;
        r.isPrivate = isPrivate;
        LookupRequest l;
        l.records = {&r, 1};
        l.identities = false;
        return std::move(lookup(l).front());
    }
    std::vector<std::optional<MemoryRecord>> findExact(const std::vector<MemoryRecord> &records)
    {
        LookupRequest l;
        l.records = records;
        return lookup(l);
    }
    std::vector<std::optional<MemoryRecord>> findSameContent(const std::vector<MemoryRecord> &records, const QString &scopePrefix)
    {
        LookupRequest l;
        l.records = records;
        l.anyScopeBelow = scopePrefix;
        return lookup(l);
    }
    int count(const RecordFilter &filter) { return aggregate(aggregateOf(AggregateRequest::Kind::Count, filter)).count; }
    ScopeInfo scopeInfo(const QString &scope, const RecordFilter &visible)
    {
        return aggregate(aggregateOf(AggregateRequest::Kind::ScopeInfo, visible, scope)).scopeInfo;
    }
    QStringList childScopes(const QString &parent, const RecordFilter &visible)
    {
        return aggregate(aggregateOf(AggregateRequest::Kind::ChildScopes, visible, parent)).scopes;
    }
    QMap<QString, int> categories(const RecordFilter &filter)
    {
        return aggregate(aggregateOf(AggregateRequest::Kind::Categories, filter)).categories;
    }
    std::vector<MemoryRecord> scopeSamples(const RecordFilter &filter, int perScope)
    {
        return aggregate(aggregateOf(AggregateRequest::Kind::ScopeSamples, filter, {}, perScope)).samples;
    }
    std::optional<Json> readState(const QString &key) { return state(StateRequest{StateRequest::Kind::Read, key, Json()}).value; }
    void writeState(const QString &key, const Json &value) { state(StateRequest{StateRequest::Kind::Write, key, value}); }
    QStringList stateKeys(const QString &prefix) { return state(StateRequest{StateRequest::Kind::Keys, prefix, Json()}).keys; }
    std::vector<DamagedRecord> damagedRecords() { return inspect(InspectMode::Damaged).damaged; }
    StoreCheck check(bool repair) { return inspect(repair ? InspectMode::Repair : InspectMode::Check); }

    // --- For implementations ---

    // Whether two records are identical for InsertUnlessIdentical: content, scope, source, privacy and
    // identities.
    static bool identical(const MemoryRecord &a, const MemoryRecord &b)
    {
        if (a.content != b.content || a.scope != b.scope || a.source != b.source || a.isPrivate != b.isPrivate)
            return false;
        const auto identityAt = [](const MemoryRecord &r, const QString &key) {
            const std::string k = key.toStdString();
            return r.metadata.is_object() && r.metadata.contains(k) ? r.metadata[k] : Json();
        };
        for (const QString &key : RecordFilter::identityKeys())
            if (identityAt(a, key) != identityAt(b, key))
                return false;
        return true;
    }
    // The page `limit` from `offset` (a negative limit: all) of `all` sorted in `order`: browse() for a
    // backend that sorts in memory.
    static std::vector<MemoryRecord> sortedPage(std::vector<MemoryRecord> all, const RecordOrder &order, int limit, int offset)
    {
        std::stable_sort(all.begin(), all.end(), [&](const MemoryRecord &a, const MemoryRecord &b) { return order.before(a, b); });
        const std::size_t from = std::min(all.size(), std::size_t(std::max(offset, 0)));
        const std::size_t to = limit < 0 ? all.size() : std::min(all.size(), from + std::size_t(limit));
        return std::vector<MemoryRecord>(std::make_move_iterator(all.begin() + from), std::make_move_iterator(all.begin() + to));
    }

private:
    std::optional<std::vector<SearchHit>> hitsOf(const SearchRequest &request, VectorSearchAnswer *answer = nullptr)
    {
        SearchResult r = find(request);
        if (answer)
            *answer = std::move(r.answer);
        if (r.hitsDeclined)
            return std::nullopt;
        return std::move(r.hits);
    }
    static WriteRequest writeOf(WriteRequest::Kind kind, std::span<const MemoryRecord> records = {}, EmbedderBinding binding = {})
    {
        WriteRequest w;
        w.kind = kind;
        w.records = records;
        w.binding = std::move(binding);
        return w;
    }
    static SearchRequest searchOf(SearchRequest::Kind kind, SearchRequest::Output output, const Embedding &vector,
                                  const QString &text, const RecordFilter &filter, int limit, double contextWeight)
    {
        SearchRequest s;
        s.kind = kind;
        s.output = output;
        s.vector = vector;
        s.text = text;
        s.filter = filter;
        s.limit = limit;
        s.contextWeight = contextWeight;
        return s;
    }
    static AggregateRequest aggregateOf(AggregateRequest::Kind kind, const RecordFilter &filter, const QString &scope = {},
                                        int perScope = 0)
    {
        AggregateRequest a;
        a.kind = kind;
        a.filter = filter;
        a.scope = scope;
        a.perScope = perScope;
        return a;
    }
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

#define MNEME_STORAGE_FACTORY_IID "org.mneme.StorageFactory/2.1"
Q_DECLARE_INTERFACE(mneme::StorageFactory, MNEME_STORAGE_FACTORY_IID)
