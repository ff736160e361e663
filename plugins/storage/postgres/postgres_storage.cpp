#include "postgres_storage.h"

#include "postgres_graph_store.h"

#include "core/schema_migration_p.h"
#include <mneme/core/error.h>
#include <mneme/core/metadata_filter.h>
#include <mneme/core/scope_path.h>

#include <QCryptographicHash>
#include <QLoggingCategory>
#include <QMutexLocker>
#include <QSet>
#include <QtEndian>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <libpq-fe.h>
#include <map>
#include <set>

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
    {2, kPostgresGraphSchemaSql},
};

// The lock every opening process takes while it creates or upgrades the schema, and the namespace of
// the per-content locks of InsertUnlessIdentical (pg_advisory_xact_lock takes one bigint, or two ints).
constexpr qint64 kSchemaLock = 0x6d6e656d65L; // "mneme"

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

// float32, little-endian, as the SQLite store keeps them.
QByteArray embeddingBytes(const Embedding &e)
{
    QByteArray out(qsizetype(e.size() * sizeof(float)), Qt::Uninitialized);
    for (std::size_t i = 0; i < e.size(); ++i)
        qToLittleEndian(e[i], out.data() + i * sizeof(float));
    return out;
}

Embedding embeddingOf(const QByteArray &bytes)
{
    Embedding e(std::size_t(bytes.size()) / sizeof(float));
    for (std::size_t i = 0; i < e.size(); ++i)
        e[i] = qFromLittleEndian<float>(bytes.constData() + i * sizeof(float));
    return e;
}

double cosine(const Embedding &a, const Embedding &b)
{
    if (a.size() != b.size() || a.empty())
        return 0;
    double dot = 0, na = 0, nb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += double(a[i]) * b[i];
        na += double(a[i]) * a[i];
        nb += double(b[i]) * b[i];
    }
    return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0;
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

// The BM25 of one column, as the SQLite store's keyword evidence computes it (k1 = 1.2, b = 0.75).
double bm25(double tf, double length, double averageLength)
{
    constexpr double k1 = 1.2, b = 0.75;
    if (tf <= 0)
        return 0;
    const double norm = averageLength > 0 ? length / averageLength : 1;
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * norm));
}

// KeywordEvidence::idf of the SQLite store: Lucene's idf, as if the store held 100 more records without the word.
double idf(qint64 rows, qint64 hits)
{
    return std::log(1 + (double(rows) + 100 - double(hits) + 0.5) / (double(hits) + 0.5));
}

// A tsquery literal of one lexeme (already normalised by the server).
QByteArray lexemeQuery(const QString &lexeme)
{
    QByteArray out = "'";
    for (const char c : lexeme.toUtf8()) {
        if (c == '\'' || c == '\\')
            out += c;
        out += c;
    }
    return out + "'";
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Plumbing

class PostgresStorage::Result
{
public:
    explicit Result(pg_result *r) : m_r(r) {}
    Result(Result &&o) noexcept : m_r(std::exchange(o.m_r, nullptr)) {}
    Result(const Result &) = delete;
    Result &operator=(const Result &) = delete;
    ~Result() { PQclear(m_r); }
    ExecStatusType status() const { return PQresultStatus(m_r); }
    int rows() const { return PQntuples(m_r); }
    bool isNull(int row, int col) const { return PQgetisnull(m_r, row, col); }
    QString text(int row, int col) const { return QString::fromUtf8(PQgetvalue(m_r, row, col), PQgetlength(m_r, row, col)); }
    QByteArray bytes(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col), PQgetlength(m_r, row, col)); }
    qint64 int64(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col)).toLongLong(); }
    double number(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col)).toDouble(); }
    bool boolean(int row, int col) const { return PQgetvalue(m_r, row, col)[0] == 't'; }
    // A bytea column in the text format ("\x0a1b...").
    QByteArray bytea(int row, int col) const { return QByteArray::fromHex(bytes(row, col).mid(2)); }

private:
    pg_result *m_r;
};

