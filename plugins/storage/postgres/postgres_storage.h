#pragma once

#include "keyword_index.h"
#include "plugins/storage/common/index_build.h"
#include "plugins/storage/common/read_cache.h"
#include "plugins/storage/common/vector_index.h"
#include <mneme/core/storage_backend.h>

#include <QByteArray>
#include <QHash>
#include <QMutex>
#include <QReadWriteLock>
#include <QString>
#include <QWaitCondition>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

struct pg_conn;
struct pg_result;

namespace mneme::pg {
class Result;
}

namespace mneme {

class PostgresGraphStore;

// A store on a PostgreSQL server (15 or later), shared by processes on several hosts. The password is
// never in the configuration: libpq reads it from PGPASSWORD or the .pgpass file (PGPASSFILE), and
// no error, log line, index file or its name carries it.
//
// Tables (mneme_ prefix, in the connection's search_path): mneme_meta (schema_version, embedder,
// store_id, generation), mneme_records (a row per record; scope indexed with text_pattern_ops for
// prefix searches; the content's and the context's words as tsvector columns, the server's parse of
// them; md5 of the content for the lookup of identical records), mneme_history (every change), mneme_state
// (named JSON documents), mneme_changes (the change log: a row per write transaction, listing the
// row ids it changed, its seq handed out under a transaction-level advisory lock so that seq order is
// commit order; its newest change_log_keep entries kept, meta changes_pruned_through the last seq
// deleted).
//
// Vectors are float32 bytea in the records table. With pgvector (vector_search, postgres_pgvector.cpp)
// the server searches them, in a column of its vector type filled from them; otherwise each process
// keeps them in a VectorIndex (exact
// scan while small, an HNSW graph past ann_threshold, built in the background), persisted in a file of
// index_dir and caught up from mneme_changes before every search: a search sees every write committed
// before it started, on any host. The words are kept the same way, in a KeywordIndex (not persisted:
// read from the words columns by the first keyword search), caught up before every keyword search.
//
// Threads and locks (a thread takes them in this order only):
// 1. a connection lease (Lease): every operation takes one connection of the pool for its call (at
//    most pool_size, opened on demand; a thread holds at most one); m_poolMutex guards m_idle and
//    m_open and is held only to hand a connection out or back (m_poolFree: one was handed back).
// 2. one of m_indexLock (m_index, every m_index* member, m_build, m_stats: searches hold it to read,
//    the catch-up, the load and the build's hand-over to write), m_keywordLock (m_keywords and every
//    m_keyword* member: keyword searches hold it to read, its catch-up and load to write) or
//    m_readMutex (m_readCache, m_readAt), never two. Nothing waits for a lease while holding them, so
//    they never deadlock with the pool.
// m_vectorMutex (m_vectorDimension) is taken alone, to read or set that number, never while waiting.
// The listener thread (m_listener, listenForChanges(): its own connection, outside the pool) takes a
// lease and m_indexLock, then m_keywordLock, like an operation; close() stops and joins it. The graph
// build thread (IndexBuild) takes no lock: it owns its copy of the index until it marks itself done.
// The graph tables (mneme_graph_*) are PostgresGraphStore's (postgres_graph_store.h), reached through
// graph(); it takes a lease per call like an operation, and m_graphMutex only to create m_graph.
class PostgresStorage : public StorageBackend
{
public:
    struct Options
    {
        QString dsn; // a libpq connection string or URI, without a password
        int connectTimeoutS = 10;
        int poolSize = 4; // connections at most, opened on demand; reads run in parallel on them
        // Where the vector index file is kept (a file per server, database and schema); empty: the
        // user's cache folder ($XDG_CACHE_HOME or ~/.cache)/mneme/postgres.
        QString indexDir;
        // From this many records with vectors on, searches use an HNSW graph (built on background
        // threads while searches scan exactly), written to the index file.
        int annThreshold = 10000;
        // The change log keeps this many of its newest entries: writers delete older ones (a tenth of
        // this at a time), and a process whose index is older than the oldest kept entry reloads it.
        int changeLogKeep = 10000;
        // A thread with a connection of its own LISTENs for other processes' changes and applies them
        // to the loaded indexes as they are committed (searches check the change log either way).
        bool listen = true;
        // Where vector searches run. Auto: on the server with pgvector when the database has the
        // `vector` extension installed, else in the per-process index. Pgvector: always on the server
        // (creating the extension when the server has it and the role may; an error when it cannot).
        // Local: always in the per-process index.
        enum class VectorSearch {
            Auto,
            Pgvector,
            Local
        };
        VectorSearch vectorSearch = VectorSearch::Auto;
        // Reads {"dsn", "connect_timeout_s", "pool_size", "index_dir", "ann_threshold", "change_log_keep",
        // "listen", "vector_search": "auto" | "pgvector" | "local"}; throws Error(InvalidArgument) naming the key for a missing dsn, an unknown key, a
        // value of the wrong type, or a dsn that holds a password.
        static Options fromJson(const Json &config);
    };

