#include "postgres_storage.h"

#include "postgres_graph_store.h"
#include "postgres_result.h"
#include "text_words.h"

#include "core/schema_migration_p.h"
#include <mneme/core/error.h>
#include <mneme/core/metadata_filter.h>
#include <mneme/core/scope_path.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QMutexLocker>
#include <QReadLocker>
#include <QSet>
#include <QStandardPaths>
#include <QWriteLocker>
#include <QtEndian>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <libpq-fe.h>
#include <map>
#include <poll.h>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace mneme {

namespace {

Q_LOGGING_CATEGORY(lcPostgres, "mneme.storage.postgres")

// The server's notices and warnings go to the log rather than to standard error.
void logNotice(void *, const char *message)
{
    qCWarning(lcPostgres).noquote() << QString::fromUtf8(message).trimmed();
}

constexpr SchemaMigration kMigrations[] = {
    {1, R"sql(
CREATE TABLE mneme_records (
    rid bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    content text NOT NULL,
    scope text NOT NULL,
    categories text NOT NULL,
    importance double precision NOT NULL,
    source text NOT NULL,
    private boolean NOT NULL,
    metadata text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    last_accessed bigint,
    access_count integer NOT NULL DEFAULT 0,
    embedding bytea,
    context text NOT NULL DEFAULT '',
    content_hash text GENERATED ALWAYS AS (md5(content)) STORED,
    words tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    context_words tsvector GENERATED ALWAYS AS (to_tsvector('english', context)) STORED,
    word_count integer NOT NULL DEFAULT 0,
    context_word_count integer NOT NULL DEFAULT 0
);
CREATE INDEX mneme_records_scope ON mneme_records (scope text_pattern_ops);
CREATE INDEX mneme_records_created ON mneme_records (created_at DESC, id);
CREATE INDEX mneme_records_same ON mneme_records (content_hash);
CREATE INDEX mneme_records_words ON mneme_records USING gin (words);
CREATE INDEX mneme_records_context_words ON mneme_records USING gin (context_words);
CREATE TABLE mneme_history (
    seq bigserial PRIMARY KEY,
    record_id text NOT NULL,
    event text NOT NULL,
    old_content text,
    new_content text,
    old_record text,
    new_record text,
    at bigint NOT NULL
);
CREATE INDEX mneme_history_record ON mneme_history (record_id, seq);
CREATE TABLE mneme_state (key text PRIMARY KEY, value text NOT NULL);
)sql"},
    // The change log the per-process vector indexes catch up from: a row per write transaction, its
    // seq handed out under kChangeLock (so seq order is commit order); the store's id and the
    // generation of full resets, which the index file is stamped with; the words columns written by
    // the statements that write the texts (the server's text search once per text, not twice).
    {2, R"sql(
CREATE TABLE mneme_changes (
    seq bigserial PRIMARY KEY,
    rids bigint[] NOT NULL,
    at bigint NOT NULL
);
INSERT INTO mneme_meta(key, value) VALUES ('store_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING;
-- The words are written with the row (to_tsvector once per text, for the words and their count).
ALTER TABLE mneme_records ALTER COLUMN words DROP EXPRESSION;
ALTER TABLE mneme_records ALTER COLUMN context_words DROP EXPRESSION;
INSERT INTO mneme_meta(key, value) VALUES ('generation', '0') ON CONFLICT (key) DO NOTHING;
)sql"},
    {3, kPostgresGraphSchemaSql},
    // Keyword searches run on each process's keyword index (KeywordIndex, read from the words columns
    // and caught up from the change log): the GIN indexes, which every save kept up, are read no more,
    // and the word counts are the words' positions, which the index counts as it reads them.
    {4, R"sql(
DROP INDEX IF EXISTS mneme_records_words;
DROP INDEX IF EXISTS mneme_records_context_words;
ALTER TABLE mneme_records DROP COLUMN IF EXISTS word_count, DROP COLUMN IF EXISTS context_word_count;
)sql"},
    // The words are computed by the writing process (TextWords), for the texts saved and the queries
    // alike, and no longer by the server's to_tsvector('english', ...): the step names the analysis,
    // and the opening process rewrites every record's words with it (rewriteWords()).
    {5, R"sql(
INSERT INTO mneme_meta(key, value) VALUES ('words', 'mneme-english-1') ON CONFLICT (key) DO UPDATE SET value = excluded.value;
)sql"},
    // A process whose keyword index is still loading has its keyword searches answered by the server
    // (serverKeywordSearch()): a GIN index on the words finds the records, and the statistics the
    // scores need are kept by triggers, as deltas a write statement each (mneme_word_totals, compacted
    // by pruneChanges()): the records, and the sum of their lengths (the positions of their words, as
    // KeywordIndex counts them). The triggers are made before the totals are counted: they take a lock
    // that holds the other writers off until the step commits. Written to run again over itself (a
    // store whose recorded version was set back). The index is built in the step's transaction for a
    // store of at most 1,000 records (milliseconds, holding the other writers off); a larger store's
    // after the step, beside them (ensureWordsIndex()).
    {6, R"sql(
CREATE OR REPLACE FUNCTION mneme_words_length(w tsvector) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0) FROM unnest(w) $fn$;
CREATE TABLE IF NOT EXISTS mneme_word_totals (records bigint NOT NULL, length bigint NOT NULL);
-- A statement's rows are measured by one join with their words (half the cost of a function call a row).
CREATE OR REPLACE FUNCTION mneme_word_totals_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    n bigint := 0;
    len bigint := 0;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT count(*) INTO n FROM new_rows;
        SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) INTO len
            FROM new_rows r CROSS JOIN LATERAL (SELECT positions FROM unnest(r.words)
                                                UNION ALL SELECT positions FROM unnest(r.context_words)) u;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT -count(*) INTO n FROM old_rows;
        SELECT -coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) INTO len
            FROM old_rows r CROSS JOIN LATERAL (SELECT positions FROM unnest(r.words)
                                                UNION ALL SELECT positions FROM unnest(r.context_words)) u;
    ELSE
        len := mneme_words_length(NEW.words) + mneme_words_length(NEW.context_words)
             - mneme_words_length(OLD.words) - mneme_words_length(OLD.context_words);
    END IF;
    IF n <> 0 OR len <> 0 THEN
        INSERT INTO mneme_word_totals(records, length) VALUES (n, len);
    END IF;
    RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS mneme_records_words_insert ON mneme_records;
DROP TRIGGER IF EXISTS mneme_records_words_delete ON mneme_records;
DROP TRIGGER IF EXISTS mneme_records_words_update ON mneme_records;
CREATE TRIGGER mneme_records_words_insert AFTER INSERT ON mneme_records REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mneme_word_totals_change();
CREATE TRIGGER mneme_records_words_delete AFTER DELETE ON mneme_records REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mneme_word_totals_change();
CREATE TRIGGER mneme_records_words_update AFTER UPDATE OF words, context_words ON mneme_records FOR EACH ROW
    WHEN (OLD.words IS DISTINCT FROM NEW.words OR OLD.context_words IS DISTINCT FROM NEW.context_words)
    EXECUTE FUNCTION mneme_word_totals_change();
DELETE FROM mneme_word_totals;
INSERT INTO mneme_word_totals(records, length)
    SELECT (SELECT count(*) FROM mneme_records),
           coalesce((SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM mneme_records r
                     CROSS JOIN LATERAL (SELECT positions FROM unnest(r.words) UNION ALL SELECT positions FROM unnest(r.context_words)) u), 0);
DO $do$ BEGIN
    IF (SELECT count(*) FROM (SELECT 1 FROM mneme_records LIMIT 1001) AS s) <= 1000 THEN
        CREATE INDEX IF NOT EXISTS mneme_records_words_gin ON mneme_records USING gin (words, context_words) WITH (fastupdate = on);
    END IF;
END $do$;
)sql"},
};
// The step after which rewriteWords() runs.
constexpr int kClientWordsVersion = 5;
// The GIN index of the words (step 6), and what builds it.
const QByteArray kWordsIndex = "mneme_records_words_gin";
const QByteArray kWordsIndexSql = "CREATE INDEX CONCURRENTLY mneme_records_words_gin ON mneme_records "
                                  "USING gin (words, context_words) WITH (fastupdate = on)";

// The lock every opening process takes while it creates or upgrades the schema, and the namespace of
// the per-content locks of InsertUnlessIdentical (pg_advisory_xact_lock takes one bigint, or two ints).
constexpr qint64 kSchemaLock = 0x6d6e656d65L; // "mneme"
// Held from a write's change-log append to its commit: entries are numbered in the order they commit,
// so a reader that has applied every entry up to seq N has seen every change committed before it.
constexpr qint64 kChangeLock = kSchemaLock + 2;
// Held (for its session) by the process building the GIN index of the words after an upgrade.
constexpr qint64 kWordsIndexLock = kSchemaLock + 5;
// The channel writers notify after each change-log append (the payload: the store's id).
constexpr const char *kChangeChannel = "mneme_changes";
// Rows a statement reads or names at once (index loads, change replays, pipelines).
constexpr int kChunk = 5000;
constexpr int kPipelineChunk = 500;
// Change-log entries past which a reload costs less than a replay.
constexpr int kMaxReplay = 10000;
// The records a keyword search scores at most (the best by the server's rank of its selecting words),
// as the SQLite store's keyword_row_budget.
constexpr int kKeywordRowBudget = 1000;
// How often the listener thread looks whether the store was closed.
constexpr int kListenPollMs = 200;

// The change log's position: the generation of full resets and the last seq committed.
const QByteArray kPositionSql = "SELECT (SELECT value::bigint FROM mneme_meta WHERE key = 'generation'), "
                                "coalesce((SELECT max(seq) FROM mneme_changes), 0)";

// What the vector index reads of a row (binary result format).
const QByteArray kIndexColumns = "rid, scope, categories, source, private, created_at, importance, metadata, embedding";

const QString kResetAdvice = QStringLiteral(
    "run `mneme reset --yes` to empty the store, or `mneme export` and then `mneme import --reembed` "
    "to keep its memories with the new embedder");

const QByteArray kColumns = "rid, id, content, scope, categories, importance, source, private, metadata, created_at, "
                            "updated_at, last_accessed, access_count, context";

QString describe(const std::optional<EmbedderBinding> &b)
{
    if (!b)
        return QStringLiteral("no embedder");
    if (b->embedderId.isEmpty())
        return QStringLiteral("an embedder of dimension %1").arg(b->dimension);
    return QStringLiteral("%1 (dimension %2)").arg(b->embedderId).arg(b->dimension);
}

qint64 msOf(const QDateTime &t, qint64 fallback)
{
    return t.isValid() ? t.toMSecsSinceEpoch() : fallback;
}

QByteArray jsonText(const Json &j)
{
    return QByteArray::fromStdString(j.dump());
}

QByteArray categoriesText(const QStringList &categories)
{
    Json a = Json::array();
    for (const QString &c : categories)
        a.push_back(c.toStdString());
    return jsonText(a);
}

QByteArray recordJson(const MemoryRecord &r)
{
    Json j;
    to_json(j, r);
    return jsonText(j);
}

// A LIKE pattern matching every text that starts with `prefix`.
QString likePrefix(const QString &prefix)
{
    QString out;
    for (const QChar c : prefix) {
        if (c == QLatin1Char('%') || c == QLatin1Char('_') || c == QLatin1Char('\\'))
            out += QLatin1Char('\\');
        out += c;
    }
    return out + QLatin1Char('%');
}

RecordFilter normalized(const RecordFilter &filter)
{
    RecordFilter f = filter;
    for (QString &s : f.scopes)
        s = ScopePath::normalize(s);
    (void)MetadataFilter::parse(f.metadata); // a malformed filter is refused before anything is read
    return f;
}

// Whether SQL judges the whole filter (where() covers it: no categories, metadata or content
// conditions, which are judged on the rows), so that a count or a page can be left to the server.
bool judgedBySql(const RecordFilter &filter)
{
    return filter.categories.isEmpty() && filter.metadata.empty() && filter.contentContains.isEmpty();
}

void checkRecord(const MemoryRecord &r)
{
    if (r.id.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a record to store has no id; create records with MemoryRecord::create()"));
    QString error;
    if (!ScopePath::isValid(r.scope, &error))
        throw Error(ErrorKind::InvalidArgument, error);
    if (ScopePath::normalize(r.scope) != r.scope)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the scope \"%1\" of record %2 is not normalised; pass it through ScopePath::normalize()").arg(r.scope, r.id));
}

using pg::arrayLiteral;
using pg::bigintArray;

// A one-dimensional array parameter in PostgreSQL's binary format (what array_recv reads): a batch's
// column sent as it is, which the server neither parses nor unescapes (a text array literal of a
// batch was a quarter of the server's work for a save). The element type's oid (pg_type) names the
// binary form of each element added.
class BinaryArray
{
public:
    static constexpr unsigned kBool = 16, kBytea = 17, kInt8 = 20, kInt4 = 23, kText = 25, kFloat8 = 701;