class PostgresStorage::Transaction
{
public:
    Transaction(PostgresStorage &s, const QString &doing) : m_s(s), m_doing(doing) { m_s.exec("BEGIN", doing); }
    ~Transaction()
    {
        if (!m_done && m_s.m_conn)
            PQclear(PQexec(m_s.m_conn, "ROLLBACK"));
    }
    void commit()
    {
        m_s.exec("COMMIT", m_doing);
        m_done = true;
    }

private:
    PostgresStorage &m_s;
    QString m_doing;
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
    for (const auto &[key, value] : config.items()) {
        if (key == "dsn") {
            if (!value.is_string() || value.get<std::string>().empty())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("storage config \"dsn\" must be a non-empty libpq connection string or URI, such as "
                                           "\"host=db.example dbname=mneme user=mneme\""));
            o.dsn = QString::fromStdString(value.get<std::string>());
        } else if (key == "connect_timeout_s") {
            if (!value.is_number_integer() || value.get<qint64>() < 1 || value.get<qint64>() > 3600)
                throw Error(ErrorKind::InvalidArgument, QStringLiteral("storage config \"connect_timeout_s\" must be an integer from 1 to 3600"));
            o.connectTimeoutS = int(value.get<qint64>());
        } else {
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("unknown postgres storage config key \"%1\"; use \"dsn\" and \"connect_timeout_s\"")
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
    QMutexLocker lock(&m_mutex);
    connect();
    migrate();
}

PostgresStorage::~PostgresStorage()
{
    QMutexLocker lock(&m_mutex);
    if (m_conn)
        PQfinish(m_conn);
}

void PostgresStorage::connect()
{
    const QByteArray dsn = m_options.dsn.toUtf8();
    const QByteArray timeout = QByteArray::number(m_options.connectTimeoutS);
    const char *keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
    const char *values[] = {dsn.constData(), timeout.constData(), "mneme", nullptr};
    m_conn = PQconnectdbParams(keys, values, 1);
    if (!m_conn)
        throw Error(ErrorKind::Storage, QStringLiteral("could not allocate a PostgreSQL connection"));
    if (PQstatus(m_conn) != CONNECTION_OK) {
        const QByteArray message = PQerrorMessage(m_conn);
        PQfinish(m_conn);
        m_conn = nullptr;
        m_closed = true;
        fail(QStringLiteral("connecting to the PostgreSQL server (check the dsn, that the server runs, and the password "
                            "in PGPASSWORD or the .pgpass file)"),
             message);
    }
    PQsetNoticeProcessor(m_conn, logNotice, nullptr);
    m_location = QStringLiteral("postgresql://%1@%2:%3/%4")
                     .arg(QString::fromUtf8(PQuser(m_conn)), QString::fromUtf8(PQhost(m_conn)), QString::fromUtf8(PQport(m_conn)),
                          QString::fromUtf8(PQdb(m_conn)));
    exec("SET client_min_messages = warning", QStringLiteral("configuring the connection"));
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
    if (m_closed || !m_conn)
        throw Error(ErrorKind::Storage, QStringLiteral("the store %1 is closed").arg(m_location));
}

PostgresStorage::Result PostgresStorage::exec(const QByteArray &sql, const Params &params, const QString &doing)
{
    ensureOpen();
    std::vector<const char *> values;
    std::vector<int> lengths, formats;
    for (std::size_t i = 0; i < params.values.size(); ++i) {
        const std::optional<QByteArray> &v = params.values[i];
        values.push_back(v ? v->constData() : nullptr);
        lengths.push_back(v ? int(v->size()) : 0);
        formats.push_back(params.binary[i] ? 1 : 0);
    }
    // Without parameters, the simple protocol, which runs several statements (a migration step) at once.
    Result r(values.empty() ? PQexec(m_conn, sql.constData())
                            : PQexecParams(m_conn, sql.constData(), int(values.size()), nullptr, values.data(), lengths.data(),
                                           formats.data(), 0));
    const ExecStatusType status = r.status();
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        if (PQstatus(m_conn) == CONNECTION_BAD)
            PQreset(m_conn); // the next statement finds the server again, if it came back
        fail(doing, PQerrorMessage(m_conn));
    }
    return r;
}