    // What the vector index is and where it came from (for tests, benchmarks and diagnostics).
    struct IndexStats
    {
        bool loaded = false;
        bool approximate = false; // an HNSW graph, not the exact scan
        bool building = false;    // a graph is being built in the background
        std::size_t vectors = 0;  // records with a vector in the index
        qint64 seq = 0;           // the last change-log seq the index reflects
        qint64 fullLoads = 0;     // loads of every vector from the server
        qint64 fileLoads = 0;     // index files read and accepted
        qint64 replayed = 0;      // change-log entries applied
        qint64 builds = 0;        // graphs built
        qint64 saves = 0;         // index files written
        qint64 notified = 0;      // catch-ups the listener thread made on a notification
    };

    static int latestSchemaVersion();

    // Connects and brings the schema to the latest version (under an advisory lock, so processes
    // opening a new database at once create it once). Throws Error: Storage when the server cannot be
    // reached or refuses the login, SchemaTooNew for a database written by a newer Mneme.
    explicit PostgresStorage(const Options &options);
    ~PostgresStorage() override;
    PostgresStorage(const PostgresStorage &) = delete;
    PostgresStorage &operator=(const PostgresStorage &) = delete;

    StorageInfo info() const override;
    WriteResult write(const WriteRequest &request) override;
    SearchResult find(const SearchRequest &request) override;
    std::vector<std::optional<MemoryRecord>> read(const ReadRequest &request) override;
    std::vector<MemoryRecord> browse(const ListRequest &request) override;
    Aggregate aggregate(const AggregateRequest &request) override;
    std::vector<std::optional<MemoryRecord>> lookup(const LookupRequest &request) override;
    void touch(const QStringList &ids, const QDateTime &at) override;
    std::vector<HistoryEntry> history(const QString &recordId) override;
    StateResult state(const StateRequest &request) override;
    StoreCheck inspect(InspectMode mode) override;
    void close() override;
    GraphStore *graph() override;

    // The server's `vector` extension (pgvector) version, empty when it is not installed in the
    // database (as of the open, or of its creation by a store opened with "vector_search": "pgvector").
    QString vectorExtension() const { return m_vectorExtension; }
    // Whether vector searches run on the server with pgvector (decided at open; see Options::vectorSearch),
    // else in the per-process index.
    bool searchesWithPgvector() const { return m_pgvector; }
    // An embedding L2-normalised, in pgvector's text form ("[0.1,-0.2,...]"), as this store writes it;
    // none when it is empty or holds a value that is not finite (which pgvector refuses: such a record
    // is not found by vector).
    static std::optional<QByteArray> pgvectorText(const Embedding &embedding);
    IndexStats indexStats();
    QString indexFilePath() const { return m_indexFile; }
    // Waits for a background graph build to finish and takes it (tests, benchmarks).
    void waitForIndex();
    // Brings the index up to date with the change log now (what every search does first); nothing
    // when searches run with pgvector.
    void syncIndex();
    // Called in a write's transaction after its change-log entry, before COMMIT (tests that hold a
    // writer there to pin the ordering of change-log entries); null: nothing.
    void setBeforeCommitHook(std::function<void()> hook) { m_beforeCommit = std::move(hook); }
    // Called on the loading thread before the keyword index's first load (tests that hold the load to
    // search while it runs); null: nothing.
    void setBeforeKeywordLoadHook(std::function<void()> hook) { m_beforeKeywordLoad = std::move(hook); }
    // Waits for a keyword index load started by a search (tests, benchmarks).
    void waitForKeywords();
    // A keyword search answered by the server (the GIN index of the words), as keyword searches are
    // answered while the keyword index loads; and the same search in the keyword index, loaded first if
    // need be (tests, which compare the two).
    std::vector<KeywordIndex::Match> keywordSearchOnServer(const QString &text, double contextWeight, int rowBudget);
    std::vector<KeywordIndex::Match> keywordSearchInIndex(const QString &text, double contextWeight, int rowBudget);

private:
    friend class PostgresGraphStore; // runs its statements on this store's connections (a Lease a call)