    explicit BinaryArray(unsigned elementType)
    {
        for (const quint32 word : {1u, 0u, quint32(elementType), 0u, 1u}) // dimensions, nulls, type, length, lower bound
            put(word);
    }
    void addNull()
    {
        put(quint32(-1));
        m_hasNull = true;
        ++m_count;
    }
    void add(const char *data, qsizetype size)
    {
        put(quint32(size));
        m_out.append(data, size);
        ++m_count;
    }
    void add(const QByteArray &bytes) { add(bytes.constData(), bytes.size()); }
    void add(const QString &text) { add(text.toUtf8()); }
    void add(qint64 n)
    {
        const quint64 big = qToBigEndian(quint64(n));
        add(reinterpret_cast<const char *>(&big), 8);
    }
    void add(int n)
    {
        const quint32 big = qToBigEndian(quint32(n));
        add(reinterpret_cast<const char *>(&big), 4);
    }
    void add(double d)
    {
        quint64 bits;
        std::memcpy(&bits, &d, 8);
        const quint64 big = qToBigEndian(bits);
        add(reinterpret_cast<const char *>(&big), 8);
    }
    void add(bool b) { add(b ? "\1" : "\0", 1); }
    // The finished array.
    QByteArray bytes() const
    {
        QByteArray out = m_out;
        qToBigEndian(quint32(m_hasNull ? 1 : 0), out.data() + 4);
        qToBigEndian(quint32(m_count), out.data() + 12);
        return out;
    }

private:
    void put(quint32 word)
    {
        const quint32 big = qToBigEndian(word);
        m_out.append(reinterpret_cast<const char *>(&big), 4);
    }
    QByteArray m_out;
    bool m_hasNull = false;
    int m_count = 0;
};

std::vector<qint64> bigintsOf(const QByteArray &literal)
{
    std::vector<qint64> out;
    for (const QByteArray &n : literal.mid(1, literal.size() - 2).split(','))
        if (!n.isEmpty())
            out.push_back(n.toLongLong());
    return out;
}

// Metadata filters the index cannot judge are checked on the records (no hits without reading them).
bool needsPostFilter(const RecordFilter &f)
{
    return f.metadata.is_object() && !f.metadata.empty() && !VectorIndex::judges(MetadataFilter::parse(f.metadata));
}

// The connection the calling thread leased for a store (PostgresStorage::Lease): every helper of an
// operation runs on its caller's connection without passing it along.
struct CurrentConnection
{
    const void *owner = nullptr;
    pg_conn *conn = nullptr;
};
thread_local CurrentConnection t_current;

} // namespace

// ---------------------------------------------------------------------------------------------
// Plumbing

// A connection of the pool, for one operation of the calling thread: taken from the idle ones, or
// opened while fewer than pool_size are open, or waited for; made the thread's current connection
// (t_current) until the lease ends.
class PostgresStorage::Lease
{
public:
    explicit Lease(PostgresStorage &s) : m_s(s), m_previous(t_current)
    {
        m_conn = take();
        t_current = CurrentConnection{&s, m_conn};
    }
    ~Lease()
    {
        t_current = m_previous;
        QMutexLocker lock(&m_s.m_poolMutex);
        // A connection that broke or was left mid-pipeline is closed; the pool opens another on demand.
        if (m_s.m_closed || PQstatus(m_conn) != CONNECTION_OK || PQpipelineStatus(m_conn) != PQ_PIPELINE_OFF
            || PQtransactionStatus(m_conn) != PQTRANS_IDLE) {
            PQfinish(m_conn);
            --m_s.m_open;
        } else {
            m_s.m_idle.push_back(m_conn);
        }
        m_s.m_poolFree.wakeOne();
    }
    Lease(const Lease &) = delete;
    Lease &operator=(const Lease &) = delete;

private:
    pg_conn *take()
    {
        QMutexLocker lock(&m_s.m_poolMutex);
        for (;;) {
            m_s.ensureOpen();
            if (!m_s.m_idle.empty()) {
                pg_conn *c = m_s.m_idle.back();
                m_s.m_idle.pop_back();
                return c;
            }
            if (m_s.m_open < m_s.m_options.poolSize) {
                ++m_s.m_open;
                lock.unlock();
                try {
                    return m_s.openConnection();
                } catch (...) {
                    lock.relock();
                    --m_s.m_open;
                    m_s.m_poolFree.wakeOne();
                    throw;
                }
            }
            m_s.m_poolFree.wait(&m_s.m_poolMutex);
        }
    }

    PostgresStorage &m_s;
    CurrentConnection m_previous;
    pg_conn *m_conn = nullptr;
};

PostgresStorage::GraphLease::GraphLease(PostgresStorage &storage) : lease(std::make_unique<Lease>(storage)) {}
PostgresStorage::GraphLease::~GraphLease() = default;

// A transaction on the current connection. The rows it changes (changed()) go into one change-log
// entry at commit().
class PostgresStorage::Transaction
{
public:
    Transaction(PostgresStorage &s, const QString &doing) : m_s(s), m_doing(doing) { m_s.exec("BEGIN", doing); }
    ~Transaction()
    {
        if (!m_done)
            PQclear(PQexec(m_s.current(), "ROLLBACK"));
    }
    void changed(qint64 rid) { m_rids.push_back(rid); }
    // The change-log entry commit() wrote (none: seq -1).
    const Logged &logged() const { return m_logged; }
    void commit()
    {
        if (!m_rids.empty()) {
            m_logged = m_s.logChanges(m_rids);
            if (m_s.m_beforeCommit)
                m_s.m_beforeCommit();
        }
        m_s.exec("COMMIT", m_doing);
        m_done = true;
    }

private:
    PostgresStorage &m_s;
    QString m_doing;
    std::vector<qint64> m_rids;
    Logged m_logged;
    bool m_done = false;
};

int PostgresStorage::Params::add(std::optional<QByteArray> value, bool isBinary)
{
    values.push_back(std::move(value));
    binary.push_back(isBinary);
    return int(values.size());
}

PostgresStorage::Options PostgresStorage::Options::fromJson(const Json &config)
{
    if (!config.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the postgres storage config must be an object such as {\"dsn\": \"host=db.example dbname=mneme user=mneme\"}"));
    Options o;
    const auto integer = [](const Json &value, const char *key, qint64 low, qint64 high, const char *meaning) {
        if (!value.is_number_integer() || value.get<qint64>() < low || value.get<qint64>() > high)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("storage config \"%1\" must be a whole number of %2 from %3 to %4").arg(QLatin1String(key), QLatin1String(meaning)).arg(low).arg(high));
        return int(value.get<qint64>());
    };
    for (const auto &[key, value] : config.items()) {
        if (key == "dsn") {
            if (!value.is_string() || value.get<std::string>().empty())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("storage config \"dsn\" must be a non-empty libpq connection string or URI, such as "
                                           "\"host=db.example dbname=mneme user=mneme\""));
            o.dsn = QString::fromStdString(value.get<std::string>());
        } else if (key == "connect_timeout_s") {
            o.connectTimeoutS = integer(value, "connect_timeout_s", 1, 3600, "seconds");
        } else if (key == "pool_size") {
            o.poolSize = integer(value, "pool_size", 1, 64, "connections");
        } else if (key == "ann_threshold") {
            o.annThreshold = integer(value, "ann_threshold", 1, 2000000000, "records");
        } else if (key == "change_log_keep") {
            o.changeLogKeep = integer(value, "change_log_keep", 1, 2000000000, "change-log entries");
        } else if (key == "listen") {
            if (!value.is_boolean())
                throw Error(ErrorKind::InvalidArgument, QStringLiteral("storage config \"listen\" must be true or false"));
            o.listen = value.get<bool>();
        } else if (key == "vector_search") {
            const std::string mode = value.is_string() ? value.get<std::string>() : std::string();
            if (mode == "auto")
                o.vectorSearch = VectorSearch::Auto;
            else if (mode == "pgvector")
                o.vectorSearch = VectorSearch::Pgvector;
            else if (mode == "local")
                o.vectorSearch = VectorSearch::Local;
            else
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("storage config \"vector_search\" must be \"auto\" (pgvector when the database has the "
                                           "extension), \"pgvector\" (always; an error without it) or \"local\" (the per-process index)"));
        } else if (key == "index_dir") {
            if (!value.is_string() || value.get<std::string>().empty())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("storage config \"index_dir\" must be the path of a folder for the vector index files"));
            o.indexDir = QString::fromStdString(value.get<std::string>());
        } else {
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("unknown postgres storage config key \"%1\"; use \"dsn\", \"connect_timeout_s\", \"pool_size\", "
                                       "\"index_dir\", \"ann_threshold\", \"change_log_keep\", \"listen\" and \"vector_search\"")
                            .arg(QString::fromStdString(key)));
        }
    }
    if (o.dsn.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the postgres storage needs \"dsn\", such as {\"dsn\": \"host=db.example dbname=mneme user=mneme\"}; "
                                   "the password comes from PGPASSWORD or a .pgpass file"));
    char *parseError = nullptr;
    PQconninfoOption *parsed = PQconninfoParse(o.dsn.toUtf8().constData(), &parseError);
    if (!parsed) {
        PQfreemem(parseError); // may quote the string, password and all
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("storage config \"dsn\" is not a libpq connection string or URI; write it as "
                                   "\"host=... port=... dbname=... user=...\" or \"postgresql://user@host:port/dbname\""));
    }
    bool hasPassword = false;
    for (PQconninfoOption *opt = parsed; opt->keyword; ++opt)
        if (std::strcmp(opt->keyword, "password") == 0 && opt->val && *opt->val)
            hasPassword = true;
    PQconninfoFree(parsed);
    if (hasPassword)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("storage config \"dsn\" holds a password; remove it, and give the password in the environment "
                                   "(PGPASSWORD) or a .pgpass file (PGPASSFILE), so that it is never written into a configuration"));
    return o;
}

int PostgresStorage::latestSchemaVersion()
{
    return std::end(kMigrations)[-1].version;
}

PostgresStorage::PostgresStorage(const Options &options) : m_options(options)
{
    Lease lease(*this);
    migrate();
    ensureWordsIndex();
    readIdentity();
    detectVectorSearch();
    if (m_options.listen) {
        // Open only once the listener listens: a write another process makes after this store is
        // open is always notified to it.
        std::promise<void> listening;
        std::future<void> ready = listening.get_future();
        m_listener = std::thread([this, &listening] { listenForChanges(listening); });
        ready.wait();
    }
}

PostgresStorage::~PostgresStorage()
{
    close();
}

pg_conn *PostgresStorage::openConnection()
{
    const QByteArray dsn = m_options.dsn.toUtf8();
    const QByteArray timeout = QByteArray::number(m_options.connectTimeoutS);
    const char *keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
    const char *values[] = {dsn.constData(), timeout.constData(), "mneme", nullptr};
    pg_conn *c = PQconnectdbParams(keys, values, 1);
    if (!c)
        throw Error(ErrorKind::Storage, QStringLiteral("could not allocate a PostgreSQL connection"));
    if (PQstatus(c) != CONNECTION_OK) {
        const QByteArray message = PQerrorMessage(c);
        PQfinish(c);
        fail(QStringLiteral("connecting to the PostgreSQL server (check the dsn, that the server runs, and the password "
                            "in PGPASSWORD or the .pgpass file)"),
             message);
    }
    PQsetNoticeProcessor(c, logNotice, nullptr);
    if (m_location.isEmpty()) // the first connection, made by the constructor alone
        m_location = QStringLiteral("postgresql://%1@%2:%3/%4")
                         .arg(QString::fromUtf8(PQuser(c)), QString::fromUtf8(PQhost(c)), QString::fromUtf8(PQport(c)),
                              QString::fromUtf8(PQdb(c)));
    // Without JIT compilation: Mneme's statements are short, and compiling them (tens of milliseconds)
    // costs more than it saves whenever the planner's estimates run high, as on a table without
    // statistics yet.
    Result r(PQexec(c, "SET client_min_messages = warning; SET jit = off"));
    if (r.status() != PGRES_COMMAND_OK) {
        const QByteArray message = PQerrorMessage(c);
        PQfinish(c);
        fail(QStringLiteral("configuring the connection"), message);
    }
    return c;
}

pg_conn *PostgresStorage::current() const
{
    if (t_current.owner != this || !t_current.conn)
        throw Error(ErrorKind::Internal, QStringLiteral("the postgres storage ran a statement without a connection of its own"));
    return t_current.conn;
}

void PostgresStorage::fail(const QString &doing, const QByteArray &serverMessage) const
{
    QString message = QString::fromUtf8(serverMessage).trimmed();
    // libpq does not quote passwords in its messages; should a server ever echo one, it goes no further.
    const QString password = qEnvironmentVariable("PGPASSWORD");
    if (password.size() >= 3)
        message.replace(password, QStringLiteral("***"));
    throw Error(ErrorKind::Storage, QStringLiteral("%1 failed for the store %2: %3")
                                        .arg(doing, m_location.isEmpty() ? QStringLiteral("on PostgreSQL") : m_location, message));
}

void PostgresStorage::ensureOpen() const
{
    if (m_closed)
        throw Error(ErrorKind::Storage, QStringLiteral("the store %1 is closed").arg(m_location));
}

namespace {

struct PreparedParams
{
    std::vector<const char *> values;
    std::vector<int> lengths, formats;
};

template<typename P>
PreparedParams prepared(const P &params)
{
    PreparedParams out;
    for (std::size_t i = 0; i < params.values.size(); ++i) {
        const std::optional<QByteArray> &v = params.values[i];
        out.values.push_back(v ? v->constData() : nullptr);
        out.lengths.push_back(v ? int(v->size()) : 0);
        out.formats.push_back(params.binary[i] ? 1 : 0);
    }
    return out;
}

} // namespace

PostgresStorage::Result PostgresStorage::exec(const QByteArray &sql, const Params &params, const QString &doing, bool binaryResult)
{
    ensureOpen();
    pg_conn *c = current();
    const PreparedParams p = prepared(params);
    // Without parameters, the simple protocol, which runs several statements (a migration step) at once.
    Result r(p.values.empty() && !binaryResult
                 ? PQexec(c, sql.constData())
                 : PQexecParams(c, sql.constData(), int(p.values.size()), nullptr, p.values.data(), p.lengths.data(),
                                p.formats.data(), binaryResult ? 1 : 0));
    const ExecStatusType status = r.status();
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        fail(doing, PQerrorMessage(c)); // a broken connection is closed when its lease ends
    return r;
}

PostgresStorage::Result PostgresStorage::exec(const QByteArray &sql, const QString &doing)
{
    return exec(sql, Params(), doing);
}

