#pragma once

#include "keyword_evidence.h"
#include "plugins/storage/common/index_build.h"
#include "plugins/storage/common/read_cache.h"
#include "plugins/storage/common/vector_index.h"
#include "wal_checkpointer.h"
#include <mneme/core/storage_backend.h>

#include <QByteArray>
#include <QHash>
#include <QMutex>
#include <QSet>
#include <QString>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <variant>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace mneme {

class SqliteGraphStore;

// The embedded default storage: one SQLite file (WAL mode, synchronous=FULL) holding the records,
// an FTS5 index of their content, the history of every change, the embedder binding and named JSON
// state documents. Vectors are BLOBs of float32 and are searched in a process-local index
// (VectorIndex) loaded on the first search and reloaded when another connection commits. Every write is one BEGIN IMMEDIATE transaction, so
// several processes may write the same file. Thread-safe: one mutex guards the connection.
class SqliteStorage : public StorageBackend
{
public:
    struct Options
    {
        QString path; // a file, or ":memory:"
        bool readOnly = false;
        // Create the file (and its folder) when missing; false: a missing store is Error(NotFound), and
        // nothing is created (a command that only reads).
        bool create = true;
        int busyTimeoutMs = 10000;
        // From this many records with vectors on, searches use the approximate (HNSW) index, kept in
        // "<path>.hnsw"; below it, an exact scan. 0: always approximate.
        int annThreshold = 10000;
        // The graph's shape (VectorIndex::AnnParams: the defaults are the index's).
        int annM = VectorIndex::AnnParams{}.m;
        int annEfConstruction = VectorIndex::AnnParams{}.efConstruction;
        int annEfSearch = VectorIndex::AnnParams{}.efSearch;
        // From this many records with vectors on, the graph is built on background threads while
        // searches scan every vector exactly (IndexStats::building); below it, by the search or write
        // that crosses annThreshold.
        int annBackgroundFrom = 50000;
        // Frames in the write-ahead log after which a background thread copies it into the database.
        int walCheckpointPages = 4000;
        // A keyword search whose terms are found in more records than this together scores only the
        // records holding one of its rarest terms or two of the others (keywordGate()); 0: every record
        // holding any of its terms.
        int keywordRowBudget = 1000;

        // Reads {"path", "read_only", "create", "busy_timeout_ms", "ann_threshold", "ann_background_from", "ann_m",
        // "ann_ef_construction", "ann_ef_search", "wal_checkpoint_pages", "keyword_row_budget"}; throws Error(InvalidArgument)
        // naming the key for a missing path, an unknown
        // key or a value of the wrong type or out of range.
        static Options fromJson(const Json &config);
    };

    // What the vector index is and where it came from (for tests, benchmarks and diagnostics).
    struct IndexStats
    {
        bool loaded = false;
        bool approximate = false;      // an HNSW graph (else a flat exact scan)
        bool fromFile = false;         // the graph was read from the index file, not built
        qint64 fileLoads = 0;          // index files read and accepted
        qint64 builds = 0;             // graphs built from the records table (and taken)
        qint64 backgroundBuilds = 0;   // of which started in the background
        bool building = false;         // a graph is being built in the background: searches scan exactly
        qint64 exactWhileBuilding = 0; // searches answered by an exact scan because of that
        // How the last search was answered, in words: "HNSW graph of N records", or an exact scan (of a
        // small store, of the few records a filter selects, or of every vector while the graph is built).
        QString lastSearch;
        qint64 saves = 0;        // index files written
        qint64 replayed = 0;     // history entries applied by catching up (file or other processes)
        std::size_t vectors = 0; // records with a vector in the index
        std::size_t deletedNodes = 0;
        qint64 seq = 0;               // the last history seq the index reflects
        qint64 checkpoints = 0;       // WAL checkpoints run by the background thread
        qint64 inlineCheckpoints = 0; // ... and by the writing connection itself (the thread fell behind)
    };

    // The schema version this build writes and the newest it can read.
    static int latestSchemaVersion();

    // Opens (creating when missing and writable) the store. Throws Error: Corrupt for a file that is
    // not a Mneme store or is damaged, SchemaTooNew, NotFound for a missing file opened read-only,
    // ReadOnlyStore when a missing store cannot be created. A file the process may not write is
    // opened read-only; every write then throws Error(ReadOnlyStore).
    explicit SqliteStorage(const Options &options);
    ~SqliteStorage() override;
    SqliteStorage(const SqliteStorage &) = delete;
    SqliteStorage &operator=(const SqliteStorage &) = delete;