PostgresStorage::Result PostgresStorage::exec(const QByteArray &sql, const QString &doing)
{
    return exec(sql, Params(), doing);
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
        [&](const SchemaMigration &m) { exec(m.sql, QStringLiteral("upgrading the schema to version %1").arg(m.version)); },
        [&](int version) {
            Params p;
            p.add(QByteArray::number(version));
            exec("INSERT INTO mneme_meta(key, value) VALUES ('schema_version', $1) "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 p, QStringLiteral("recording the schema version"));
        });
    t.commit();
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

MemoryRecord recordAt(const auto &r, int row)
{
    MemoryRecord m;
    m.id = r.text(row, 1);
    m.content = r.text(row, 2);
    m.scope = r.text(row, 3);
    const Json cats = parseJsonOrDiscarded(r.bytes(row, 4).toStdString());
    if (cats.is_array())
        for (const Json &c : cats)
            if (c.is_string())
                m.categories << QString::fromStdString(c.get<std::string>());
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
                                                  std::vector<qint64> *rids)
{
    Params p;
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
            m.embedding = embeddingOf(r.bytea(i, 14));
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
        m.embedding = embeddingOf(r.bytea(0, 14));
    if (rid)
        *rid = r.int64(0, 0);
    return m;
}

void PostgresStorage::insertHistory(const QString &recordId, HistoryEntry::Event event, const MemoryRecord *oldRecord,
                                    const MemoryRecord *newRecord, qint64 atMs)
{
    Params p;
    p.add(recordId);
    p.add(HistoryEntry::eventName(event));
    p.add(oldRecord ? std::optional(oldRecord->content.toUtf8()) : std::nullopt);
    p.add(newRecord ? std::optional(newRecord->content.toUtf8()) : std::nullopt);
    p.add(oldRecord ? std::optional(recordJson(*oldRecord)) : std::nullopt);
    p.add(newRecord ? std::optional(recordJson(*newRecord)) : std::nullopt);
    p.add(atMs);
    exec("INSERT INTO mneme_history(record_id, event, old_content, new_content, old_record, new_record, at) "
         "VALUES ($1, $2, $3, $4, $5, $6, $7)",
         p, QStringLiteral("writing the history of record %1").arg(recordId));
}

namespace {

// The columns a record writes (insert and update), $1.. in this order, and the word counts the
// keyword search's BM25 needs, counted by the server as it indexes them.
constexpr const char *kWordCounts =
    "coalesce((SELECT sum(array_length(positions, 1)) FROM unnest(to_tsvector('english', $2))), 0), "
    "coalesce((SELECT sum(array_length(positions, 1)) FROM unnest(to_tsvector('english', $14))), 0)";

} // namespace

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
    p.add(r.embedding.empty() ? std::nullopt : std::optional(embeddingBytes(r.embedding)), true);
    p.add(r.context);
    return p;
}

void PostgresStorage::insert(const MemoryRecord &r, qint64 atMs)
{
    const Params p = recordParams(r, atMs);
    exec(QByteArray("INSERT INTO mneme_records(id, content, scope, categories, importance, source, private, metadata, created_at, "
                    "updated_at, last_accessed, access_count, embedding, context, word_count, context_word_count) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ")
             + kWordCounts + ")",
         p, QStringLiteral("saving record %1").arg(r.id));
}