std::vector<PostgresStorage::Result> PostgresStorage::execAll(const std::vector<Statement> &statements, const QString &doing)
{
    ensureOpen();
    pg_conn *c = current();
    std::vector<Result> out;
    out.reserve(statements.size());
    for (std::size_t first = 0; first < statements.size(); first += kPipelineChunk) {
        const std::size_t last = std::min(statements.size(), first + kPipelineChunk);
        if (PQenterPipelineMode(c) != 1)
            fail(doing, PQerrorMessage(c));
        for (std::size_t i = first; i < last; ++i) {
            const PreparedParams p = prepared(statements[i].params);
            if (!PQsendQueryParams(c, statements[i].sql.constData(), int(p.values.size()), nullptr, p.values.data(),
                                   p.lengths.data(), p.formats.data(), 0))
                fail(doing, PQerrorMessage(c)); // the lease closes the connection, left in pipeline mode
        }
        if (!PQpipelineSync(c))
            fail(doing, PQerrorMessage(c));
        QByteArray error;
        for (std::size_t i = first; i < last; ++i) {
            Result r(PQgetResult(c));
            const ExecStatusType status = r.status();
            if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && error.isEmpty())
                error = r.errorMessage(); // the first failure; the statements after it are aborted
            out.push_back(std::move(r));
            while (pg_result *end = PQgetResult(c)) // each statement's results end with a null
                PQclear(end);
        }
        Result sync(PQgetResult(c));
        if (sync.status() != PGRES_PIPELINE_SYNC && error.isEmpty())
            error = PQerrorMessage(c);
        PQexitPipelineMode(c);
        if (!error.isEmpty())
            fail(doing, error);
    }
    return out;
}

void PostgresStorage::migrate()
{
    Transaction t(*this, QStringLiteral("preparing the schema"));
    Params lock;
    lock.add(kSchemaLock);
    exec("SELECT pg_advisory_xact_lock($1)", lock, QStringLiteral("waiting for another process preparing the schema"));
    exec("CREATE TABLE IF NOT EXISTS mneme_meta (key text PRIMARY KEY, value text NOT NULL)", QStringLiteral("creating the schema"));
    Result v = exec("SELECT value FROM mneme_meta WHERE key = 'schema_version'", QStringLiteral("reading the schema version"));
    const int current = v.rows() ? int(v.int64(0, 0)) : 0;
    if (current > latestSchemaVersion())
        throw Error(ErrorKind::SchemaTooNew,
                    QStringLiteral("the store %1 has schema version %2, newer than this Mneme reads (%3); upgrade Mneme")
                        .arg(m_location)
                        .arg(current)
                        .arg(latestSchemaVersion()));
    m_version = applySchemaMigrations(
        kMigrations, current,
        [&](const SchemaMigration &m) {
            exec(m.sql, QStringLiteral("upgrading the schema to version %1").arg(m.version));
            if (m.version == kClientWordsVersion)
                rewriteWords();
        },
        [&](int version) {
            Params p;
            p.add(QByteArray::number(version));
            exec("INSERT INTO mneme_meta(key, value) VALUES ('schema_version', $1) "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 p, QStringLiteral("recording the schema version"));
        });
    t.commit();
}

// Every record's words as TextWords writes them, a chunk at a time, in the caller's transaction (the
// schema upgrade's: the other processes wait for it at open). A process's keyword index is loaded at
// its first keyword search after the open, so none holds the old words.
void PostgresStorage::rewriteWords()
{
    for (qint64 after = 0;;) {
        Params p;
        p.add(after);
        p.add(qint64(kChunk));
        const Result r = exec("SELECT rid, content, context FROM mneme_records WHERE rid > $1 ORDER BY rid LIMIT $2", p,
                              QStringLiteral("reading the records' texts to index their words"));
        BinaryArray rids(BinaryArray::kInt8), words(BinaryArray::kText), contextWords(BinaryArray::kText);
        for (int i = 0; i < r.rows(); ++i) {
            after = r.int64(i, 0);
            rids.add(after);
            words.add(TextWords::tsvector(r.text(i, 1)));
            contextWords.add(TextWords::tsvector(r.text(i, 2)));
        }
        if (r.rows() > 0) {
            Params u;
            for (const BinaryArray *column : {&rids, &words, &contextWords})
                u.add(column->bytes(), true);
            exec("UPDATE mneme_records AS r SET words = t.words::tsvector, context_words = t.context_words::tsvector "
                 "FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t(rid, words, context_words) WHERE r.rid = t.rid",
                 u, QStringLiteral("writing the records' words"));
        }
        if (r.rows() < kChunk)
            break;
    }
}

// The store's id, the server's pgvector, and the index file of this server, database and schema.
void PostgresStorage::readIdentity()
{
    Result r = exec("SELECT (SELECT value FROM mneme_meta WHERE key = 'store_id'), current_schema(), "
                    "(SELECT extversion FROM pg_extension WHERE extname = 'vector')",
                    QStringLiteral("reading the store's identity"));
    m_storeId = r.text(0, 0);
    m_vectorExtension = r.isNull(0, 2) ? QString() : r.text(0, 2);
    QString dir = m_options.indexDir;
    if (dir.isEmpty())
        dir = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation) + QStringLiteral("/mneme/postgres");
    pg_conn *c = current();
    // Named by where the store is (never by who logs in, nor a password): host, port, database, schema.
    const QByteArray where = QByteArray(PQhost(c)) + ':' + PQport(c) + '/' + PQdb(c) + '/' + r.bytes(0, 1);
    m_indexFile = QDir(dir).filePath(QStringLiteral("pg-%1.hnsw")
                                         .arg(QString::fromLatin1(QCryptographicHash::hash(where, QCryptographicHash::Sha256).toHex().left(32))));
}

std::optional<EmbedderBinding> PostgresStorage::storedBinding()
{
    Result r = exec("SELECT key, value FROM mneme_meta WHERE key IN ('embedder_id', 'dimension')", QStringLiteral("reading the embedder"));
    EmbedderBinding b;
    for (int i = 0; i < r.rows(); ++i) {
        if (r.text(i, 0) == QLatin1String("embedder_id"))
            b.embedderId = r.text(i, 1);
        else
            b.dimension = r.text(i, 1).toInt();
    }
    if (b.dimension <= 0)
        return std::nullopt;
    return b;
}

void PostgresStorage::checkDimension(int dimension, const QString &what)
{
    const std::optional<EmbedderBinding> b = storedBinding();
    if (b && b->dimension != dimension)
        throw Error(ErrorKind::EmbedderMismatch,
                    QStringLiteral("%1 is %2-dimensional, but the store %3 holds embeddings of %4; Mneme does not mix embeddings. "
                                   "Configure the embedder the store was written with, or %5")
                        .arg(what)
                        .arg(dimension)
                        .arg(m_location, describe(b), kResetAdvice));
    if (!b) {
        Params p;
        p.add(QByteArray::number(dimension));
        exec("INSERT INTO mneme_meta(key, value) VALUES ('dimension', $1) ON CONFLICT (key) DO NOTHING", p,
             QStringLiteral("recording the embedding dimension"));
        prepareVectorColumn(dimension);
    }
}

// ---------------------------------------------------------------------------------------------
// Records

QByteArray PostgresStorage::where(const RecordFilter &filter, Params &params) const
{
    QList<QByteArray> conds;
    if (!filter.scopes.isEmpty() && !filter.scopes.contains(QStringLiteral("/"))) {
        QList<QByteArray> any;
        for (const QString &s : filter.scopes) {
            const int exact = params.add(s);
            const int below = params.add(likePrefix(s + QLatin1Char('/')));
            any << "scope = $" + QByteArray::number(exact) + " OR scope LIKE $" + QByteArray::number(below);
        }
        conds << "(" + any.join(" OR ") + ")";
    }
    if (!filter.ids.isEmpty()) {
        QList<QByteArray> ids;
        for (const QString &id : filter.ids)
            ids << "$" + QByteArray::number(params.add(id));
        conds << "id IN (" + ids.join(", ") + ")";
    }
    if (filter.createdBefore.isValid())
        conds << "created_at < $" + QByteArray::number(params.add(filter.createdBefore.toMSecsSinceEpoch()));
    if (filter.createdAfter.isValid())
        conds << "created_at >= $" + QByteArray::number(params.add(filter.createdAfter.toMSecsSinceEpoch()));
    if (filter.applyPrivacy && !filter.includePrivate)
        conds << (filter.source.isEmpty() ? QByteArray("NOT private")
                                          : "(NOT private OR source = $" + QByteArray::number(params.add(filter.source)) + ")");
    if (!filter.onlySource.isEmpty())
        conds << "source = $" + QByteArray::number(params.add(filter.onlySource));
    return conds.isEmpty() ? QByteArray("true") : conds.join(" AND ");
}

namespace {

// The categories column's names (JSON text; anything else read as none).
QStringList categoriesOf(std::string_view column)
{
    QStringList out;
    const Json cats = parseJsonOrDiscarded(column);
    if (cats.is_array())
        for (const Json &c : cats)
            if (c.is_string())
                out << QString::fromStdString(c.get<std::string>());
    return out;
}

MemoryRecord recordAt(const auto &r, int row)
{
    MemoryRecord m;
    m.id = r.text(row, 1);
    m.content = r.text(row, 2);
    m.scope = r.text(row, 3);
    m.categories = categoriesOf(r.view(row, 4));
    m.importance = r.number(row, 5);
    m.source = r.text(row, 6);
    m.isPrivate = r.boolean(row, 7);
    const Json meta = parseJsonOrDiscarded(r.bytes(row, 8).toStdString());
    m.metadata = meta.is_object() ? meta : Json::object();
    m.createdAt = QDateTime::fromMSecsSinceEpoch(r.int64(row, 9), Qt::UTC);
    m.updatedAt = QDateTime::fromMSecsSinceEpoch(r.int64(row, 10), Qt::UTC);
    if (!r.isNull(row, 11))
        m.lastAccessed = QDateTime::fromMSecsSinceEpoch(r.int64(row, 11), Qt::UTC);
    m.accessCount = int(r.int64(row, 12));
    m.context = r.text(row, 13);
    return m;
}

} // namespace

std::vector<MemoryRecord> PostgresStorage::select(const RecordFilter &filter, bool withEmbedding, const QByteArray &tail,
                                                  std::vector<qint64> *rids, Params p)
{
    const QByteArray w = where(filter, p);
    Result r = exec("SELECT " + kColumns + (withEmbedding ? ", embedding" : "") + " FROM mneme_records WHERE " + w + " "
                        + (tail.isEmpty() ? QByteArray("ORDER BY created_at DESC, id") : tail),
                    p, QStringLiteral("reading records"));
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    std::vector<MemoryRecord> out;
    for (int i = 0; i < r.rows(); ++i) {
        MemoryRecord m = recordAt(r, i);
        if (!filter.matches(m, conditions))
            continue;
        if (withEmbedding && !r.isNull(i, 14))
            m.embedding = pg::embeddingOf(r.bytea(i, 14));
        if (rids)
            rids->push_back(r.int64(i, 0));
        out.push_back(std::move(m));
    }
    return out;
}

std::optional<MemoryRecord> PostgresStorage::byId(const QString &id, bool withEmbedding, qint64 *rid)
{
    Params p;
    p.add(id);
    Result r = exec("SELECT " + kColumns + (withEmbedding ? ", embedding" : "") + " FROM mneme_records WHERE id = $1", p,
                    QStringLiteral("reading record %1").arg(id));
    if (!r.rows())
        return std::nullopt;
    MemoryRecord m = recordAt(r, 0);
    if (withEmbedding && !r.isNull(0, 14))
        m.embedding = pg::embeddingOf(r.bytea(0, 14));
    if (rid)
        *rid = r.int64(0, 0);
    return m;
}

std::unordered_map<qint64, MemoryRecord> PostgresStorage::byRids(const std::vector<qint64> &rids, bool withEmbedding)
{
    std::unordered_map<qint64, MemoryRecord> out;
    for (std::size_t first = 0; first < rids.size(); first += kChunk) {
        Params p;
        p.add(bigintArray(std::vector<qint64>(rids.begin() + std::ptrdiff_t(first),
                                              rids.begin() + std::ptrdiff_t(std::min(rids.size(), first + kChunk)))));
        Result r = exec("SELECT " + kColumns + (withEmbedding ? ", embedding" : "") + " FROM mneme_records WHERE rid = ANY($1::bigint[])",
                        p, QStringLiteral("reading records"));
        for (int i = 0; i < r.rows(); ++i) {
            MemoryRecord m = recordAt(r, i);
            if (withEmbedding && !r.isNull(i, 14))
                m.embedding = pg::embeddingOf(r.bytea(i, 14));
            out.emplace(r.int64(i, 0), std::move(m));
        }
    }
    return out;
}

std::vector<qint64> PostgresStorage::ridsOf(const QStringList &ids)
{
    Params p;
    QList<QByteArray> list;
    for (const QString &id : ids)
        list << "$" + QByteArray::number(p.add(id));
    std::vector<qint64> out;
    if (list.isEmpty())
        return out;
    Result r = exec("SELECT rid FROM mneme_records WHERE id IN (" + list.join(", ") + ")", p, QStringLiteral("reading record ids"));
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(r.int64(i, 0));
    return out;
}