    // True when the store was opened read-only (asked for, or because the file cannot be written).
    bool isReadOnly() const;

    // The operations of StorageBackend: each dispatches to the functions below.
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

    // What the operations do, one function each, with StorageBackend's conveniences' names and
    // contracts (they hide those conveniences and do the same): for tests, benchmarks and tools that
    // use this class directly.
    QString location() const;
    int schemaVersion() const;
    std::optional<EmbedderBinding> embedderBinding() const;
    void bindEmbedder(const EmbedderBinding &binding);

    void save(std::span<const MemoryRecord> records);
    void save(const std::vector<MemoryRecord> &records) { save(std::span<const MemoryRecord>(records)); }
    // The lookup of identical records runs inside the write transaction (skipped when nothing was
    // written to the store since the last findExact() of these contents).
    std::vector<QString> saveUnlessIdentical(std::span<const MemoryRecord> records);
    std::vector<QString> saveUnlessIdentical(const std::vector<MemoryRecord> &records)
    {
        return saveUnlessIdentical(std::span<const MemoryRecord>(records));
    }
    void update(const MemoryRecord &record);
    int remove(const RecordFilter &filter);
    int reset(const QString &scopePrefix);
    void restore(const MemoryRecord &record);

    // limit <= 0 returns nothing. `answer`, when given, receives how the vector search was answered.
    std::vector<ScoredRecord> search(const Embedding &query, const RecordFilter &filter, int limit,
                                     VectorSearchAnswer *answer = nullptr);
    std::vector<ScoredRecord> keywordSearch(const QString &text, const RecordFilter &filter, int limit,
                                            double contextWeight = 0);
    std::optional<std::vector<SearchHit>> searchHits(const Embedding &query, const RecordFilter &filter, int limit,
                                                     VectorSearchAnswer *answer = nullptr);
    std::optional<std::vector<SearchHit>> keywordHits(const QString &text, const Embedding &query, const RecordFilter &filter,
                                                      int limit, double contextWeight = 0);
    std::vector<std::optional<MemoryRecord>> hitRecords(const std::vector<qint64> &keys);

    std::optional<MemoryRecord> get(const QString &id, bool withEmbedding = false);
    // limit < 0 means no limit.
    std::vector<MemoryRecord> list(const RecordFilter &filter, int limit, int offset);
    std::vector<MemoryRecord> listOrdered(const RecordFilter &filter, const RecordOrder &order, int limit, int offset);
    std::optional<MemoryRecord> findExact(const QString &content, const QString &scope,
                                          const QString &source, bool isPrivate);
    std::vector<std::optional<MemoryRecord>> findExact(std::span<const MemoryRecord> records);
    std::vector<std::optional<MemoryRecord>> findExact(const std::vector<MemoryRecord> &records)
    {
        return findExact(std::span<const MemoryRecord>(records));
    }
    std::vector<std::optional<MemoryRecord>> findSameContent(std::span<const MemoryRecord> records,
                                                             const QString &scopePrefix);
    std::vector<std::optional<MemoryRecord>> findSameContent(const std::vector<MemoryRecord> &records, const QString &scopePrefix)
    {
        return findSameContent(std::span<const MemoryRecord>(records), scopePrefix);
    }
    // Kept between calls (see ReadCache) and read again only after a write other than a save.
    std::vector<MemoryRecord> scopeSamples(const RecordFilter &filter, int perScope);
    int count(const RecordFilter &filter);
    ScopeInfo scopeInfo(const QString &scope, const RecordFilter &visible);
    // Kept between calls (see ReadCache), as categories().
    QStringList childScopes(const QString &parent, const RecordFilter &visible);
    // Kept between calls (see ReadCache): a bulk load asks once a batch.
    QMap<QString, int> categories(const RecordFilter &filter);
    // On a read-only store of schema 1 (no state table yet) readState() finds nothing.
    std::optional<Json> readState(const QString &key);
    void writeState(const QString &key, const Json &value);
    QStringList stateKeys(const QString &prefix);

    std::vector<DamagedRecord> damagedRecords();
    // PRAGMA integrity_check of the file, every record read, the keyword index against the records
    // (FTS5's integrity-check, rows and contents), the content-hash lookup tables against the
    // contents, the vector index file against its checksum and store. The repair rebuilds the keyword
    // index (keeping the keyword contexts it can still read), the lookup tables and the index file.
    // Then the graph tables (SqliteGraphStore::checkLocked), mended with the repair.
    StoreCheck check(bool repair);