std::optional<MemoryRecord> PostgresStorage::identical(const MemoryRecord &wanted, const QString *scopePrefix, bool identities)
{
    Params p;
    p.add(wanted.content);
    p.add(wanted.source);
    p.add(QByteArray(wanted.isPrivate ? "true" : "false"));
    QByteArray scope;
    if (scopePrefix) {
        if (*scopePrefix != QLatin1String("/")) {
            const int exact = p.add(*scopePrefix);
            const int below = p.add(likePrefix(*scopePrefix + QLatin1Char('/')));
            scope = " AND (scope = $" + QByteArray::number(exact) + " OR scope LIKE $" + QByteArray::number(below) + ")";
        }
    } else {
        scope = " AND scope = $" + QByteArray::number(p.add(wanted.scope));
    }
    Result r = exec("SELECT " + kColumns + " FROM mneme_records WHERE content_hash = md5($1) AND content = $1 AND source = $2 "
                                           "AND private = $3::boolean"
                        + scope + " ORDER BY rid",
                    p, QStringLiteral("looking up identical records"));
    for (int i = 0; i < r.rows(); ++i) {
        MemoryRecord m = recordAt(r, i);
        MemoryRecord probe = wanted;
        probe.scope = m.scope;
        if (!identities || StorageBackend::identical(probe, m))
            return m;
    }
    return std::nullopt;
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
        for (const qint64 key : keys) {
            Params p;
            p.add(key);
            exec("SELECT pg_advisory_xact_lock($1)", p, QStringLiteral("waiting for other writers of the same content"));
        }
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
        const MemoryRecord &r = records[i];
        if (unlessIdentical) {
            for (std::size_t k = 0; k < i && ids[i].isEmpty(); ++k)
                if (StorageBackend::identical(records[k], r))
                    ids[i] = ids[k];
            if (ids[i].isEmpty())
                if (std::optional<MemoryRecord> found = identical(r, nullptr, true))
                    ids[i] = found->id;
            if (!ids[i].isEmpty())
                continue;
        }
        ids[i] = r.id;
        insert(r, at);
        insertHistory(r.id, HistoryEntry::Event::Add, nullptr, &r, at);
    }
    t.commit();
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
    const Params p = recordParams(record, at);
    // A touch() in between is kept: access times and counts only grow.
    exec(QByteArray("UPDATE mneme_records SET content = $2, scope = $3, categories = $4, importance = $5, source = $6, "
                    "private = $7, metadata = $8, created_at = $9, updated_at = $10, "
                    "last_accessed = greatest(last_accessed, $11), access_count = greatest(access_count, $12), "
                    "embedding = coalesce($13, embedding), context = $14, (word_count, context_word_count) = (")
             + kWordCounts + ") WHERE id = $1",
         p, QStringLiteral("updating record %1").arg(record.id));
    insertHistory(record.id, HistoryEntry::Event::Update, &*old, &record, at);
    t.commit();
}

int PostgresStorage::remove(const RecordFilter &requested)
{
    const RecordFilter filter = normalized(requested);
    Transaction t(*this, QStringLiteral("deleting records"));
    std::vector<qint64> rids;
    const std::vector<MemoryRecord> doomed = select(filter, false, "ORDER BY rid FOR UPDATE", &rids);
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    for (std::size_t i = 0; i < doomed.size(); ++i) {
        Params p;
        p.add(rids[i]);
        exec("DELETE FROM mneme_records WHERE rid = $1", p, QStringLiteral("deleting record %1").arg(doomed[i].id));
        insertHistory(doomed[i].id, HistoryEntry::Event::Delete, &doomed[i], nullptr, at);
    }
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
    t.commit();
}

// ---------------------------------------------------------------------------------------------
// Searches