PostgresStorage::Statement PostgresStorage::historyStatement(const QString &recordId, HistoryEntry::Event event,
                                                             const MemoryRecord *oldRecord, const MemoryRecord *newRecord, qint64 atMs)
{
    Params p;
    p.add(recordId);
    p.add(HistoryEntry::eventName(event));
    p.add(oldRecord ? std::optional(oldRecord->content.toUtf8()) : std::nullopt);
    p.add(newRecord ? std::optional(newRecord->content.toUtf8()) : std::nullopt);
    p.add(oldRecord ? std::optional(recordJson(*oldRecord)) : std::nullopt);
    p.add(newRecord ? std::optional(recordJson(*newRecord)) : std::nullopt);
    p.add(atMs);
    return Statement{"INSERT INTO mneme_history(record_id, event, old_content, new_content, old_record, new_record, at) "
                     "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                     std::move(p)};
}

PostgresStorage::Logged PostgresStorage::logChanges(const std::vector<qint64> &rids)
{
    Params lock;
    lock.add(kChangeLock);
    Params entry;
    entry.add(bigintArray(rids));
    entry.add(nowUtc().toMSecsSinceEpoch());
    Params notify;
    notify.add(QByteArray(kChangeChannel));
    notify.add(m_storeId);
    // The lock first: the entry's seq is drawn after every earlier entry committed (the lock is
    // released after the commit is visible).
    const std::vector<Result> done = execAll({Statement{"SELECT pg_advisory_xact_lock($1)", std::move(lock)},
                                              positionStatement(),
                                              Statement{"INSERT INTO mneme_changes(rids, at) VALUES ($1::bigint[], $2) RETURNING seq",
                                                        std::move(entry)},
                                              Statement{"SELECT pg_notify($1, $2)", std::move(notify)}},
                                             QStringLiteral("logging the change"));
    const Logged logged{positionOf(done[1]), done[2].int64(0, 0)};
    const qint64 every = std::max<qint64>(1, m_options.changeLogKeep / 10);
    if (logged.seq / every != logged.before.seq / every)
        pruneChanges();
    return logged;
}

// Deletes the change-log entries older than the newest change_log_keep, and notes the last seq deleted
// (changes_pruned_through): a process whose index is older than that reloads it instead of catching
// up (catchUp()). Under the change lock, in the transaction of the entry just written.
void PostgresStorage::pruneChanges()
{
    Params keep;
    keep.add(qint64(m_options.changeLogKeep));
    const Result cut = exec("SELECT seq FROM mneme_changes ORDER BY seq DESC OFFSET $1 LIMIT 1", keep,
                            QStringLiteral("pruning the change log"));
    if (cut.rows() == 0)
        return;
    Params through;
    through.add(cut.int64(0, 0));
    Params mark = through;
    // The word totals' deltas are summed into one row (those of writes not committed yet are not seen,
    // and stay).
    execAll({Statement{"WITH gone AS (DELETE FROM mneme_word_totals RETURNING records, length) INSERT INTO "
                       "mneme_word_totals(records, length) SELECT coalesce(sum(records), 0), coalesce(sum(length), 0) FROM gone",
                       {}},
             Statement{"DELETE FROM mneme_changes WHERE seq <= $1", std::move(through)},
             Statement{"INSERT INTO mneme_meta(key, value) VALUES ('changes_pruned_through', $1) ON CONFLICT (key) "
                       "DO UPDATE SET value = greatest(mneme_meta.value::bigint, excluded.value::bigint)::text",
                       std::move(mark)}},
            QStringLiteral("pruning the change log"));
}

PostgresStorage::Params PostgresStorage::recordParams(const MemoryRecord &r, qint64 atMs)
{
    Params p;
    p.add(r.id);
    p.add(r.content);
    p.add(r.scope);
    p.add(categoriesText(r.categories));
    p.add(QByteArray::number(r.importance, 'g', 17));
    p.add(r.source);
    p.add(QByteArray(r.isPrivate ? "true" : "false"));
    p.add(jsonText(r.metadata.is_object() ? r.metadata : Json::object()));
    p.add(msOf(r.createdAt, atMs));
    p.add(msOf(r.updatedAt, atMs));
    p.add(r.lastAccessed.isValid() ? std::optional(QByteArray::number(r.lastAccessed.toMSecsSinceEpoch())) : std::nullopt);
    p.add(qint64(r.accessCount));
    p.add(r.embedding.empty() ? std::nullopt : std::optional(pg::embeddingBytes(r.embedding)), true);
    p.add(r.context);
    p.add(TextWords::tsvector(r.content));
    p.add(TextWords::tsvector(r.context));
    return p;
}

// One statement inserting the records (each column an array in the binary format; with pgvector's
// column, `vectorType`, the embeddings in its text form too), returning their row ids.
PostgresStorage::Statement PostgresStorage::insertStatement(const std::vector<const MemoryRecord *> &records, qint64 atMs,
                                                            const QByteArray &vectorType)
{
    BinaryArray id(BinaryArray::kText), content(BinaryArray::kText), scope(BinaryArray::kText), categories(BinaryArray::kText),
        importance(BinaryArray::kFloat8), source(BinaryArray::kText), isPrivate(BinaryArray::kBool), metadata(BinaryArray::kText),
        created(BinaryArray::kInt8), updated(BinaryArray::kInt8), accessed(BinaryArray::kInt8), accessCount(BinaryArray::kInt4),
        embedding(BinaryArray::kBytea), context(BinaryArray::kText), words(BinaryArray::kText), contextWords(BinaryArray::kText),
        vectors(BinaryArray::kText);
    for (const MemoryRecord *r : records) {
        id.add(r->id);
        content.add(r->content);
        scope.add(r->scope);
        categories.add(categoriesText(r->categories));
        importance.add(r->importance);
        source.add(r->source);
        isPrivate.add(r->isPrivate);
        metadata.add(jsonText(r->metadata.is_object() ? r->metadata : Json::object()));
        created.add(msOf(r->createdAt, atMs));
        updated.add(msOf(r->updatedAt, atMs));
        if (r->lastAccessed.isValid())
            accessed.add(qint64(r->lastAccessed.toMSecsSinceEpoch()));
        else
            accessed.addNull();
        accessCount.add(int(r->accessCount));
        if (r->embedding.empty())
            embedding.addNull();
        else
            embedding.add(pg::embeddingBytes(r->embedding));
        context.add(r->context);
        words.add(TextWords::tsvector(r->content));
        contextWords.add(TextWords::tsvector(r->context));
        if (!vectorType.isEmpty()) {
            if (const std::optional<QByteArray> v = pgvectorText(r->embedding))
                vectors.add(*v);
            else
                vectors.addNull();
        }
    }
    Params p;
    for (const BinaryArray *column : {&id, &content, &scope, &categories, &importance, &source, &isPrivate, &metadata, &created, &updated,
                                      &accessed, &accessCount, &embedding, &context, &words, &contextWords})
        p.add(column->bytes(), true);
    QByteArray vectorColumn, vectorValue, vectorArray;
    if (!vectorType.isEmpty()) {
        p.add(vectors.bytes(), true);
        vectorColumn = ", embedding_v";
        vectorValue = ", t.embedding_v::" + vectorType;
        vectorArray = ", $17::text[]";
    }
    return Statement{
        "INSERT INTO mneme_records(id, content, scope, categories, importance, source, private, metadata, created_at, updated_at, "
        "last_accessed, access_count, embedding, context, words, context_words"
            + vectorColumn
            + ") "
              "SELECT t.id, t.content, t.scope, t.categories, t.importance, t.source, t.private, t.metadata, t.created_at, t.updated_at, "
              "t.last_accessed, t.access_count, t.embedding, t.context, t.words::tsvector, t.context_words::tsvector"
            + vectorValue
            + " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::boolean[], $8::text[], "
              "$9::bigint[], $10::bigint[], $11::bigint[], $12::integer[], $13::bytea[], $14::text[], $15::text[], $16::text[]"
            + vectorArray
            + ") AS t(id, content, scope, categories, importance, source, private, metadata, created_at, updated_at, last_accessed, "
              "access_count, embedding, context, words, context_words"
            + vectorColumn + ") RETURNING rid",
        std::move(p)};
}

// One statement writing the ADD history entries of the records (binary arrays).
PostgresStorage::Statement PostgresStorage::addHistoryStatement(const std::vector<const MemoryRecord *> &records, qint64 atMs)
{
    BinaryArray recordId(BinaryArray::kText), newContent(BinaryArray::kText), newRecord(BinaryArray::kText);
    for (const MemoryRecord *r : records) {
        recordId.add(r->id);
        newContent.add(r->content);
        newRecord.add(recordJson(*r));
    }
    Params p;
    for (const BinaryArray *column : {&recordId, &newContent, &newRecord})
        p.add(column->bytes(), true);
    p.add(HistoryEntry::eventName(HistoryEntry::Event::Add));
    p.add(atMs);
    return Statement{"INSERT INTO mneme_history(record_id, event, new_content, new_record, at) "
                     "SELECT t.record_id, $4, t.new_content, t.new_record, $5 "
                     "FROM unnest($1::text[], $2::text[], $3::text[]) AS t(record_id, new_content, new_record)",
                     std::move(p)};
}

// The stored record identical to each of these: one statement reads every stored record with one of
// their contents, and they are matched here. It looks each content up by the md5 index (a lateral
// subquery the planner keeps as it is): `content_hash = ANY(...)` has the planner judge the table,
// and on a young table without statistics (before autovacuum's first analyze, most of a bulk load)
// it scanned the whole table for every batch.
std::vector<std::optional<MemoryRecord>> PostgresStorage::identicals(std::span<const MemoryRecord> records, const QString *scopePrefix,
                                                                     bool identities)
{
    QMultiHash<QString, MemoryRecord> stored; // by content, oldest first
    for (std::size_t first = 0; first < records.size(); first += kChunk) {
        QSet<QByteArray> distinct;
        for (std::size_t i = first; i < std::min(records.size(), first + kChunk); ++i)
            distinct.insert(QCryptographicHash::hash(records[i].content.toUtf8(), QCryptographicHash::Md5).toHex());
        Params p;
        p.add(arrayLiteral(std::vector<std::optional<QByteArray>>(distinct.begin(), distinct.end())));
        QByteArray scope;
        if (scopePrefix && *scopePrefix != QLatin1String("/")) {
            const int exact = p.add(*scopePrefix);
            const int below = p.add(likePrefix(*scopePrefix + QLatin1Char('/')));
            scope = " AND (scope = $" + QByteArray::number(exact) + " OR scope LIKE $" + QByteArray::number(below) + ")";
        }
        Result r = exec("SELECT " + kColumns + " FROM unnest($1::text[]) AS wanted(hash), LATERAL (SELECT " + kColumns + " FROM mneme_records WHERE content_hash = wanted.hash" + scope + " OFFSET 0) AS same ORDER BY rid DESC",
                        p, QStringLiteral("looking up identical records"));
        for (int i = 0; i < r.rows(); ++i) {
            MemoryRecord m = recordAt(r, i);
            stored.insert(m.content, std::move(m)); // values() of a key: the last inserted first
        }
    }
    std::vector<std::optional<MemoryRecord>> out;
    out.reserve(records.size());
    for (const MemoryRecord &wanted : records) {
        std::optional<MemoryRecord> found;
        for (auto it = stored.constFind(wanted.content); it != stored.constEnd() && it.key() == wanted.content && !found; ++it) {
            const MemoryRecord &m = it.value();
            if (m.source != wanted.source || m.isPrivate != wanted.isPrivate || (!scopePrefix && m.scope != wanted.scope))
                continue;
            MemoryRecord probe = wanted;
            probe.scope = m.scope;
            if (!identities || StorageBackend::identical(probe, m))
                found = m;
        }
        out.push_back(std::move(found));
    }
    return out;
}

std::vector<QString> PostgresStorage::insertAll(std::span<const MemoryRecord> records, bool unlessIdentical)
{
    for (const MemoryRecord &r : records)
        checkRecord(r);
    std::vector<QString> ids(records.size());
    if (records.empty())
        return ids;
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    Transaction t(*this, QStringLiteral("saving records"));
    int dimension = 0;
    for (const MemoryRecord &r : records) {
        if (r.embedding.empty())
            continue;
        if (dimension && int(r.embedding.size()) != dimension)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("the records to save have embeddings of %1 and %2 dimensions; "
                                                                   "embed them with one embedder")
                                                        .arg(dimension)
                                                        .arg(r.embedding.size()));
        dimension = int(r.embedding.size());
    }
    if (dimension)
        checkDimension(dimension, QStringLiteral("the embedding of record %1").arg(records.front().id));
    if (unlessIdentical) {
        // Writers saving the same content at once (other processes, other hosts) take the same lock,
        // in the same order: the second one's lookup, a statement after the first one's commit, finds it.
        std::set<qint64> keys;
        for (const MemoryRecord &r : records) {
            const QByteArray digest = QCryptographicHash::hash(r.content.toUtf8(), QCryptographicHash::Md5);
            keys.insert(qFromBigEndian<qint64>(digest.constData()));
        }
        Params p;
        p.add(bigintArray(std::vector<qint64>(keys.begin(), keys.end())));
        exec("SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) AS sorted", p,
             QStringLiteral("waiting for other writers of the same content"));
    }
    const std::vector<std::optional<MemoryRecord>> stored =
        unlessIdentical ? identicals(records, nullptr, true) : std::vector<std::optional<MemoryRecord>>(records.size());
    std::vector<const MemoryRecord *> fresh;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const MemoryRecord &r = records[i];
        if (unlessIdentical) {
            if (stored[i])
                ids[i] = stored[i]->id;
            for (std::size_t k = 0; k < i && ids[i].isEmpty(); ++k)
                if (StorageBackend::identical(records[k], r))
                    ids[i] = ids[k];
            if (!ids[i].isEmpty())
                continue;
        }
        ids[i] = r.id;
        fresh.push_back(&r);
    }
    for (std::size_t first = 0; first < fresh.size(); first += kChunk) {
        const std::vector<const MemoryRecord *> chunk(fresh.begin() + std::ptrdiff_t(first),
                                                      fresh.begin() + std::ptrdiff_t(std::min(fresh.size(), first + kChunk)));
        const std::vector<Result> done = execAll({insertStatement(chunk, at, vectorColumn()), addHistoryStatement(chunk, at)}, QStringLiteral("saving records"));
        for (int i = 0; i < done[0].rows(); ++i)
            t.changed(done[0].int64(i, 0));
    }
    t.commit();
    keepInserted(t.logged(), fresh);
    return ids;
}