    // The graph tables (graph_store_sqlite.h), on this connection and under its mutex.
    GraphStore *graph() override;

    // Extensions beyond StorageBackend, for tests, benchmarks and tools that load this class directly.
    IndexStats indexStats();
    // "<path>.hnsw", or empty for an in-memory store.
    QString indexFilePath() const;
    // The bare index search: rowids and cosine scores, no rows read. `mode` forces the exact scan or
    // the graph walk; Auto is what search() uses. Metadata conditions are not applied.
    std::vector<VectorIndex::Hit> nearest(const Embedding &query, const RecordFilter &filter, int limit,
                                          VectorIndex::Mode mode = VectorIndex::Mode::Auto);
    // Writes the index file now when the approximate index has changes it does not hold.
    void flushIndex();
    // Waits for the graph being built in the background, if any, and takes it (for tests and
    // benchmarks: a search or write takes it by itself once it is done).
    void waitForIndex();

private:
    friend class SqliteGraphStore;
    class Statement;
    class Transaction;
    struct Row
    {
        qint64 rowid = 0;
        MemoryRecord record;       // a damaged field is empty
        QStringList damage;        // what cannot be read: the record is damaged when this is not empty
        Json raw = Json::object(); // the damaged columns as stored
    };
    // A SQL condition over the records table (alias r) and the values of its parameters, in order.
    struct Where
    {
        QByteArray sql;
        std::vector<std::variant<qint64, QByteArray, double>> args;
    };

    // Opening.
    void open();
    void openConnection(bool immutable);
    void closeConnection();
    void stopCheckpointer();
    int storedSchemaVersion(bool *hasTables, bool *hasMeta);
    void checkStore();
    void migrate();
    void configureWriting();

    // Plumbing.
    SqliteGraphStore *graphLocked(); // graph(), the lock held
    void ensureOpen() const;
    void ensureWritable() const;
    [[noreturn]] void fail(int rc, const QString &doing) const;
    sqlite3_stmt *prepare(const QByteArray &sql, bool *owned);
    void exec(const char *sql, const QString &doing);
    void exec(const QByteArray &sql, const QString &doing);
    void refreshIfChanged();
    class ReadSnapshot;
    void loadBinding();
    std::optional<EmbedderBinding> effectiveBinding() const;
    void checkDimension(int dimension, const QString &what);
    void claimDimension(int dimension);
    void checkRecord(const MemoryRecord &r) const;