    using Result = pg::Result;
    class Transaction;
    class Lease;
    // A Lease for the graph store, whose file cannot see Lease's definition.
    struct GraphLease
    {
        explicit GraphLease(PostgresStorage &storage);
        ~GraphLease();
        std::unique_ptr<Lease> lease;
    };
    // A statement's parameters, in text format except where binary (an embedding); null when unset.
    struct Params
    {
        std::vector<std::optional<QByteArray>> values;
        std::vector<bool> binary;
        int add(std::optional<QByteArray> value, bool isBinary = false);
        int add(const QByteArray &value) { return add(std::optional<QByteArray>(value)); }
        int add(const QString &text) { return add(text.toUtf8()); }
        int add(qint64 n) { return add(QByteArray::number(n)); }
    };
    struct Statement
    {
        QByteArray sql;
        Params params;
    };

    // Plumbing (on the calling thread's leased connection).
    pg_conn *openConnection();
    pg_conn *current() const;
    void ensureOpen() const;
    Result exec(const QByteArray &sql, const Params &params, const QString &doing, bool binaryResult = false);
    Result exec(const QByteArray &sql, const QString &doing);
    // Runs the statements in libpq's pipeline mode (no round trip between them); their results in order.
    std::vector<Result> execAll(const std::vector<Statement> &statements, const QString &doing);
    [[noreturn]] void fail(const QString &doing, const QByteArray &serverMessage) const;
    void migrate();
    void rewriteWords();
    void readIdentity();
    std::optional<EmbedderBinding> storedBinding();
    void checkDimension(int dimension, const QString &what);

    // Records.
    // A condition over the records table for what SQL judges of the filter (scopes, ids, times, privacy,
    // source); the rest (categories, metadata, content) is judged on the rows by RecordFilter::matches.
    QByteArray where(const RecordFilter &filter, Params &params) const;
    // The records the filter selects; `tail` follows the condition (more " AND ..." conditions, then the
    // ORDER BY; default: newest first), with `params` (the tail's) before the condition's. With `rids`,
    // their row ids too.
    std::vector<MemoryRecord> select(const RecordFilter &filter, bool withEmbedding, const QByteArray &tail = {},
                                     std::vector<qint64> *rids = nullptr, Params params = {});
    std::optional<MemoryRecord> byId(const QString &id, bool withEmbedding, qint64 *rid = nullptr);
    // The records of these row ids (those still stored), by row id.
    std::unordered_map<qint64, MemoryRecord> byRids(const std::vector<qint64> &rids, bool withEmbedding);
    std::vector<qint64> ridsOf(const QStringList &ids);
    // A record's columns as insert() and update() write them, $1..$14 (times unset: `atMs`).
    static Params recordParams(const MemoryRecord &r, qint64 atMs);
    // With `vectorType` (vectorColumn()), pgvector's column too.
    static Statement insertStatement(const std::vector<const MemoryRecord *> &records, qint64 atMs, const QByteArray &vectorType);
    static Statement addHistoryStatement(const std::vector<const MemoryRecord *> &records, qint64 atMs);
    static Statement historyStatement(const QString &recordId, HistoryEntry::Event event, const MemoryRecord *oldRecord,
                                      const MemoryRecord *newRecord, qint64 atMs);
    // The change log's position: the generation of full resets and the last seq committed.
    struct LogPosition
    {
        qint64 generation = -1;
        qint64 seq = 0;
        bool operator==(const LogPosition &) const = default;
    };
    static Statement positionStatement();
    static LogPosition positionOf(const Result &r);
    LogPosition position();
    // A change-log entry as its transaction wrote it: the position before it (read under the change
    // lock, so no other entry commits between the two) and its own seq.
    struct Logged
    {
        LogPosition before{-1, -1};
        qint64 seq = -1;
    };
    // Appends the change log entry of this transaction's changes to these rows (Transaction::commit()).
    Logged logChanges(const std::vector<qint64> &rids);
    void pruneChanges();
    // A keyword search answered by the server (the GIN index of the words) with the store's statistics;
    // with a lease, no lock held.
    std::vector<KeywordIndex::Match> serverKeywordSearch(const QStringList &lexemes, double contextWeight, int rowBudget);
    std::vector<QString> insertAll(std::span<const MemoryRecord> records, bool unlessIdentical);
    void update(const MemoryRecord &record);
    int remove(const RecordFilter &filter);
    int reset(const QString &scopePrefix);
    void bindEmbedder(const EmbedderBinding &binding);
    std::vector<std::optional<MemoryRecord>> identicals(std::span<const MemoryRecord> records, const QString *scopePrefix,
                                                        bool identities);