void PostgresStorage::update(const MemoryRecord &record)
{
    checkRecord(record);
    Transaction t(*this, QStringLiteral("updating record %1").arg(record.id));
    Params lock;
    lock.add(record.id);
    exec("SELECT 1 FROM mneme_records WHERE id = $1 FOR UPDATE", lock, QStringLiteral("locking record %1").arg(record.id));
    const std::optional<MemoryRecord> old = byId(record.id, false);
    if (!old)
        throw Error(ErrorKind::NotFound, QStringLiteral("there is no record with id %1 in the store %2 to update").arg(record.id, m_location));
    if (!record.embedding.empty())
        checkDimension(int(record.embedding.size()), QStringLiteral("the embedding of record %1").arg(record.id));
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    Params p = recordParams(record, at);
    QByteArray vector; // pgvector's column, when there is one, with the embedding
    if (const QByteArray type = vectorColumn(); !type.isEmpty() && !record.embedding.empty())
        vector = ", embedding_v = $" + QByteArray::number(p.add(pgvectorText(record.embedding))) + "::" + type;
    // A touch() in between is kept: access times and counts only grow.
    Result updated = exec(QByteArray("UPDATE mneme_records AS r SET content = $2, scope = $3, categories = $4, importance = $5, "
                                     "source = $6, private = $7, metadata = $8, created_at = $9, updated_at = $10, "
                                     "last_accessed = greatest(r.last_accessed, $11), access_count = greatest(r.access_count, $12), "
                                     "embedding = coalesce($13, r.embedding), context = $14, "
                                     "words = $15, context_words = $16"
                                     + vector + " WHERE r.id = $1 RETURNING r.rid"),
                          p, QStringLiteral("updating record %1").arg(record.id));
    t.changed(updated.int64(0, 0));
    const Statement history = historyStatement(record.id, HistoryEntry::Event::Update, &*old, &record, at);
    exec(history.sql, history.params, QStringLiteral("writing the history of record %1").arg(record.id));
    t.commit();
}

int PostgresStorage::remove(const RecordFilter &requested)
{
    const RecordFilter filter = normalized(requested);
    Transaction t(*this, QStringLiteral("deleting records"));
    std::vector<qint64> rids;
    const std::vector<MemoryRecord> doomed = select(filter, false, "ORDER BY rid FOR UPDATE", &rids);
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    std::vector<Statement> deletes;
    for (std::size_t first = 0; first < rids.size(); first += kChunk) {
        Params p;
        p.add(bigintArray(std::vector<qint64>(rids.begin() + std::ptrdiff_t(first),
                                              rids.begin() + std::ptrdiff_t(std::min(rids.size(), first + kChunk)))));
        deletes.push_back(Statement{"DELETE FROM mneme_records WHERE rid = ANY($1::bigint[])", std::move(p)});
    }
    for (std::size_t i = 0; i < doomed.size(); ++i) {
        deletes.push_back(historyStatement(doomed[i].id, HistoryEntry::Event::Delete, &doomed[i], nullptr, at));
        t.changed(rids[i]);
    }
    execAll(deletes, QStringLiteral("deleting records"));
    t.commit();
    return int(doomed.size());
}

int PostgresStorage::reset(const QString &scopePrefix)
{
    const QString prefix = ScopePath::normalize(scopePrefix);
    if (prefix != QLatin1String("/")) {
        RecordFilter f;
        f.scopes = {prefix};
        return remove(f);
    }
    Transaction t(*this, QStringLiteral("resetting the store"));
    const int n = int(exec("SELECT count(*) FROM mneme_records", QStringLiteral("counting records")).int64(0, 0));
    exec("DELETE FROM mneme_records", QStringLiteral("resetting the store"));
    exec("DELETE FROM mneme_history", QStringLiteral("resetting the store"));
    exec("DELETE FROM mneme_state", QStringLiteral("resetting the store"));
    exec("DELETE FROM mneme_meta WHERE key IN ('embedder_id', 'dimension')", QStringLiteral("resetting the store"));
    // A new generation: every process's index reloads (their change-log positions mean nothing now).
    Params lock;
    lock.add(kChangeLock);
    exec("SELECT pg_advisory_xact_lock($1)", lock, QStringLiteral("resetting the store"));
    exec("DELETE FROM mneme_changes", QStringLiteral("resetting the store"));
    exec("DELETE FROM mneme_meta WHERE key = 'changes_pruned_through'", QStringLiteral("resetting the store"));
    exec("UPDATE mneme_meta SET value = (value::bigint + 1)::text WHERE key = 'generation'", QStringLiteral("resetting the store"));
    t.commit();
    return n;
}

void PostgresStorage::bindEmbedder(const EmbedderBinding &binding)
{
    if (binding.embedderId.isEmpty() || binding.dimension <= 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("an embedder binding needs an embedder id and a positive dimension (got \"%1\", %2)")
                        .arg(binding.embedderId)
                        .arg(binding.dimension));
    Transaction t(*this, QStringLiteral("recording the embedder"));
    Params lock;
    lock.add(kSchemaLock + 1);
    exec("SELECT pg_advisory_xact_lock($1)", lock, QStringLiteral("waiting for another process recording the embedder"));
    const std::optional<EmbedderBinding> stored = storedBinding();
    if (stored && stored->embedderId == binding.embedderId && stored->dimension == binding.dimension)
        return;
    if (stored && (stored->dimension != binding.dimension || !stored->embedderId.isEmpty()))
        throw Error(ErrorKind::EmbedderMismatch,
                    QStringLiteral("the store %1 was written with the embedder %2, but the configured embedder is %3; "
                                   "Mneme does not mix embeddings. Configure the embedder the store was written with, or %4")
                        .arg(m_location, describe(stored), describe(binding), kResetAdvice));
    for (const auto &[key, value] : {std::pair{"embedder_id", binding.embedderId}, std::pair{"dimension", QString::number(binding.dimension)}}) {
        Params p;
        p.add(QByteArray(key));
        p.add(value);
        exec("INSERT INTO mneme_meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", p,
             QStringLiteral("recording the embedder"));
    }
    prepareVectorColumn(binding.dimension);
    t.commit();
}

// ---------------------------------------------------------------------------------------------
// The vector index

namespace {

// The index item of a row of kIndexColumns in a binary result; false when its embedding is not one
// of `dimension` floats (never searched).
bool indexItemAt(const auto &r, int row, int dimension, VectorIndex::Item &item, std::vector<float> &vector)
{
    item.rowid = r.binaryInt64(row, 0);
    const std::string_view embedding = r.isNull(row, 8) ? std::string_view() : r.view(row, 8);
    if (dimension <= 0 || embedding.size() != std::size_t(dimension) * sizeof(float))
        return false;
    item.scope = QString::fromUtf8(r.view(row, 1));
    item.categories = categoriesOf(r.view(row, 2));
    item.source = QString::fromUtf8(r.view(row, 3));
    item.isPrivate = r.binaryBool(row, 4);
    item.hasCreated = true;
    item.createdMs = r.binaryInt64(row, 5);
    item.importance = r.binaryDouble(row, 6);
    const std::string_view metadata = r.view(row, 7);
    // Most records have no identity keys; theirs is not parsed.
    item.identity = metadata.find("_id\"") == std::string_view::npos ? std::array<QString, 3>()
                                                                     : VectorIndex::identityOf(parseJsonOrDiscarded(metadata));
    vector.resize(std::size_t(dimension));
    for (int i = 0; i < dimension; ++i)
        vector[std::size_t(i)] = qFromLittleEndian<float>(embedding.data() + std::size_t(i) * sizeof(float));
    return true;
}

} // namespace

// Reads these rows into the index: their vectors and attributes as stored now, or their removal.
void PostgresStorage::applyRows(const std::vector<qint64> &rids)
{
    const int dimension = m_index.dimension();
    VectorIndex::Item item;
    std::vector<float> vector;
    for (std::size_t first = 0; first < rids.size(); first += kChunk) {
        const std::vector<qint64> chunk(rids.begin() + std::ptrdiff_t(first), rids.begin() + std::ptrdiff_t(std::min(rids.size(), first + kChunk)));
        Params p;
        p.add(bigintArray(chunk));
        Result r = exec("SELECT " + kIndexColumns + " FROM mneme_records WHERE rid = ANY($1::bigint[])", p,
                        QStringLiteral("reading changed records"), true);
        QSet<qint64> present;
        for (int i = 0; i < r.rows(); ++i) {
            if (indexItemAt(r, i, dimension, item, vector))
                m_index.upsert(item, vector.data());
            else
                m_index.markUnvectored(item.rowid);
            present.insert(item.rowid);
        }
        for (const qint64 rid : chunk) {
            if (!present.contains(rid))
                m_index.remove(rid);
            if (m_build)
                m_build->noteChange(rid);
        }
    }
}

// Every vector of the store, read afresh (or from the index file, then caught up).
void PostgresStorage::loadIndex()
{
    cancelBuild();
    m_index.invalidate();
    // The position the index will reflect, read before the rows: a change committed after it has a
    // later seq, and is replayed by the next catch-up (replaying a change twice is harmless).
    Result at = exec("SELECT (SELECT value FROM mneme_meta WHERE key = 'generation'), "
                     "coalesce((SELECT max(seq) FROM mneme_changes), 0)",
                     QStringLiteral("reading the change log"));
    m_indexGeneration = at.int64(0, 0);
    m_indexSeq = at.int64(0, 1);
    m_unsaved = 0;
    const std::optional<EmbedderBinding> binding = storedBinding();
    const int dimension = binding ? binding->dimension : 0;
    if (dimension > 0 && loadIndexFile(dimension))
        return;
    m_index.reset(dimension);
    if (dimension <= 0)
        return;
    VectorIndex::Item item;
    std::vector<float> vector;
    for (qint64 after = 0;;) {
        Params p;
        p.add(after);
        p.add(qint64(kChunk));
        Result r = exec("SELECT " + kIndexColumns + " FROM mneme_records WHERE rid > $1 ORDER BY rid LIMIT $2", p,
                        QStringLiteral("loading the vectors"), true);
        for (int i = 0; i < r.rows(); ++i) {
            if (indexItemAt(r, i, dimension, item, vector))
                m_index.upsert(item, vector.data());
            else
                m_index.markUnvectored(item.rowid);
            after = item.rowid;
        }
        if (r.rows() < kChunk)
            break;
    }
    ++m_stats.fullLoads;
    startBuildIfLarge();
}

// The index file of this store, when it is of this store and generation and not from its future,
// caught up from the change log since it was written.
bool PostgresStorage::loadIndexFile(int dimension)
{
    if (!QFileInfo::exists(m_indexFile))
        return false;
    VectorIndex::Stamp stamp;
    QString error;
    if (!m_index.load(m_indexFile, dimension, &stamp, &error)) {
        qCWarning(lcPostgres).noquote() << "the vector index file" << m_indexFile << "is not used:" << error;
        return false;
    }
    const qint64 target = m_indexSeq;
    if (stamp.storeId == m_storeId && stamp.generation == m_indexGeneration && stamp.seq <= target
        && m_index.deletedNodes() * 3 <= m_index.graphNodes()) {
        m_indexSeq = stamp.seq;
        if (catchUp()) {
            ++m_stats.fileLoads;
            return true;
        }
    }
    m_index.invalidate();
    m_indexSeq = target;
    return false;
}

PostgresStorage::Statement PostgresStorage::positionStatement()
{
    return Statement{kPositionSql, Params()};
}

PostgresStorage::LogPosition PostgresStorage::positionOf(const Result &r)
{
    return LogPosition{r.int64(0, 0), r.int64(0, 1)};
}

PostgresStorage::LogPosition PostgresStorage::position()
{
    return positionOf(exec(kPositionSql, QStringLiteral("reading the change log")));
}

PostgresStorage::Changes PostgresStorage::changesAfter(qint64 seq)
{
    Params p;
    p.add(seq);
    p.add(qint64(kMaxReplay));
    Result r = exec("SELECT (SELECT value FROM mneme_meta WHERE key = 'generation'), c.seq, c.rids, "
                    "coalesce((SELECT value::bigint FROM mneme_meta WHERE key = 'changes_pruned_through'), 0) "
                    "FROM (SELECT 1) AS one LEFT JOIN (SELECT seq, rids FROM mneme_changes WHERE seq > $1 ORDER BY seq LIMIT $2) AS c "
                    "ON true ORDER BY c.seq",
                    p, QStringLiteral("reading the change log"));
    Changes out;
    out.generation = r.int64(0, 0);
    out.last = seq;
    // Entries after `seq` were pruned: they cannot be replayed.
    out.tooMany = r.rows() >= kMaxReplay || seq < r.int64(0, 3);
    if (r.isNull(0, 1))
        return out; // nothing new
    out.entries = r.rows();
    out.last = r.int64(r.rows() - 1, 1);
    QSet<qint64> seen;
    for (int i = 0; i < r.rows(); ++i)
        for (const qint64 rid : bigintsOf(r.bytes(i, 2)))
            if (!seen.contains(rid)) {
                seen.insert(rid);
                out.rids.push_back(rid);
            }
    return out;
}

// Applies the change-log entries after the index's seq; false when the index cannot be brought up to
// date that way (a full reset, too many changes or entries it lacks pruned, the first vectors of an
// empty store).
bool PostgresStorage::catchUp()
{
    const Changes c = changesAfter(m_indexSeq);
    if (c.generation != m_indexGeneration || c.tooMany)
        return false;
    if (c.entries == 0)
        return true; // nothing new
    if (m_index.dimension() <= 0)
        return false; // the first vectors: the dimension comes with the binding
    applyRows(c.rids);
    m_indexSeq = c.last;
    m_unsaved += c.entries;
    m_stats.replayed += c.entries;
    return true;
}