    // Rows.
    // Conditions for everything but metadata (which callers check with RecordFilter::matches).
    Where where(const RecordFilter &filter) const;
    // The rows the filter selects; damaged ones only `withDamaged` (a delete).
    std::vector<Row> selectRows(const RecordFilter &filter, bool withEmbedding, bool withDamaged = false);
    // False for a damaged row (a column cannot be read), which reads leave out: reported once a
    // connection as a warning on the mneme.storage.sqlite category.
    bool readable(const Row &row) const;
    std::optional<Row> rowById(const QString &id, bool withEmbedding);
    std::optional<Row> rowByRowid(qint64 rowid, bool withEmbedding);
    // The rows of these rowids (without embeddings), in one statement, by rowid.
    std::unordered_map<qint64, Row> rowsByRowids(const std::vector<qint64> &rowids);
    // The full-text search behind keywordSearch() and keywordHits(): calls `row` with each match (the
    // statement at `columns`, and the keyword evidence in 0..1, KeywordEvidence capped at 1), best
    // first, while it returns true. The caller holds the lock and a read snapshot.
    void runKeywordSearch(const QString &text, const RecordFilter &filter, int limit, double contextWeight,
                          const QByteArray &columns, const std::function<bool(sqlite3_stmt *, double)> &row);
    std::vector<qint64> rowidsForIds(const QStringList &ids);
    Row readRow(sqlite3_stmt *st, bool withEmbedding) const;
    static Statement &bindFields(Statement &st, int first, const MemoryRecord &r, qint64 hash);
    int removeLocked(const RecordFilter &filter);
    // A keyword query: the OR of those terms rare enough in the store to be worth a search, and the idf
    // of the others (KeywordEvidence's left_out_idf).
    struct KeywordQuery
    {
        QByteArray match;
        QByteArray hits; // mneme_keyword()'s: the rows each counted phrase is in (native int64s)
        double leftOutIdf = 0;
        int gatePhrases = 0;      // the phrases of `match` that only choose the rows (KeywordEvidence's gate)
        double contextWeight = 0; // mneme_keyword()'s: 0 when the context is not searched
    };
    // The query for a text: its terms (selectiveMatch()), restricted to the content when the context
    // is not searched; nothing when no term is worth a search. Throws for a negative context weight.
    std::optional<KeywordQuery> keywordQuery(const QString &text, double contextWeight);
    KeywordQuery selectiveMatch(const QList<QByteArray> &terms, QList<QByteArray> *kept);
    // The number of rows the phrase `match` (one term, with its column filter) is in, counted once.
    qint64 phraseHits(const QByteArray &match);
    // records_fts was written at `rowid` (every row when negative): forgets what the keyword search
    // kept of it.
    void keywordIndexChanged(qint64 rowid);
    // The rows a keyword query scores when its terms (each with the number of records holding it) are in
    // more than `budget` records together: an FTS5 expression of the rarest terms, as many as the budget
    // holds (at least one), OR-ed with each pair of the next kKeywordPairedTerms. Empty: every row
    // holding a term (within the budget, a budget of 0, or a single term).
    static QByteArray keywordGate(QList<QPair<qint64, QByteArray>> terms, int budget);
    // `hash` is contentHash(content).
    // With `identityOf`, only a record with the same identities (VectorIndex::identityOf) as that metadata.
    // With a null `scope`, in any scope at or below `scopePrefix` instead.
    std::optional<MemoryRecord> findExactLocked(const QString &content, const QString *scope, const QString &source,
                                                bool isPrivate, qint64 hash, const Json *identityOf = nullptr,
                                                const QString &scopePrefix = QString());
    qint64 insertRecord(const MemoryRecord &r);
    // The content hash (SHA-256), from m_batchHashes when the last findExact() batch computed it.
    qint64 hashOf(const QString &content) const;
    // The content-hash lookup of identical records (schema 4): an entry per row, added on insert and
    // on a content change, removed before a delete; merged from the recent table into the main one.
    void addContentHash(qint64 hash, qint64 rowid);
    void removeContentHash(qint64 rowid);
    void mergeRecentHashes();
    void addCategoryCounts(const std::vector<const MemoryRecord *> &inserted);
    void insertAddHistory(const std::vector<const MemoryRecord *> &records, qint64 atMs);
    void insertHistory(const QString &recordId, HistoryEntry::Event event, const MemoryRecord *oldRecord,
                       const MemoryRecord *newRecord, qint64 atMs);
    int deleteRows(const std::vector<Row> &rows);
    // categories() without its cache.
    QMap<QString, int> countCategories(const RecordFilter &filter);
    // The distinct scopes at or below `prefix` of the records `visible` selects.
    std::vector<QString> distinctScopesBelow(const QString &prefix, const RecordFilter &visible);
    // The distinct scopes of the records the filter selects (metadata conditions as where() has them).
    std::vector<QString> distinctScopes(const RecordFilter &filter);
    QStringList childScopesLocked(const QString &parent, const RecordFilter &visible);
    // Inserts `records`; with `storedIds`, not those identical to a stored record or to an earlier
    // one of the batch, and *storedIds gets the id each record is stored under.
    void saveLocked(std::span<const MemoryRecord> records, std::vector<QString> *storedIds = nullptr);
    // True when every record's content was looked up by the last findExact() batch and nothing was
    // written to the store since, by this connection or another: its answers still hold.
    bool batchLookupCurrent(std::span<const MemoryRecord> records) const;