    // Searches.
    struct KeywordMatch
    {
        qint64 rid = 0;
        MemoryRecord record;
        double score = 0;
    };
    std::vector<VectorIndex::Hit> nearest(const Embedding &query, const RecordFilter &filter, int limit,
                                          VectorSearchAnswer *answer = nullptr);
    std::vector<ScoredRecord> vectorSearch(const Embedding &query, const RecordFilter &filter, int limit,
                                           VectorSearchAnswer *answer = nullptr);
    std::vector<SearchHit> vectorHits(const Embedding &query, const RecordFilter &filter, int limit,
                                      VectorSearchAnswer *answer = nullptr);
    // The best matches; with `records`, their whole records, else their id, importance and creation time.
    // `answer`, when given, receives which answered: the keyword index, or the server while it loads.
    std::vector<KeywordMatch> keywordMatches(const QString &text, const RecordFilter &filter, int limit, double contextWeight,
                                             bool records, QString *answer = nullptr);
    std::vector<SearchHit> keywordHits(const QString &text, const Embedding &query, const RecordFilter &filter, int limit,
                                       double contextWeight, QString *answer = nullptr);

    // The change-log entries after `seq` (at most kMaxReplay): the rows they changed, once each.
    struct Changes
    {
        qint64 generation = -1;
        qint64 last = 0;      // the seq of the last entry read (`seq` when none)
        bool tooMany = false; // more entries than a replay takes, or entries after `seq` pruned
        int entries = 0;
        std::vector<qint64> rids;
    };
    Changes changesAfter(qint64 seq);

    // The keyword index: with a lease and no index lock held; loadKeywords() and catchUpKeywords() with
    // m_keywordLock held for writing.
    void syncKeywords(const LogPosition &at);
    void loadKeywords();
    bool catchUpKeywords();
    void applyKeywordRows(const std::vector<qint64> &rids);
    // Starts the first load on m_keywordLoader, which takes a connection of its own; no index lock held.
    void startKeywordLoad();
    // The GIN index of the words (schema 6): whether the store has it, built; its build after an
    // upgrade (at open, with the lease).
    bool wordsIndexValid();
    void ensureWordsIndex();

    // The vector index. sync(): with a lease, no index lock held; the others with a lease and
    // m_indexLock held for writing.
    void sync();
    void listenForChanges(std::promise<void> &listening);
    void loadIndex();
    bool loadIndexFile(int dimension);
    bool catchUp();
    void applyRows(const std::vector<qint64> &rids);
    void startBuildIfLarge();
    bool finishBuild();
    void cancelBuild();
    void saveIndexFile(bool force) noexcept;
    bool indexMatches(int dimension) const;

    // pgvector (postgres_pgvector.cpp). With it, the records table has a column embedding_v of the
    // type vector(dimension), holding each embedding L2-normalised (so that its negative inner product,
    // pgvector's <#>, orders by cosine similarity), and an HNSW index on it. Every process that knows
    // of the column writes it with the embedding (vectorColumn()); triggers fill it for a writer that
    // does not (an older Mneme, or a process opened before the column was made).
    // Decides m_pgvector at open (the lease held, no lock); throws for "pgvector" without pgvector.
    void detectVectorSearch();
    // Makes the column (for this dimension), fills it, indexes it and makes the triggers, in its own
    // transaction or the caller's; idempotent. With a lease, no lock held.
    void prepareVectorColumn(int dimension);
    // The dimension of the column embedding_v as the server has it now; 0: no column.
    int vectorColumnOnServer();
    // The type of the column to cast a written vector to ("schema".vector), empty while there is no column.
    QByteArray vectorColumn() const;
    // The nearest records the whole filter selects, by pgvector's HNSW index (as hits: score and cosine
    // alike, with the ranking fields), or an exact scan where the filter selects few; `limit` < 0:
    // every selected record, ranked exactly.
    // `answer`, when given, receives how it was answered.
    std::vector<SearchHit> pgvectorNearest(const Embedding &query, const RecordFilter &filter, int limit,
                                           VectorSearchAnswer *answer = nullptr);
    // The cosine similarity of these records to the query (those with a vector).
    std::unordered_map<qint64, double> pgvectorSimilarities(const Embedding &query, const std::vector<qint64> &rids);