void PostgresStorage::sync()
{
    qint64 seq = 0, generation = 0;
    bool current = false;
    {
        QReadLocker read(&m_indexLock);
        current = m_index.isLoaded() && !(m_build && m_build->done());
        seq = m_indexSeq;
        generation = m_indexGeneration;
    }
    if (current) {
        // The common case, without the write lock: is there anything to apply?
        Params p;
        p.add(seq);
        Result r = exec("SELECT (SELECT value FROM mneme_meta WHERE key = 'generation'), "
                        "EXISTS (SELECT 1 FROM mneme_changes WHERE seq > $1)",
                        p, QStringLiteral("reading the change log"));
        if (r.int64(0, 0) == generation && !r.boolean(0, 1))
            return;
    }
    QWriteLocker write(&m_indexLock);
    finishBuild();
    if (!m_index.isLoaded() || !catchUp())
        loadIndex();
    saveIndexFile(false);
    startBuildIfLarge();
}

// The listener thread: a connection of its own (outside the pool) that LISTENs on kChangeChannel and,
// on a notification of this store, brings a loaded index up to date, so that a search after another
// host's write finds little left to apply. Searches never wait for it: each checks the log itself.
void PostgresStorage::listenForChanges(std::promise<void> &listening)
{
    pg_conn *c = nullptr;
    try {
        c = openConnection();
    } catch (const Error &e) {
        qCWarning(lcPostgres).noquote() << "not listening for other processes' changes:" << e.message();
        listening.set_value();
        return;
    }
    if (Result r(PQexec(c, QByteArray("LISTEN ") + kChangeChannel)); r.status() != PGRES_COMMAND_OK)
        qCWarning(lcPostgres).noquote() << "not listening for other processes' changes:" << QString::fromUtf8(PQerrorMessage(c)).trimmed();
    listening.set_value(); // the constructor's promise: not touched after this
    const QByteArray storeId = m_storeId.toUtf8();
    while (!m_closed && PQstatus(c) == CONNECTION_OK) {
        pollfd waiting{PQsocket(c), POLLIN, 0};
        if (::poll(&waiting, 1, kListenPollMs) < 0 && errno != EINTR)
            break;
        if (!PQconsumeInput(c))
            break; // the server went away: searches still read the log
        bool ours = false;
        while (PGnotify *n = PQnotifies(c)) {
            ours = ours || storeId == n->extra;
            PQfreemem(n);
        }
        bool vectors = false, keywords = false;
        {
            QReadLocker read(&m_indexLock);
            vectors = m_index.isLoaded();
        }
        {
            QReadLocker read(&m_keywordLock);
            keywords = m_keywordsLoaded;
        }
        if (!ours || !(vectors || keywords) || m_closed)
            continue; // an index no search has loaded yet is not loaded for a notification
        try {
            Lease lease(*this);
            if (vectors)
                sync();
            if (keywords)
                syncKeywords(position());
            QWriteLocker write(&m_indexLock);
            ++m_stats.notified;
        } catch (const Error &e) {
            qCWarning(lcPostgres).noquote() << "catching up after a notification failed:" << e.message();
        }
    }
    PQfinish(c);
}

void PostgresStorage::syncIndex()
{
    if (m_pgvector)
        return; // no per-process index: the server's is always current
    Lease lease(*this);
    sync();
}

// A flat index past ann_threshold becomes a graph, built on background threads (IndexBuild).
void PostgresStorage::startBuildIfLarge()
{
    if (m_build || !m_index.isLoaded() || m_index.isAnn() || m_index.dimension() <= 0
        || m_index.size() < std::size_t(m_options.annThreshold))
        return;
    m_build = IndexBuild::start(m_index);
}

// Takes a finished build: the rows changed meanwhile go into the graph, which replaces the flat index
// and is written to the index file. False when there is none, or it failed or is too far behind
// (then the index stays flat, and the next sync builds again).
bool PostgresStorage::finishBuild()
{
    if (!m_build || !m_build->done())
        return false;
    const std::unique_ptr<IndexBuild> build = std::move(m_build);
    if (!build->handOver(m_index))
        return false;
    ++m_stats.builds;
    m_unsaved = std::max<qint64>(m_unsaved, 1);
    saveIndexFile(true);
    return true;
}

void PostgresStorage::cancelBuild()
{
    m_build.reset();
}

void PostgresStorage::waitForIndex()
{
    Lease lease(*this);
    sync();
    QWriteLocker write(&m_indexLock);
    if (m_build)
        m_build->wait(); // it never takes a lock
    finishBuild();
}

// The index file is a cache of the records: written after a build, after many changes (force:
// whenever it lacks any) and on close; a failure to write it is not an error of the search that asked.
void PostgresStorage::saveIndexFile(bool force) noexcept
{
    if (!m_index.isLoaded() || !m_index.isAnn() || m_unsaved <= 0 || m_storeId.isEmpty())
        return;
    if (!force && m_unsaved < std::max<qint64>(1000, qint64(m_index.size() / 8)))
        return;
    VectorIndex::Stamp stamp;
    stamp.storeId = m_storeId;
    stamp.generation = m_indexGeneration;
    stamp.seq = m_indexSeq;
    QString error;
    try {
        if (!QDir().mkpath(QFileInfo(m_indexFile).absolutePath())) {
            qCWarning(lcPostgres).noquote() << "cannot create the folder of the vector index file" << m_indexFile;
            return;
        }
        if (m_index.save(m_indexFile, stamp, &error)) {
            m_unsaved = 0;
            ++m_stats.saves;
        } else {
            qCWarning(lcPostgres).noquote() << "the vector index file" << m_indexFile << "was not written:" << error;
        }
    } catch (...) {
        // out of memory or disk: the server stays the truth; the next open catches up
    }
}

PostgresStorage::IndexStats PostgresStorage::indexStats()
{
    QReadLocker read(&m_indexLock);
    IndexStats s = m_stats;
    s.loaded = m_index.isLoaded();
    s.approximate = m_index.isAnn();
    s.building = m_build != nullptr;
    s.vectors = m_index.isLoaded() ? m_index.size() : 0;
    s.seq = m_indexSeq;
    return s;
}

// ---------------------------------------------------------------------------------------------
// Searches