    // The vector index.
    static VectorIndex::Item indexItem(qint64 rowid, const MemoryRecord &r);
    void indexPut(qint64 rowid, const MemoryRecord &r);
    void indexRemove(qint64 rowid);
    // Puts records just inserted (at these rowids) into the index, a batch at once.
    void indexInserted(const std::vector<qint64> &rowids, const std::vector<const MemoryRecord *> &records);
    void noteSaved(qint64 saved);
    void loadIndex();
    bool prepareIndex(const Embedding &query);
    bool catchUp();
    static qint64 replayAtMost(qint64 tracked);
    void applyIndexRow(sqlite3_stmt *st);
    void afterWrite(qint64 lastSeq, qint64 changes);
    void promoteIfLarge();
    void startBuild();
    // Takes a finished background build (true), or forgets a failed or cancelled one (false).
    bool finishBuild();
    void cancelBuild();
    // Waits for the build and takes it (waitForIndex() under the lock).
    void awaitBuild();
    // Invalidates the index (cancelling a build of it).
    void dropIndex();
    void noteChange(qint64 rowid);
    // m_index.search(), noting how it answered (IndexStats::lastSearch, and `answer` when given).
    std::vector<VectorIndex::Hit> searchIndex(const Embedding &query, const RecordFilter &filter, int limit,
                                              const std::vector<qint64> *rows, VectorIndex::Mode mode = VectorIndex::Mode::Auto,
                                              VectorSearchAnswer *answer = nullptr);
    void saveIndexFile(bool force) noexcept;
    bool indexFileUsable() const;
    QString metaValue(const char *key);
    qint64 currentSeq();
    qint64 currentGeneration();
    qint64 recordCount();
    void ensureStoreId();

    // The check (check()); each returns what is wrong in a sentence, empty when nothing is.
    std::vector<DamagedRecord> damagedLocked();
    QString keywordIndexProblem();
    void rebuildKeywordIndex();
    QString contentHashProblem();
    void rebuildContentHashes();
    QString categoryCountsProblem();
    void rebuildCategoryCounts();
    QString indexFileProblem();

    // State.
    bool hasStateTable();

    Options m_options;
    QString m_location;
    bool m_readOnly = false;
    QString m_readOnlyReason;
    bool m_closed = false;
    int m_version = 0;
    QStringList m_tables;
    sqlite3 *m_db = nullptr;
    QHash<QByteArray, sqlite3_stmt *> m_statements;
    qint64 m_dataVersion = -1;
    std::optional<EmbedderBinding> m_binding;        // as stored in meta
    std::optional<EmbedderBinding> m_sessionBinding; // bound on a read-only store, not written
    VectorIndex m_index;
    // The filter of the keyword search walking its matches (keywordHits, under m_mutex), for the SQL
    // function mneme_judged; null at any other time.
    const VectorIndex::Judge *m_keywordJudge = nullptr;
    std::unique_ptr<IndexBuild> m_build;             // a graph of m_index being built in the background
    std::unique_ptr<WalCheckpointer> m_checkpointer; // file stores open for writing
    // How many records' content each recently searched term is in (counted past the largest cap), and
    // the store's size when counted: reused while the store has grown by less than a twentieth.
    QHash<QByteArray, qint64> m_termCounts;
    qint64 m_termCountsRecords = -1;
    // What the keyword search reuses between queries, exact for the store as this connection sees it:
    // the number of rows each searched phrase (a term, with the query's column filter) is in, and each
    // row's length in tokens (mneme_keyword()'s, registered with it). keywordIndexChanged() forgets
    // them where records_fts is written, refreshIfChanged() when another connection committed.
    QHash<QByteArray, qint64> m_phraseHits;
    KeywordEvidence::Lengths m_tokenLengths;
    QString m_storeId;                // meta store_id: names the store in the index file
    qint64 m_indexGeneration = 0;     // meta reset_generation the index reflects
    qint64 m_indexSeq = 0;            // last history seq the index reflects
    qint64 m_unsaved = 0;             // changes the index file does not hold
    qint64 m_recordsBeforeSaves = -1; // records in the store before this connection's first save
    qint64 m_savedHere = 0;           // records this connection saved (noteSaved())
    bool m_bulkLoading = false;       // this connection loads the store in bulk
    bool m_indexFailed = false;       // loading the index for a bulk load failed: not tried again
    IndexStats m_stats;
    mutable QMutex m_mutex;
    // Content hashes of the last findExact() batch, for the save that follows it; emptied by that save.
    QHash<QString, qint64> m_batchHashes;
    mutable QSet<QString> m_reportedDamage; // damaged records already reported
    // Answers of categories(), childScopes() and scopeSamples() (plugins/storage/common/read_cache.h):
    // cleared by every write transaction and by other connections' commits; saveLocked() instead adds
    // the records it inserted, keeping the answers exact.
    ReadCache m_readCache;
    // The store as the last findExact() batch saw it: the data version (other connections' commits)
    // and this connection's commits.
    qint64 m_batchDataVersion = -1;
    qint64 m_batchCommits = -1;
    qint64 m_commits = 0;                      // write transactions this connection committed
    std::unique_ptr<SqliteGraphStore> m_graph; // made by graph() on first use
};

} // namespace mneme
