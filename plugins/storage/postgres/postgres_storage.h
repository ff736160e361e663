#pragma once

#include <mneme/core/storage_backend.h>

#include <QByteArray>
#include <QMutex>
#include <QString>
#include <memory>
#include <optional>
#include <vector>

struct pg_conn;
struct pg_result;

namespace mneme {

class PostgresGraphStore;

// A store on a PostgreSQL server (15 or later), shared by processes on several hosts. One connection
// a backend, guarded by one mutex (m_mutex: every member below it; no other lock). The password is
// never in the configuration: libpq reads it from PGPASSWORD or the .pgpass file (PGPASSFILE), and
// no error, log line or location carries it.
//
// Tables (mneme_ prefix, in the connection's search_path): mneme_meta (schema_version, embedder),
// mneme_records (a row per record; scope indexed with text_pattern_ops for prefix searches; the
// content's and the context's words as tsvector columns under GIN indexes; md5 of the content for the
// lookup of identical records), mneme_history (every change), mneme_state (named JSON documents).
// Vectors are float32 bytea in the records table and are searched exactly in this process. The graph
// tables (mneme_graph_*) are PostgresGraphStore's (postgres_graph_store.h), reached through graph().
class PostgresStorage : public StorageBackend
{
public:
    struct Options
    {
        QString dsn; // a libpq connection string or URI, without a password
        int connectTimeoutS = 10;
        // Reads {"dsn", "connect_timeout_s"}; throws Error(InvalidArgument) naming the key for a missing
        // dsn, an unknown key, a value of the wrong type, or a dsn that holds a password.
        static Options fromJson(const Json &config);
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

private:
    friend class PostgresGraphStore; // works on this connection, under m_mutex

    class Result;
    class Transaction;
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

    // Plumbing (callers hold m_mutex).
    void connect();
    void ensureOpen() const;
    Result exec(const QByteArray &sql, const Params &params, const QString &doing);
    Result exec(const QByteArray &sql, const QString &doing);
    [[noreturn]] void fail(const QString &doing, const QByteArray &serverMessage) const;
    void migrate();
    std::optional<EmbedderBinding> storedBinding();
    void checkDimension(int dimension, const QString &what);

    // Records.
    // A condition over the records table for what SQL judges of the filter (scopes, ids, times, privacy,
    // source); the rest (categories, metadata, content) is judged on the rows by RecordFilter::matches.
    QByteArray where(const RecordFilter &filter, Params &params) const;
    // The records the filter selects; `tail` follows the condition (more " AND ..." conditions, then the
    // ORDER BY; default: newest first). With `rids`, their row ids too.
    std::vector<MemoryRecord> select(const RecordFilter &filter, bool withEmbedding, const QByteArray &tail = {},
                                     std::vector<qint64> *rids = nullptr);
    std::optional<MemoryRecord> byId(const QString &id, bool withEmbedding, qint64 *rid = nullptr);
    // A record's columns as insert() and update() write them, $1..$14 (times unset: `atMs`).
    static Params recordParams(const MemoryRecord &r, qint64 atMs);
    void insert(const MemoryRecord &r, qint64 atMs);
    void insertHistory(const QString &recordId, HistoryEntry::Event event, const MemoryRecord *oldRecord,
                       const MemoryRecord *newRecord, qint64 atMs);
    std::vector<QString> insertAll(std::span<const MemoryRecord> records, bool unlessIdentical);
    void update(const MemoryRecord &record);
    int remove(const RecordFilter &filter);
    int reset(const QString &scopePrefix);
    void bindEmbedder(const EmbedderBinding &binding);
    std::optional<MemoryRecord> identical(const MemoryRecord &r, const QString *scopePrefix, bool identities);

    // Searches.
    std::vector<ScoredRecord> vectorSearch(const Embedding &query, const RecordFilter &filter, int limit);
    std::vector<ScoredRecord> keywordSearch(const QString &text, const RecordFilter &filter, int limit, double contextWeight);

    // Aggregates.
    QStringList childScopes(const QString &parent, const RecordFilter &visible);

    Options m_options;
    QString m_location; // host:port/dbname as user, without a password
    mutable QMutex m_mutex;
    pg_conn *m_conn = nullptr;
    bool m_closed = false;
    int m_version = 0;
    std::unique_ptr<PostgresGraphStore> m_graph; // made by graph()
};

} // namespace mneme