std::vector<ScoredRecord> PostgresStorage::vectorSearch(const Embedding &query, const RecordFilter &filter, int limit)
{
    if (query.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
    if (limit <= 0)
        return {};
    const std::optional<EmbedderBinding> b = storedBinding();
    if (b && b->dimension != int(query.size()))
        checkDimension(int(query.size()), QStringLiteral("the query embedding"));
    std::vector<ScoredRecord> scored;
    for (MemoryRecord &m : select(filter, true)) {
        if (m.embedding.empty())
            continue;
        const double s = cosine(query, m.embedding);
        m.embedding.clear();
        scored.push_back(ScoredRecord{std::move(m), s});
    }
    const auto before = [](const ScoredRecord &a, const ScoredRecord &b) {
        return a.score != b.score ? a.score > b.score : a.record.id < b.record.id;
    };
    const auto kept = scored.begin() + std::min<std::ptrdiff_t>(limit, std::ptrdiff_t(scored.size()));
    std::partial_sort(scored.begin(), kept, scored.end(), before);
    scored.erase(kept, scored.end());
    return scored;
}

std::vector<ScoredRecord> PostgresStorage::keywordSearch(const QString &text, const RecordFilter &filter, int limit,
                                                         double contextWeight)
{
    if (contextWeight < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a keyword search's context weight must be 0 or more"));
    if (limit <= 0)
        return {};
    // The query's words as the server indexes them (stemmed, without stop words).
    Params q;
    q.add(text);
    Result words = exec("SELECT lexeme FROM unnest(to_tsvector('english', $1))", q, QStringLiteral("reading the query's words"));
    QStringList lexemes;
    for (int i = 0; i < words.rows(); ++i)
        lexemes << words.text(i, 0);
    if (lexemes.isEmpty())
        return {};
    Result totals = exec("SELECT count(*), coalesce(avg(word_count), 0), coalesce(avg(context_word_count), 0) FROM mneme_records",
                         QStringLiteral("reading the keyword statistics"));
    const qint64 rows = totals.int64(0, 0);
    const double averageWords = totals.number(0, 1), averageContext = totals.number(0, 2);
    QHash<QString, double> idfs;
    double idfSum = 0;
    QList<QByteArray> any;
    for (const QString &lexeme : std::as_const(lexemes)) {
        Params p;
        p.add(lexemeQuery(lexeme));
        const qint64 hits = exec("SELECT count(*) FROM mneme_records WHERE words @@ $1::tsquery", p,
                                 QStringLiteral("counting the records of a word"))
                                .int64(0, 0);
        idfs.insert(lexeme, idf(rows, hits));
        idfSum += idfs.value(lexeme);
        any << lexemeQuery(lexeme);
    }
    Params p;
    const QByteArray w = where(filter, p);
    const int queryAt = p.add(any.join(" | "));
    const QByteArray match = "words @@ $" + QByteArray::number(queryAt) + "::tsquery"
                           + (contextWeight > 0 ? " OR context_words @@ $" + QByteArray::number(queryAt) + "::tsquery" : QByteArray());
    Result r = exec("SELECT " + kColumns + ", word_count, context_word_count, "
                                           "(SELECT json_object_agg(lexeme, array_length(positions, 1)) FROM unnest(words)), "
                                           "(SELECT json_object_agg(lexeme, array_length(positions, 1)) FROM unnest(context_words)) "
                                           "FROM mneme_records WHERE "
                        + w + " AND (" + match + ")",
                    p, QStringLiteral("searching the keyword index"));
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    std::vector<ScoredRecord> scored;
    for (int i = 0; i < r.rows(); ++i) {
        MemoryRecord m = recordAt(r, i);
        if (!filter.matches(m, conditions))
            continue;
        const Json content = r.isNull(i, 16) ? Json::object() : parseJsonOrDiscarded(r.bytes(i, 16).toStdString());
        const Json context = r.isNull(i, 17) ? Json::object() : parseJsonOrDiscarded(r.bytes(i, 17).toStdString());
        double sum = 0;
        for (const QString &lexeme : std::as_const(lexemes)) {
            const std::string key = lexeme.toStdString();
            const double tf = content.is_object() && content.contains(key) ? content[key].get<double>() : 0;
            const double tfContext = context.is_object() && context.contains(key) ? context[key].get<double>() : 0;
            sum += idfs.value(lexeme)
                 * (bm25(tf, double(r.int64(i, 14)), averageWords) + contextWeight * bm25(tfContext, double(r.int64(i, 15)), averageContext));
        }
        if (sum <= 0)
            continue;
        scored.push_back(ScoredRecord{std::move(m), std::min(1.0, sum / idfSum)});
    }
    const auto before = [](const ScoredRecord &a, const ScoredRecord &b) {
        return a.score != b.score ? a.score > b.score : a.record.id < b.record.id;
    };
    const auto kept = scored.begin() + std::min<std::ptrdiff_t>(limit, std::ptrdiff_t(scored.size()));
    std::partial_sort(scored.begin(), kept, scored.end(), before);
    scored.erase(kept, scored.end());
    return scored;
}

// ---------------------------------------------------------------------------------------------
// The operations

StorageInfo PostgresStorage::info() const
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    StorageInfo i;
    i.location = m_location;
    i.schemaVersion = m_version;
    i.binding = const_cast<PostgresStorage *>(this)->storedBinding();
    i.capabilities = StorageInfo::AtomicDedup | StorageInfo::SharedWriters | StorageInfo::Graph;
    return i;
}

WriteResult PostgresStorage::write(const WriteRequest &request)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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
    if (request.output == SearchRequest::Output::Hits) {
        out.hitsDeclined = true; // no SearchHits capability: the caller asks for records
        return out;
    }
    const RecordFilter filter = normalized(request.filter);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    out.records = request.kind == SearchRequest::Kind::Vector ? vectorSearch(request.vector, filter, request.limit)
                                                              : keywordSearch(request.text, filter, request.limit, request.contextWeight);
    return out;
}