    // Aggregates. The kept*() answer from m_readCache while the
    // change log has not moved (another process's write moves it) and add this process's inserts to it
    // (keptInserted()); the uncached ones read the store.
    template<typename Find, typename Compute, typename Keep>
    auto cachedRead(Find find, Compute compute, Keep keep);
    void keepInserted(const Logged &logged, const std::vector<const MemoryRecord *> &inserted);
    QMap<QString, int> keptCategories(const RecordFilter &filter);
    QMap<QString, int> countCategories(const RecordFilter &filter);
    QStringList keptChildScopes(const QString &parent, const RecordFilter &visible);
    QStringList readChildScopes(const QString &parent, const RecordFilter &visible);
    std::vector<MemoryRecord> keptScopeSamples(const RecordFilter &filter, int perScope);
    std::vector<MemoryRecord> readScopeSamples(const RecordFilter &filter, int perScope);

    Options m_options;
    QString m_location;        // postgresql://user@host:port/dbname, without a password
    QString m_vectorExtension; // pgvector's version on the server, if installed
    QByteArray m_vectorSchema; // the schema pgvector's objects are in, quoted for SQL
    // Searches run on the server: decided at open; turned off (never on) by embeddings of more
    // dimensions than pgvector indexes.
    std::atomic<bool> m_pgvector{false};
    // The dimension of the column embedding_v as this process last saw it (0: none); written with a
    // lease under m_vectorMutex, read by writers to add the column to their statements.
    mutable QMutex m_vectorMutex;
    int m_vectorDimension = 0;
    int m_version = 0;
    std::atomic<bool> m_closed{false};
    std::function<void()> m_beforeCommit;

    mutable QMutex m_poolMutex;
    QWaitCondition m_poolFree;
    std::vector<pg_conn *> m_idle;
    int m_open = 0; // connections open, idle or leased

    // The words of every record, for keyword searches (keyword_index.h), loaded by the first one and
    // caught up from the change log as the vector index is.
    QReadWriteLock m_keywordLock;
    KeywordIndex m_keywords;
    // Written under m_keywordLock (for writing); read without it by a search, which the server answers
    // while it is false (a load holds the lock for writing).
    std::atomic<bool> m_keywordsLoaded{false};
    LogPosition m_keywordsAt; // the change log's position m_keywords reflects
    // The thread of the first load (startKeywordLoad()); m_keywordLoadMutex guards the thread object, is
    // taken before any other lock, and is held by close() while it joins.
    QMutex m_keywordLoadMutex;
    std::thread m_keywordLoader;
    std::atomic<bool> m_keywordLoading{false};
    std::function<void()> m_beforeKeywordLoad;
    // The store has the GIN index of the words, valid (seen at open or since; it is never dropped).
    std::atomic<bool> m_wordsIndex{false};

    // Answers of the aggregates a bulk load asks for once a batch, as of the change log's position
    // m_readAt; taken with a lease, and no other lock. touch() (access counts) does not move the log:
    // kept samples may show older access counts, which nothing that asks for samples reads.
    QMutex m_readMutex;
    ReadCache m_readCache;
    LogPosition m_readAt{-1, -1};

    QReadWriteLock m_indexLock;
    VectorIndex m_index;
    QString m_indexFile;                 // index_dir/pg-<digest of server, database, schema>.hnsw
    QString m_storeId;                   // meta store_id: names the store in the index file
    qint64 m_indexGeneration = -1;       // meta generation (full resets) the index reflects
    qint64 m_indexSeq = 0;               // last change-log seq the index reflects
    qint64 m_unsaved = 0;                // changes the index file does not hold
    std::unique_ptr<IndexBuild> m_build; // a graph of m_index being built in the background
    IndexStats m_stats;

    std::thread m_listener; // listenForChanges(), until close()

    QMutex m_graphMutex;                         // m_graph's creation; taken alone
    std::unique_ptr<PostgresGraphStore> m_graph; // made by graph()
};

} // namespace mneme