// The index's nearest records for the filter (after sync()); `limit` < 0: every selected one, ranked.
std::vector<VectorIndex::Hit> PostgresStorage::nearest(const Embedding &query, const RecordFilter &filter, int limit,
                                                       VectorSearchAnswer *answer)
{
    if (query.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
    if (m_pgvector) {
        std::vector<VectorIndex::Hit> out;
        for (const SearchHit &h : pgvectorNearest(query, filter, limit, answer))
            out.push_back(VectorIndex::Hit{h.key, h.score});
        return out;
    }
    sync();
    std::vector<qint64> only;
    if (!filter.ids.isEmpty())
        only = ridsOf(filter.ids);
    QReadLocker read(&m_indexLock);
    if (m_index.dimension() <= 0)
        return {}; // nothing was ever embedded into this store
    if (m_index.dimension() != int(query.size()))
        checkDimension(int(query.size()), QStringLiteral("the query embedding"));
    bool walked = false;
    std::vector<VectorIndex::Hit> hits =
        m_index.search(query.data(), filter, limit, filter.ids.isEmpty() ? nullptr : &only, VectorIndex::Mode::Auto, &walked);
    if (answer)
        *answer = m_index.answerOf(walked, m_build != nullptr);
    return hits;
}

std::vector<ScoredRecord> PostgresStorage::vectorSearch(const Embedding &query, const RecordFilter &filter, int limit,
                                                        VectorSearchAnswer *answer)
{
    if (limit <= 0)
        return {};
    const std::vector<VectorIndex::Hit> hits = nearest(query, filter, needsPostFilter(filter) ? -1 : limit, answer);
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    std::vector<ScoredRecord> out;
    // The rows are read a chunk of hits at a time; a post-filtered search reads on until it has `limit`.
    const std::size_t chunk = std::size_t(std::max(limit, 32));
    for (std::size_t first = 0; first < hits.size() && int(out.size()) < limit; first += chunk) {
        const std::size_t last = std::min(hits.size(), first + chunk);
        std::vector<qint64> rids;
        for (std::size_t i = first; i < last; ++i)
            rids.push_back(hits[i].rowid);
        std::unordered_map<qint64, MemoryRecord> rows = byRids(rids, false);
        for (std::size_t i = first; i < last && int(out.size()) < limit; ++i) {
            auto it = rows.find(hits[i].rowid);
            // The record itself is the final judge: the index never widens what the filter selects.
            if (it == rows.end() || !filter.matches(it->second, conditions))
                continue;
            out.push_back(ScoredRecord{std::move(it->second), hits[i].score});
        }
    }
    return out;
}

std::vector<SearchHit> PostgresStorage::vectorHits(const Embedding &query, const RecordFilter &filter, int limit,
                                                   VectorSearchAnswer *answer)
{
    std::vector<SearchHit> out;
    if (limit <= 0)
        return out;
    if (m_pgvector) {
        if (query.empty())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
        return pgvectorNearest(query, filter, limit, answer);
    }
    const std::vector<VectorIndex::Hit> hits = nearest(query, filter, limit, answer);
    QReadLocker read(&m_indexLock);
    for (const VectorIndex::Hit &h : hits)
        if (const std::optional<VectorIndex::RankFields> f = m_index.rankFields(h.rowid))
            out.push_back(SearchHit{h.rowid, h.score, h.score, f->importance,
                                    f->hasCreated ? QDateTime::fromMSecsSinceEpoch(f->createdMs, Qt::UTC) : QDateTime()});
    return out;
}

std::vector<SearchHit> PostgresStorage::keywordHits(const QString &text, const Embedding &query, const RecordFilter &filter,
                                                    int limit, double contextWeight, QString *answer)
{
    std::vector<SearchHit> out;
    const std::vector<KeywordMatch> matches = keywordMatches(text, filter, limit, contextWeight, false, answer);
    if (m_pgvector) {
        std::vector<qint64> rids;
        for (const KeywordMatch &m : matches)
            rids.push_back(m.rid);
        const std::unordered_map<qint64, double> cosines = query.empty() ? std::unordered_map<qint64, double>()
                                                                         : pgvectorSimilarities(query, rids);
        for (const KeywordMatch &m : matches) {
            const auto it = cosines.find(m.rid);
            out.push_back(SearchHit{m.rid, m.score, it == cosines.end() ? 0.0 : it->second, m.record.importance, m.record.createdAt});
        }
        return out;
    }
    QReadLocker read(&m_indexLock);
    // The vector index is as current as the search (keywordMatches() brought it up to date when loaded).
    const bool cosines = !query.empty() && m_index.isLoaded() && m_index.dimension() == int(query.size());
    for (const KeywordMatch &m : matches)
        out.push_back(SearchHit{m.rid, m.score, cosines ? m_index.similarity(query.data(), m.rid).value_or(0.0) : 0.0,
                                m.record.importance, m.record.createdAt});
    return out;
}

// The words of these rows into the keyword index, as stored now, or their removal.
void PostgresStorage::applyKeywordRows(const std::vector<qint64> &rids)
{
    for (std::size_t first = 0; first < rids.size(); first += kChunk) {
        const std::vector<qint64> chunk(rids.begin() + std::ptrdiff_t(first), rids.begin() + std::ptrdiff_t(std::min(rids.size(), first + kChunk)));
        Params p;
        p.add(bigintArray(chunk));
        Result r = exec("SELECT rid, words::text, context_words::text FROM mneme_records "
                        "WHERE rid = ANY($1::bigint[])",
                        p, QStringLiteral("reading changed records' words"));
        QSet<qint64> present;
        for (int i = 0; i < r.rows(); ++i) {
            const qint64 rid = r.int64(i, 0);
            m_keywords.upsert(rid, r.view(i, 1), r.view(i, 2));
            present.insert(rid);
        }
        for (const qint64 rid : chunk)
            if (!present.contains(rid))
                m_keywords.remove(rid);
    }
}

// Every record's words, read afresh.
void PostgresStorage::loadKeywords()
{
    m_keywords.clear();
    m_keywordsLoaded = false;
    // The position first: a change committed after it is replayed by the next catch-up (harmlessly
    // when the rows read here already hold it).
    m_keywordsAt = position();
    for (qint64 after = 0;;) {
        Params p;
        p.add(after);
        p.add(qint64(kChunk));
        Result r = exec("SELECT rid, words::text, context_words::text FROM mneme_records "
                        "WHERE rid > $1 ORDER BY rid LIMIT $2",
                        p, QStringLiteral("loading the records' words"));
        for (int i = 0; i < r.rows(); ++i) {
            after = r.int64(i, 0);
            m_keywords.upsert(after, r.view(i, 1), r.view(i, 2));
        }
        if (r.rows() < kChunk)
            break;
    }
    m_keywordsLoaded = true;
}

// Loads the keyword index on a thread of its own (with a connection of its own), unless it is being
// loaded or the store is closed; searches meanwhile are answered by the server.
void PostgresStorage::startKeywordLoad()
{
    QMutexLocker lock(&m_keywordLoadMutex);
    if (m_keywordLoading || m_closed)
        return;
    if (m_keywordLoader.joinable())
        m_keywordLoader.join(); // an earlier load, finished (it failed, or a reset made the index stale)
    m_keywordLoading = true;
    m_keywordLoader = std::thread([this] {
        try {
            if (m_beforeKeywordLoad)
                m_beforeKeywordLoad();
            Lease lease(*this);
            syncKeywords(position());
        } catch (const Error &e) {
            if (!m_closed)
                qCWarning(lcPostgres).noquote() << "loading the keyword index failed (the next keyword search tries again):" << e.message();
        }
        m_keywordLoading = false;
    });
}

void PostgresStorage::waitForKeywords()
{
    QMutexLocker lock(&m_keywordLoadMutex);
    if (m_keywordLoader.joinable())
        m_keywordLoader.join();
}

bool PostgresStorage::wordsIndexValid()
{
    Params p;
    p.add(kWordsIndex);
    return exec("SELECT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)), false)", p,
                QStringLiteral("looking for the GIN index of the words"))
        .boolean(0, 0);
}

// Builds the GIN index of the words when the store has none (step 6 left it to this for a store of
// more than 1,000 records; or a build stopped half way, which leaves an invalid index), with
// CREATE INDEX CONCURRENTLY: writers on every host go on meanwhile, and this open waits for it. Under a
// session lock, so that processes opening the store at once build it once (the others wait, then find
// it). A failure is logged: keyword searches then wait for the process's keyword index, as without it.
void PostgresStorage::ensureWordsIndex()
{
    if (wordsIndexValid()) {
        m_wordsIndex = true;
        return;
    }
    Params lock;
    lock.add(kWordsIndexLock);
    exec("SELECT pg_advisory_lock($1)", lock, QStringLiteral("waiting for another process building the GIN index of the words"));
    try {
        if (!wordsIndexValid()) {
            qCInfo(lcPostgres).noquote() << "building the GIN index of the records' words in" << m_location
                                         << "(CREATE INDEX CONCURRENTLY: writers go on meanwhile)";
            exec("DROP INDEX CONCURRENTLY IF EXISTS " + kWordsIndex, QStringLiteral("dropping a GIN index whose build stopped"));
            exec(kWordsIndexSql, QStringLiteral("building the GIN index of the words"));
        }
        m_wordsIndex = true;
    } catch (const Error &e) {
        qCWarning(lcPostgres).noquote() << "keyword searches wait for each process's keyword index:" << e.message();
    }
    try {
        exec("SELECT pg_advisory_unlock($1)", lock, QStringLiteral("building the GIN index of the words"));
    } catch (const Error &) {
        // the connection broke, which released the lock
    }
}

namespace {

// A tsquery of one word, quoted (TextWords' words hold no quote or backslash, doubled anyway).
QByteArray tsqueryWord(const QString &lexeme)
{
    QByteArray w = lexeme.toUtf8();
    w.replace("\\", "\\\\");
    w.replace("'", "''");
    return "'" + w + "'";
}

// A tsquery matching the words of `any`, or two of `paired`.
QByteArray tsqueryOf(const KeywordIndex::Selection &s)
{
    QByteArrayList terms;
    for (const QString &w : s.any)
        terms << tsqueryWord(w);
    for (qsizetype a = 0; a < s.paired.size(); ++a)
        for (qsizetype b = a + 1; b < s.paired.size(); ++b)
            terms << "(" + tsqueryWord(s.paired[a]) + " & " + tsqueryWord(s.paired[b]) + ")";
    return terms.join(" | ");
}

} // namespace

// A keyword search answered by the server, as KeywordIndex::search answers it over every record: the
// statistics (the records, their lengths, the records holding each word) from mneme_word_totals and
// counts by the GIN index, then the words of the records KeywordIndex::selection() names, found by the
// GIN index and scored with those statistics. One snapshot (a repeatable-read transaction), four
// round trips.
std::vector<KeywordIndex::Match> PostgresStorage::serverKeywordSearch(const QStringList &lexemes, double contextWeight, int rowBudget)
{
    BinaryArray words(BinaryArray::kText);
    for (const QString &lexeme : lexemes)
        words.add(tsqueryWord(lexeme));
    Params counted;
    counted.add(words.bytes(), true);
    const QString doing = QStringLiteral("searching the words on the server");
    Transaction snapshot(*this, doing);
    // The planner is kept off sequential scans: the words are read through the GIN index, whatever
    // the table's statistics.
    const std::vector<Result> first = execAll(
        {Statement{"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", {}}, Statement{"SET LOCAL enable_seqscan = off", {}},
         Statement{"SELECT coalesce(sum(records), 0), coalesce(sum(length), 0) FROM mneme_word_totals", {}},
         Statement{"SELECT (SELECT count(*) FROM mneme_records WHERE words @@ q::tsquery) FROM unnest($1::text[]) "
                   "WITH ORDINALITY AS t(q, i) ORDER BY i",
                   std::move(counted)}},
        doing);
    KeywordIndex::Statistics stats{first[2].int64(0, 0), first[2].int64(0, 1), {}};
    for (int i = 0; i < first[3].rows(); ++i)
        stats.holding.push_back(first[3].int64(i, 0));
    const KeywordIndex::Selection selected = KeywordIndex::selection(lexemes, stats, rowBudget);
    KeywordIndex found;
    if (stats.records > 0 && !selected.any.isEmpty()) {
        // The records holding a selected word (or two paired ones) in the content, or, with the context
        // weighed, in the context or one in each (the last a superset, which the search narrows).
        Params p;
        p.add(tsqueryOf(selected));
        QByteArray sql = "SELECT rid, words::text, context_words::text FROM mneme_records WHERE words @@ $1::tsquery";
        if (contextWeight > 0) {
            sql += " OR context_words @@ $1::tsquery";
            if (selected.paired.size() >= 2) {
                p.add(tsqueryOf(KeywordIndex::Selection{selected.paired, {}}));
                sql += " OR (words @@ $2::tsquery AND context_words @@ $2::tsquery)";
            }
        }
        const Result r = exec(sql, p, doing);
        for (int i = 0; i < r.rows(); ++i)
            found.upsert(r.int64(i, 0), r.view(i, 1), r.view(i, 2));
    }
    snapshot.commit();
    return found.search(lexemes, contextWeight, rowBudget, stats);
}

std::vector<KeywordIndex::Match> PostgresStorage::keywordSearchOnServer(const QString &text, double contextWeight, int rowBudget)
{
    Lease lease(*this);
    const QStringList lexemes = TextWords::distinct(text);
    return lexemes.isEmpty() ? std::vector<KeywordIndex::Match>() : serverKeywordSearch(lexemes, contextWeight, rowBudget);
}

std::vector<KeywordIndex::Match> PostgresStorage::keywordSearchInIndex(const QString &text, double contextWeight, int rowBudget)
{
    Lease lease(*this);
    const QStringList lexemes = TextWords::distinct(text);
    if (lexemes.isEmpty())
        return {};
    syncKeywords(position());
    QReadLocker read(&m_keywordLock);
    return m_keywords.search(lexemes, contextWeight, rowBudget);
}

// Applies the change-log entries after the keyword index's position; false when a reload is needed.
bool PostgresStorage::catchUpKeywords()
{
    const Changes c = changesAfter(m_keywordsAt.seq);
    if (c.generation != m_keywordsAt.generation || c.tooMany)
        return false;
    applyKeywordRows(c.rids);
    m_keywordsAt.seq = c.last;
    return true;
}

// Brings the keyword index to the position `at` (read after the search began) or later.
void PostgresStorage::syncKeywords(const LogPosition &at)
{
    const auto current = [&] {
        return m_keywordsLoaded && m_keywordsAt.generation == at.generation && m_keywordsAt.seq >= at.seq;
    };
    {
        QReadLocker read(&m_keywordLock);
        if (current())
            return;
    }
    QWriteLocker write(&m_keywordLock);
    if (current())
        return; // another search caught up meanwhile
    if (!m_keywordsLoaded || !catchUpKeywords())
        loadKeywords();
}

std::vector<PostgresStorage::KeywordMatch> PostgresStorage::keywordMatches(const QString &text, const RecordFilter &filter,
                                                                           int limit, double contextWeight, bool records,
                                                                           QString *answer)
{
    if (contextWeight < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a keyword search's context weight must be 0 or more"));
    if (limit <= 0)
        return {};
    // The query's words as the records' are written (TextWords); the keyword index is brought to the
    // change log's position.
    const QStringList lexemes = TextWords::distinct(text);
    if (lexemes.isEmpty())
        return {};
    const LogPosition at = position();
    const int rowBudget = std::max(kKeywordRowBudget, 4 * limit);
    std::vector<KeywordIndex::Match> ranked;
    // Until the process's keyword index is loaded (on a thread of its own), the server answers, by the
    // GIN index of the words, when the store has it.
    if (!m_keywordsLoaded && (m_wordsIndex || (m_wordsIndex = wordsIndexValid()))) {
        startKeywordLoad();
        ranked = serverKeywordSearch(lexemes, contextWeight, rowBudget);
        if (answer)
            *answer = QStringLiteral("keywords on the server (GIN index): the keyword index is loading");
    } else {
        syncKeywords(at);
        QReadLocker read(&m_keywordLock);
        ranked = m_keywords.search(lexemes, contextWeight, rowBudget);
        if (answer)
            *answer = QStringLiteral("keyword index of %L1 records").arg(m_keywords.records());
    }
    std::unordered_set<qint64> only;
    if (!filter.ids.isEmpty())
        for (const qint64 rid : ridsOf(filter.ids))
            only.insert(rid);
    // The matches are walked best first, a chunk at a time, until `limit` pass the filter. For hits, a
    // loaded vector index judges the filter on the records it holds (as current as the search: brought
    // up to date here), giving their ranking fields; the records themselves judge the others.
    bool judging = false;
    if (!records && filter.contentContains.isEmpty() && !needsPostFilter(filter)) {
        bool behind = false;
        {
            QReadLocker read(&m_indexLock);
            judging = m_index.isLoaded();
            behind = judging && (m_indexGeneration != at.generation || m_indexSeq < at.seq);
        }
        if (behind)
            sync();
    }
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    std::vector<KeywordMatch> out;
    const std::size_t chunk = std::size_t(std::max(2 * limit, 32));
    for (std::size_t begin = 0; begin < ranked.size() && int(out.size()) < limit; begin += chunk) {
        std::vector<qint64> rids;
        for (std::size_t i = begin; i < std::min(ranked.size(), begin + chunk); ++i)
            if (only.empty() ? filter.ids.isEmpty() : only.count(ranked[i].rid) > 0)
                rids.push_back(ranked[i].rid);
        std::vector<VectorIndex::Judged> verdicts(rids.size());
        if (judging) {
            QReadLocker read(&m_indexLock);
            if (m_index.isLoaded())
                verdicts = m_index.judge(filter, rids);
        }
        std::vector<qint64> unknown;
        for (std::size_t i = 0; i < rids.size(); ++i)
            if (verdicts[i].verdict == VectorIndex::Verdict::Unknown)
                unknown.push_back(rids[i]);
        std::unordered_map<qint64, MemoryRecord> rows = byRids(unknown, false);
        std::size_t r = begin;
        for (std::size_t i = 0; i < rids.size() && int(out.size()) < limit; ++i) {
            while (ranked[r].rid != rids[i])
                ++r;
            KeywordMatch m{rids[i], MemoryRecord(), ranked[r].score};
            if (verdicts[i].verdict == VectorIndex::Verdict::Rejected)
                continue;
            if (verdicts[i].verdict == VectorIndex::Verdict::Selected) {
                const VectorIndex::RankFields &f = verdicts[i].fields;
                m.record.importance = f.importance;
                if (f.hasCreated)
                    m.record.createdAt = QDateTime::fromMSecsSinceEpoch(f.createdMs, Qt::UTC);
            } else {
                auto it = rows.find(rids[i]);
                if (it == rows.end() || !filter.matches(it->second, conditions))
                    continue; // deleted since the search began, or not selected
                m.record = std::move(it->second);
            }
            out.push_back(std::move(m));
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The operations

StorageInfo PostgresStorage::info() const
{
    Lease lease(const_cast<PostgresStorage &>(*this));
    StorageInfo i;
    i.location = m_location;
    i.schemaVersion = m_version;
    i.binding = const_cast<PostgresStorage *>(this)->storedBinding();
    i.capabilities = StorageInfo::SearchHits | StorageInfo::AtomicDedup | StorageInfo::SharedWriters | StorageInfo::Graph;
    return i;
}

WriteResult PostgresStorage::write(const WriteRequest &request)
{
    Lease lease(*this);
    WriteResult out;
    const auto one = [&]() -> const MemoryRecord & {
        if (request.records.size() != 1)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("an update or restore writes one record, not %1").arg(request.records.size()));
        return request.records.front();
    };
    switch (request.kind) {
    case WriteRequest::Kind::Insert:
        insertAll(request.records, false);
        break;
    case WriteRequest::Kind::InsertUnlessIdentical:
        out.ids = insertAll(request.records, true);
        break;
    case WriteRequest::Kind::Update:
        update(one());
        break;
    case WriteRequest::Kind::Restore:
        insertAll({&one(), 1}, false);
        break;
    case WriteRequest::Kind::Remove:
        out.count = remove(request.filter);
        break;
    case WriteRequest::Kind::Reset:
        out.count = reset(request.scopePrefix);
        break;
    case WriteRequest::Kind::BindEmbedder:
        bindEmbedder(request.binding);
        break;
    }
    return out;
}

SearchResult PostgresStorage::find(const SearchRequest &request)
{
    SearchResult out;
    const RecordFilter filter = normalized(request.filter);
    const bool vector = request.kind == SearchRequest::Kind::Vector;
    if (!vector && request.contextWeight < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a keyword search's context weight must be 0 or more"));
    if (request.output == SearchRequest::Output::Hits && needsPostFilter(filter)) {
        out.hitsDeclined = true; // metadata conditions are judged on the records
        return out;
    }
    Lease lease(*this);
    if (request.output == SearchRequest::Output::Hits) {
        out.hits = vector ? vectorHits(request.vector, filter, request.limit, &out.answer)
                          : keywordHits(request.text, request.vector, filter, request.limit, request.contextWeight, &out.answer.detail);
    } else if (vector) {
        out.records = vectorSearch(request.vector, filter, request.limit, &out.answer);
    } else {
        for (KeywordMatch &m : keywordMatches(request.text, filter, request.limit, request.contextWeight, true, &out.answer.detail))
            out.records.push_back(ScoredRecord{std::move(m.record), m.score});
    }
    return out;
}

std::vector<std::optional<MemoryRecord>> PostgresStorage::read(const ReadRequest &request)
{
    Lease lease(*this);
    std::vector<std::optional<MemoryRecord>> out;
    for (const QString &id : request.ids)
        out.push_back(byId(id, request.withEmbedding));
    if (!request.keys.empty()) {
        std::unordered_map<qint64, MemoryRecord> rows = byRids(request.keys, request.withEmbedding);
        for (const qint64 key : request.keys) {
            auto it = rows.find(key);
            out.push_back(it == rows.end() ? std::nullopt : std::optional(it->second));
        }
    }
    return out;
}

std::vector<MemoryRecord> PostgresStorage::browse(const ListRequest &request)
{
    const RecordFilter filter = normalized(request.filter);
    Lease lease(*this);
    if (request.limit == 0)
        return {};
    // By creation time (the default listing, and `mneme migrate`'s pages) when SQL judges the whole
    // filter: the page alone is read.
    if (request.order.field == RecordOrder::Field::CreatedAt && judgedBySql(filter)) {
        QByteArray tail = request.order.descending ? "ORDER BY created_at DESC, id COLLATE \"C\"" : "ORDER BY created_at, id COLLATE \"C\"";
        if (request.limit > 0)
            tail += " LIMIT " + QByteArray::number(request.limit);
        return select(filter, false, tail + " OFFSET " + QByteArray::number(std::max(request.offset, 0)));
    }
    return sortedPage(select(filter, false), request.order, request.limit, request.offset);
}

// An answer from m_readCache, or computed and kept as of the change log's position read before it was
// computed, provided the log is still there afterwards: a write committed meanwhile (another
// process's, or another thread's of this one, whose keepInserted() adds its records) may be in the
// answer already.
template<typename Find, typename Compute, typename Keep>
auto PostgresStorage::cachedRead(Find find, Compute compute, Keep keep)
{
    const LogPosition at = position();
    {
        QMutexLocker lock(&m_readMutex);
        if (m_readAt != at) {
            m_readCache.clear();
            m_readAt = at;
        }
        if (auto kept = find(m_readCache))
            return std::move(*kept);
    }
    auto answer = compute();
    const LogPosition after = position();
    QMutexLocker lock(&m_readMutex);
    if (after == at && m_readAt == at)
        return keep(m_readCache, std::move(answer));
    return answer;
}

// Records this process just inserted go into the kept answers when they were of the position right
// before its change-log entry (no other write between); else the answers are dropped.
void PostgresStorage::keepInserted(const Logged &logged, const std::vector<const MemoryRecord *> &inserted)
{
    if (logged.seq < 0)
        return; // nothing was written
    QMutexLocker lock(&m_readMutex);
    if (m_readAt == logged.before) {
        m_readCache.add(inserted);
        m_readAt = {logged.before.generation, logged.seq};
    } else {
        m_readCache.clear();
        m_readAt = {-1, -1};
    }
}

QMap<QString, int> PostgresStorage::keptCategories(const RecordFilter &filter)
{
    return cachedRead([&](const ReadCache &c) { return c.categories(filter); }, [&] { return countCategories(filter); },
                      [&](ReadCache &c, QMap<QString, int> counts) {
                          c.keepCategories(filter, counts);
                          return counts;
                      });
}

QMap<QString, int> PostgresStorage::countCategories(const RecordFilter &filter)
{
    QMap<QString, int> out;
    const auto count = [&](QStringList categories) {
        categories.removeDuplicates();
        for (const QString &c : std::as_const(categories))
            ++out[c];
    };
    if (!judgedBySql(filter)) {
        for (const MemoryRecord &m : select(filter, false))
            count(m.categories);
        return out;
    }
    // The categories column alone.
    Params p;
    const QByteArray w = where(filter, p);
    const Result r = exec("SELECT categories FROM mneme_records WHERE " + w, p, QStringLiteral("counting categories"));
    for (int i = 0; i < r.rows(); ++i)
        count(categoriesOf(r.view(i, 0)));
    return out;
}

QStringList PostgresStorage::keptChildScopes(const QString &parent, const RecordFilter &visible)
{
    return cachedRead([&](const ReadCache &c) { return c.childScopes(parent, visible); },
                      [&] { return readChildScopes(parent, visible); },
                      [&](ReadCache &c, QStringList names) {
                          c.keepChildScopes(parent, visible, names);
                          return names;
                      });
}

QStringList PostgresStorage::readChildScopes(const QString &parent, const RecordFilter &visible)
{
    RecordFilter f = visible;
    f.scopes = {parent};
    std::set<QString> children;
    const auto note = [&](const QString &scope) {
        const QString child = ScopePath::childToward(parent, scope);
        if (!child.isEmpty())
            children.insert(child);
    };
    if (judgedBySql(f)) {
        Params p;
        const QByteArray w = where(f, p);
        const Result r = exec("SELECT DISTINCT scope FROM mneme_records WHERE " + w, p, QStringLiteral("reading scopes"));
        for (int i = 0; i < r.rows(); ++i)
            note(r.text(i, 0));
    } else {
        for (const MemoryRecord &m : select(f, false))
            note(m.scope);
    }
    return QStringList(children.begin(), children.end());
}

std::vector<MemoryRecord> PostgresStorage::keptScopeSamples(const RecordFilter &filter, int perScope)
{
    if (perScope <= 0)
        return {};
    return cachedRead([&](const ReadCache &c) { return c.scopeSamples(filter, perScope); },
                      [&] { return readScopeSamples(filter, perScope); },
                      [&](ReadCache &c, std::vector<MemoryRecord> samples) {
                          return c.keepScopeSamples(filter, perScope, std::move(samples));
                      });
}

// The newest records with a vector of each scope: ranked by the server when SQL judges the filter (the
// vectors of the samples alone are read), else taken from every selected record.
std::vector<MemoryRecord> PostgresStorage::readScopeSamples(const RecordFilter &filter, int perScope)
{
    if (!judgedBySql(filter)) {
        std::vector<MemoryRecord> out;
        std::map<QString, int> taken;
        for (MemoryRecord &m : select(filter, true, "AND embedding IS NOT NULL ORDER BY scope COLLATE \"C\", rid DESC"))
            if (taken[m.scope]++ < perScope)
                out.push_back(std::move(m));
        return out;
    }
    Params p;
    const QByteArray w = where(filter, p);
    const QByteArray n = QByteArray::number(p.add(qint64(perScope)));
    return select(RecordFilter(), true,
                  "AND rid IN (SELECT rid FROM (SELECT rid, row_number() OVER (PARTITION BY scope ORDER BY rid DESC) AS n "
                  "FROM mneme_records WHERE embedding IS NOT NULL AND "
                      + w + ") AS ranked WHERE n <= $" + n + ") "
                                                             "ORDER BY scope COLLATE \"C\", rid DESC",
                  nullptr, std::move(p));
}

Aggregate PostgresStorage::aggregate(const AggregateRequest &request)
{
    const RecordFilter filter = normalized(request.filter);
    Lease lease(*this);
    Aggregate out;
    switch (request.kind) {
    case AggregateRequest::Kind::Count:
        if (judgedBySql(filter)) {
            Params p;
            const QByteArray w = where(filter, p);
            out.count = int(exec("SELECT count(*) FROM mneme_records WHERE " + w, p, QStringLiteral("counting records")).int64(0, 0));
        } else {
            out.count = int(select(filter, false).size());
        }
        break;
    case AggregateRequest::Kind::ScopeInfo: {
        const QString path = ScopePath::normalize(request.scope);
        RecordFilter f = filter;
        f.scopes = {path};
        ScopeInfo &info = out.scopeInfo;
        info.path = path;
        std::set<QString> categories;
        for (const MemoryRecord &m : select(f, false)) {
            ++info.recordCount;
            categories.insert(m.categories.begin(), m.categories.end());
            if (!info.oldestRecord.isValid() || m.createdAt < info.oldestRecord)
                info.oldestRecord = m.createdAt;
            if (!info.newestRecord.isValid() || m.createdAt > info.newestRecord)
                info.newestRecord = m.createdAt;
        }
        info.categories = QStringList(categories.begin(), categories.end());
        if (info.recordCount)
            info.childScopes = keptChildScopes(path, filter);
        break;
    }
    case AggregateRequest::Kind::ChildScopes:
        out.scopes = keptChildScopes(ScopePath::normalize(request.scope), filter);
        break;
    case AggregateRequest::Kind::Categories:
        out.categories = keptCategories(filter);
        break;
    case AggregateRequest::Kind::ScopeSamples:
        out.samples = keptScopeSamples(filter, request.perScope);
        break;
    }
    return out;
}

std::vector<std::optional<MemoryRecord>> PostgresStorage::lookup(const LookupRequest &request)
{
    Lease lease(*this);
    const std::optional<QString> prefix = request.anyScopeBelow ? std::optional(ScopePath::normalize(*request.anyScopeBelow)) : std::nullopt;
    return identicals(request.records, prefix ? &*prefix : nullptr, request.identities);
}

void PostgresStorage::touch(const QStringList &ids, const QDateTime &at)
{
    Lease lease(*this);
    if (ids.isEmpty())
        return;
    Params p;
    const int atParam = p.add(msOf(at, nowUtc().toMSecsSinceEpoch()));
    QList<QByteArray> list;
    for (const QString &id : ids)
        list << "$" + QByteArray::number(p.add(id));
    exec("UPDATE mneme_records SET last_accessed = $" + QByteArray::number(atParam)
             + ", access_count = access_count + 1 WHERE id IN (" + list.join(", ") + ")",
         p, QStringLiteral("recording accesses"));
}

std::vector<HistoryEntry> PostgresStorage::history(const QString &recordId)
{
    Lease lease(*this);
    Params p;
    p.add(recordId);
    Result r = exec("SELECT seq, record_id, event, old_content, new_content, old_record, new_record, at "
                    "FROM mneme_history WHERE record_id = $1 ORDER BY seq",
                    p, QStringLiteral("reading the history"));
    const auto json = [&](int row, int col) {
        if (r.isNull(row, col))
            return Json();
        Json j = parseJsonOrDiscarded(r.bytes(row, col).toStdString());
        return j.is_discarded() ? Json() : j;
    };
    std::vector<HistoryEntry> out;
    for (int i = 0; i < r.rows(); ++i) {
        HistoryEntry e;
        e.seq = r.int64(i, 0);
        e.recordId = r.text(i, 1);
        e.event = HistoryEntry::eventFromName(r.text(i, 2));
        e.oldContent = r.text(i, 3);
        e.newContent = r.text(i, 4);
        e.oldRecord = json(i, 5);
        e.newRecord = json(i, 6);
        e.at = QDateTime::fromMSecsSinceEpoch(r.int64(i, 7), Qt::UTC);
        out.push_back(std::move(e));
    }
    return out;
}

StateResult PostgresStorage::state(const StateRequest &request)
{
    if (request.kind != StateRequest::Kind::Keys)
        StateRequest::checkKey(request.key);
    Lease lease(*this);
    StateResult out;
    Params p;
    switch (request.kind) {
    case StateRequest::Kind::Read: {
        p.add(request.key);
        Result r = exec("SELECT value FROM mneme_state WHERE key = $1", p, QStringLiteral("reading state \"%1\"").arg(request.key));
        if (r.rows())
            out.value = parseJsonOrDiscarded(r.bytes(0, 0).toStdString());
        break;
    }
    case StateRequest::Kind::Write:
        p.add(request.key);
        if (request.value.is_null()) {
            exec("DELETE FROM mneme_state WHERE key = $1", p, QStringLiteral("deleting state \"%1\"").arg(request.key));
        } else {
            p.add(jsonText(request.value));
            exec("INSERT INTO mneme_state(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", p,
                 QStringLiteral("writing state \"%1\"").arg(request.key));
        }
        break;
    case StateRequest::Kind::Keys: {
        p.add(likePrefix(request.key));
        Result r = exec("SELECT key FROM mneme_state WHERE key LIKE $1 ORDER BY key COLLATE \"C\"", p, QStringLiteral("listing state keys"));
        for (int i = 0; i < r.rows(); ++i)
            out.keys << r.text(i, 0);
        break;
    }
    }
    return out;
}

StoreCheck PostgresStorage::inspect(InspectMode mode)
{
    Lease lease(*this);
    StoreCheck c;
    if (mode != InspectMode::Damaged)
        c.problems << QStringLiteral("the postgres storage at %1 has no integrity check of its own; the server keeps the records "
                                     "(check it with PostgreSQL's amcheck and pg_dump)")
                          .arg(m_location);
    return c;
}

void PostgresStorage::close()
{
    {
        QMutexLocker lock(&m_poolMutex);
        if (m_closed.exchange(true))
            return;
        m_poolFree.wakeAll(); // a thread waiting for a connection (the keyword index's load) gives up
    }
    if (m_listener.joinable())
        m_listener.join(); // it sees m_closed within kListenPollMs
    waitForKeywords();     // a load stops at its next statement
    {
        QWriteLocker write(&m_indexLock);
        cancelBuild();
        saveIndexFile(true);
        m_index.invalidate();
    }
    // Idle connections close now; leased ones (an operation of another thread, which then fails)
    // when their lease ends.
    QMutexLocker lock(&m_poolMutex);
    for (pg_conn *c : m_idle)
        PQfinish(c);
    m_open -= int(m_idle.size());
    m_idle.clear();
    m_poolFree.wakeAll();
}

GraphStore *PostgresStorage::graph()
{
    QMutexLocker lock(&m_graphMutex);
    if (!m_graph)
        m_graph = std::make_unique<PostgresGraphStore>(*this);
    return m_graph.get();
}

} // namespace mneme