std::vector<std::optional<MemoryRecord>> PostgresStorage::read(const ReadRequest &request)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    std::vector<std::optional<MemoryRecord>> out;
    for (const QString &id : request.ids)
        out.push_back(byId(id, request.withEmbedding));
    out.resize(out.size() + request.keys.size()); // hit keys are never given out (no SearchHits capability)
    return out;
}

std::vector<MemoryRecord> PostgresStorage::browse(const ListRequest &request)
{
    const RecordFilter filter = normalized(request.filter);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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

QStringList PostgresStorage::childScopes(const QString &parent, const RecordFilter &visible)
{
    RecordFilter f = visible;
    f.scopes = {parent};
    std::set<QString> children;
    for (const MemoryRecord &m : select(f, false)) {
        const QString child = ScopePath::childToward(parent, m.scope);
        if (!child.isEmpty())
            children.insert(child);
    }
    return QStringList(children.begin(), children.end());
}

Aggregate PostgresStorage::aggregate(const AggregateRequest &request)
{
    const RecordFilter filter = normalized(request.filter);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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
            info.childScopes = childScopes(path, filter);
        break;
    }
    case AggregateRequest::Kind::ChildScopes:
        out.scopes = childScopes(ScopePath::normalize(request.scope), filter);
        break;
    case AggregateRequest::Kind::Categories:
        for (const MemoryRecord &m : select(filter, false)) {
            QStringList cats = m.categories;
            cats.removeDuplicates();
            for (const QString &c : std::as_const(cats))
                ++out.categories[c];
        }
        break;
    case AggregateRequest::Kind::ScopeSamples: {
        if (request.perScope <= 0)
            break;
        std::map<QString, int> taken;
        for (MemoryRecord &m : select(filter, true, "AND embedding IS NOT NULL ORDER BY scope COLLATE \"C\", rid DESC"))
            if (taken[m.scope]++ < request.perScope)
                out.samples.push_back(std::move(m));
        break;
    }
    }
    return out;
}

std::vector<std::optional<MemoryRecord>> PostgresStorage::lookup(const LookupRequest &request)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    const std::optional<QString> prefix = request.anyScopeBelow ? std::optional(ScopePath::normalize(*request.anyScopeBelow)) : std::nullopt;
    std::vector<std::optional<MemoryRecord>> out;
    for (const MemoryRecord &r : request.records)
        out.push_back(identical(r, prefix ? &*prefix : nullptr, request.identities));
    return out;
}

void PostgresStorage::touch(const QStringList &ids, const QDateTime &at)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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
    QMutexLocker lock(&m_mutex);
    ensureOpen();
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
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    StoreCheck c;
    if (mode != InspectMode::Damaged)
        c.problems << QStringLiteral("the postgres storage at %1 has no integrity check of its own; the server keeps the records "
                                     "(check it with PostgreSQL's amcheck and pg_dump)")
                          .arg(m_location);
    return c;
}

void PostgresStorage::close()
{
    QMutexLocker lock(&m_mutex);
    if (m_conn)
        PQfinish(m_conn);
    m_conn = nullptr;
    m_closed = true;
}

GraphStore *PostgresStorage::graph()
{
    QMutexLocker lock(&m_mutex);
    if (!m_graph)
        m_graph = std::make_unique<PostgresGraphStore>(*this);
    return m_graph.get();
}

} // namespace mneme
