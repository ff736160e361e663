#include "sqlite_storage.h"

#include "graph_store_sqlite.h"
#include "keyword_evidence.h"
#include "sqlite_statement.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/stop_words.h>
#include <mneme/core/version.h>

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLocale>
#include <QLoggingCategory>
#include <QMutexLocker>
#include <QScopeGuard>
#include <QSet>
#include <QThread>
#include <QUrl>
#include <QUuid>
#include <QtEndian>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sqlite3.h>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_set>


namespace mneme {

Q_LOGGING_CATEGORY(lcSqlite, "mneme.storage.sqlite")

namespace {

// One step of the schema: applying `sql` to a store at version `version - 1` brings it to `version`.
// Later versions append steps; a step is never edited once released.
struct Migration
{
    int version;
    const char *sql;
};

constexpr Migration kMigrations[] = {
    {1, R"SQL(
CREATE TABLE meta(
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE records(
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    scope TEXT NOT NULL,
    categories TEXT NOT NULL DEFAULT '[]',
    importance REAL NOT NULL DEFAULT 0.5,
    source TEXT NOT NULL DEFAULT '',
    private INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER,
    updated_at INTEGER,
    last_accessed INTEGER,
    access_count INTEGER NOT NULL DEFAULT 0,
    content_hash INTEGER NOT NULL,
    embedding BLOB
);
CREATE INDEX records_scope ON records(scope);
CREATE INDEX records_created ON records(created_at);
CREATE INDEX records_content_hash ON records(content_hash);

-- Kept in step with records by the code, in the same transaction (not by triggers: a trigger
-- writing a virtual table costs a statement savepoint per row, several times the insert itself).
CREATE VIRTUAL TABLE records_fts USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2');

CREATE TABLE history(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')),
    old_content TEXT,
    new_content TEXT,
    old_record TEXT,
    new_record TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX history_record ON history(record_id, seq);
)SQL"},
    // Named JSON documents beside the records (readState / writeState).
    {2, R"SQL(
CREATE TABLE state(key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at INTEGER NOT NULL);
)SQL"},
    // A second keyword column, `context` (MemoryRecord::context: a conversation turn's neighbours),
    // weighed apart from the content. FTS5 cannot add a column: the index is rebuilt from the records,
    // every existing record with an empty context.
    {3, R"SQL(
CREATE VIRTUAL TABLE records_fts_v3 USING fts5(content, context, tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO records_fts_v3(rowid, content, context) SELECT rid, content, '' FROM records;
DROP TABLE records_fts;
ALTER TABLE records_fts_v3 RENAME TO records_fts;
)SQL"},
    // The lookup of identical records by content hash leaves the records table for two compact
    // tables: every insert goes to content_hashes_recent, which stays small, and saveLocked() moves it
    // into content_hashes in hash order once it holds kRecentHashLimit entries. An index on a random
    // hash takes a random page per insert: at a million records, more than half the pages a batch
    // wrote. A lookup reads both tables.
    {4, R"SQL(
CREATE TABLE content_hashes(hash INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (hash, rid)) WITHOUT ROWID;
CREATE TABLE content_hashes_recent(hash INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (hash, rid)) WITHOUT ROWID;
INSERT INTO content_hashes(hash, rid) SELECT content_hash, rid FROM records ORDER BY content_hash, rid;
DROP INDEX records_content_hash;
)SQL"},
    // Graph memory: entities, relations, the records each came from and the graph history.
    {5, kGraphSchemaSql},
    // How many records of each scope, source and privacy carry each category, for categories(): the
    // offline analyzer's first count of a process read the categories of every record (a fifth of a
    // second at 100,000 records). saveLocked() adds a batch's inserts, one row per key; the triggers
    // keep it in step with every update and delete. A record's category counts once however often
    // it is listed; a categories column that is not a JSON array counts as none.
    {6, R"SQL(
CREATE TABLE category_counts(
    scope TEXT NOT NULL,
    source TEXT NOT NULL,
    private INTEGER NOT NULL,
    category TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (scope, source, private, category)
) WITHOUT ROWID;
INSERT INTO category_counts(scope, source, private, category, n)
SELECT r.scope, r.source, r.private, coalesce(CAST(c.value AS TEXT), ''), count(DISTINCT r.rid)
FROM records r, json_each(CASE WHEN json_valid(r.categories) AND json_type(r.categories) = 'array' THEN r.categories ELSE '[]' END) c
GROUP BY 1, 2, 3, 4;
CREATE TRIGGER category_counts_delete AFTER DELETE ON records BEGIN
    UPDATE category_counts SET n = n - 1
    WHERE scope = old.scope AND source = old.source AND private = old.private AND category IN (
        SELECT coalesce(CAST(value AS TEXT), '')
        FROM json_each(CASE WHEN json_valid(old.categories) AND json_type(old.categories) = 'array' THEN old.categories ELSE '[]' END));
    DELETE FROM category_counts WHERE scope = old.scope AND source = old.source AND private = old.private AND n <= 0;
END;
CREATE TRIGGER category_counts_update AFTER UPDATE OF scope, source, private, categories ON records BEGIN
    UPDATE category_counts SET n = n - 1
    WHERE scope = old.scope AND source = old.source AND private = old.private AND category IN (
        SELECT coalesce(CAST(value AS TEXT), '')
        FROM json_each(CASE WHEN json_valid(old.categories) AND json_type(old.categories) = 'array' THEN old.categories ELSE '[]' END));
    DELETE FROM category_counts WHERE scope = old.scope AND source = old.source AND private = old.private AND n <= 0;
    INSERT INTO category_counts(scope, source, private, category, n)
    SELECT DISTINCT new.scope, new.source, new.private, coalesce(CAST(value AS TEXT), ''), 1
    FROM json_each(CASE WHEN json_valid(new.categories) AND json_type(new.categories) = 'array' THEN new.categories ELSE '[]' END)
    WHERE true
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
)SQL"},
};

constexpr int kLatestSchema = int(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrations[kLatestSchema - 1].version == kLatestSchema);

// The oldest schema a read-only connection can use as it is (it cannot upgrade the file). Every step
// since has only added what the code does without: a v1 store has no state table, so readState()
// finds nothing there and writeState() needs a writable, upgraded store anyway; a store before v3
// has no context column in its keyword index, so keyword search reads the content alone; a store
// before v4 finds identical records through its index on records.content_hash; a store before v6
// counts the categories from the records.
constexpr int kOldestReadableSchema = 1;

// Entries content_hashes_recent may hold before they are moved into content_hashes. A batch's inserts
// touch at most this many entries' pages (about 75 pages of 4 KB), and each move rewrites the pages
// of content_hashes once: at a million records, a third of a page per record instead of one.
constexpr int kRecentHashLimit = 16384;

// The tables a store at a given version must have, and the version that added each.
struct RequiredTable
{
    const char *name;
    int since;
};
const RequiredTable kRequiredTables[] = {
    {"meta", 1},
    {"records", 1},
    {"records_fts", 1},
    {"history", 1},
    {"state", 2},
    {"content_hashes", 4},
    {"content_hashes_recent", 4},
    {"graph_entities", 5},
    {"graph_relations", 5},
    {"graph_sources", 5},
    {"graph_history", 5},
    {"category_counts", 6},
};


// The category counts as the records give them (schema 6's table, for its check and its rebuild).
constexpr const char *kCountCategoriesSql =
    "SELECT r.scope AS scope, r.source AS source, r.private AS private, coalesce(CAST(c.value AS TEXT), '') AS category, "
    "count(DISTINCT r.rid) AS n FROM records r, "
    "json_each(CASE WHEN json_valid(r.categories) AND json_type(r.categories) = 'array' THEN r.categories ELSE '[]' END) c "
    "GROUP BY 1, 2, 3, 4";

// The columns readRow() expects, in order; the embedding is appended when asked for.
constexpr const char *kRecordColumns =
    "r.rid, r.id, r.content, r.scope, r.categories, r.importance, r.source, r.private, r.metadata, "
    "r.created_at, r.updated_at, r.last_accessed, r.access_count";

// The categories column for SQL's json_each(): a damaged one (not a JSON array) counts as none, instead
// of failing the whole statement (reads skip such a row, and `mneme check` reports it).
const QByteArray kCategoriesOrNone = "CASE WHEN json_valid(r.categories) AND json_type(r.categories) = 'array' THEN r.categories ELSE '[]' END";

// The columns applyIndexRow() reads.
constexpr const char *kIndexColumns = "rid, scope, categories, source, private, created_at, importance, embedding, metadata";

const QString kResetAdvice = QStringLiteral(
    "run `mneme reset --yes` to empty the store, or `mneme export` and then `mneme import --reembed` "
    "to keep its memories with the new embedder");

// Invalid UTF-8 inside metadata is replaced instead of throwing: content checks are Memory's business.
QByteArray jsonBytes(const Json &j)
{
    return QByteArray::fromStdString(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// Appends `utf8` as a JSON string: quotes, backslashes and control characters escaped, as
// nlohmann::json writes them, everything else as it is.
void appendJsonString(QByteArray &out, const QByteArray &utf8)
{
    out += '"';
    const char *run = utf8.constData();
    const char *const end = run + utf8.size();
    for (const char *p = run; p != end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        out.append(run, p - run);
        run = p + 1;
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        }
        }
    }
    out.append(run, end - run);
    out += '"';
}

// The categories column: a compact JSON array of strings (what readPlainCategories() reads back).
QByteArray categoriesJson(const QStringList &categories)
{
    QByteArray out("[");
    for (qsizetype i = 0; i < categories.size(); ++i) {
        if (i > 0)
            out += ',';
        appendJsonString(out, categories[i].toUtf8());
    }
    out += ']';
    return out;
}

QByteArray metadataJson(const Json &metadata)
{
    return metadata.is_object() && !metadata.empty() ? jsonBytes(metadata) : QByteArray("{}");
}

// A record as JSON, as to_json(Json &, const MemoryRecord &) has it (the same keys and values, in
// the same order), written directly: every saved record writes one into the history.
QByteArray recordJson(const MemoryRecord &r)
{
    QByteArray out;
    out.reserve(256 + 2 * r.content.size());
    auto number = [&out](auto value) {
        char buf[64];
        const auto done = std::to_chars(buf, buf + sizeof buf, value);
        out.append(buf, done.ptr - buf);
    };
    auto text = [&out](const char *key, const QString &value) {
        out += key;
        appendJsonString(out, value.toUtf8());
    };
    out += "{\"access_count\":";
    number(r.accessCount);
    out += ",\"categories\":" + categoriesJson(r.categories);
    text(",\"content\":", r.content);
    text(",\"created_at\":", toIso(r.createdAt));
    text(",\"id\":", r.id);
    out += ",\"importance\":";
    if (std::isfinite(r.importance))
        number(r.importance);
    else
        out += "null";
    text(",\"last_accessed\":", toIso(r.lastAccessed));
    out += ",\"metadata\":" + metadataJson(r.metadata);
    out += r.isPrivate ? ",\"private\":true" : ",\"private\":false";
    text(",\"scope\":", r.scope);
    if (r.source.isEmpty())
        out += ",\"source\":null";
    else
        text(",\"source\":", r.source);
    text(",\"updated_at\":", toIso(r.updatedAt));
    out += '}';
    return out;
}

qint64 contentHash(const QString &content)
{
    const QByteArray digest = QCryptographicHash::hash(content.toUtf8(), QCryptographicHash::Sha256);
    return qFromBigEndian<qint64>(digest.constData());
}

QString describe(const std::optional<EmbedderBinding> &b)
{
    if (!b)
        return QStringLiteral("no embedder");
    const QString name = b->embedderId.isEmpty() ? QStringLiteral("an unnamed embedder")
                                                 : QStringLiteral("\"%1\"").arg(b->embedderId);
    return QStringLiteral("%1 (%2-dimensional vectors)").arg(name).arg(b->dimension);
}

// The FTS5 query for a user text: every word quoted (so no text is ever FTS syntax) and OR-ed.
// Word characters are letters, digits and combining marks, as unicode61 tokenizes.
// Bounds of the number of records a keyword-search term may be found in (10% of the store, within
// these bounds); more common terms are left out of the query.
constexpr qint64 kKeywordMinCap = 50;
constexpr qint64 kKeywordMaxCap = 2000;
// A keyword query whose terms are in more records than the budget (SqliteStorage::Options) scores the
// records holding one of its rarest terms or two of the others, the first this many of them.
constexpr qsizetype kKeywordPairedTerms = 8;

// The distinct words of a text (letters, digits and marks; at most 64) but English stop words
// ("what", "did", "the": StopWords), each quoted as an FTS5 phrase so that no user text can form query
// syntax. A text of nothing but stop words keeps them.
QList<QByteArray> matchTerms(const QString &text)
{
    QStringList words;
    QString word;
    auto flush = [&] {
        if (!word.isEmpty() && !words.contains(word))
            words.append(word);
        word.clear();
    };
    const qsizetype n = text.size();
    for (qsizetype i = 0; i < n; ++i) {
        char32_t c = text.at(i).unicode();
        qsizetype len = 1;
        if (QChar::isHighSurrogate(c) && i + 1 < n && text.at(i + 1).isLowSurrogate()) {
            c = QChar::surrogateToUcs4(text.at(i), text.at(i + 1));
            len = 2;
        }
        if (QChar::isLetterOrNumber(c) || QChar::isMark(c))
            word.append(text.mid(i, len));
        else
            flush();
        i += len - 1;
        if (words.size() >= 64)
            break;
    }
    flush();
    QStringList content;
    for (const QString &w : std::as_const(words)) {
        if (!StopWords::isEnglish(w.toLower().toStdString()))
            content.append(w);
    }
    QList<QByteArray> quoted;
    for (const QString &w : std::as_const(content.isEmpty() ? words : content))
        quoted.append((QLatin1Char('"') + w + QLatin1Char('"')).toUtf8());
    return quoted;
}

// Scope prefixes normalised ("/crew/a/" -> "/crew/a"), so that the SQL, the vector index and
// RecordFilter::matches agree; an invalid one throws Error(InvalidArgument).
RecordFilter normalized(const RecordFilter &filter)
{
    RecordFilter f = filter;
    for (QString &s : f.scopes)
        s = ScopePath::normalize(s);
    (void)MetadataFilter::parse(f.metadata); // a malformed filter is refused before anything is read
    return f;
}

// A file: URI, so that no character of the path is taken for a URI parameter.
QByteArray fileUri(const QString &path)
{
    return "file:" + QUrl::toPercentEncoding(path, "/");
}

// Why a path cannot hold a store, when the reason is in the path itself (a name or the whole longer
// than the file system takes, a file where a folder should be); empty otherwise.
QString pathProblem(const QString &path)
{
    const QByteArray bytes = QFile::encodeName(path);
    if (bytes.size() >= PATH_MAX)
        return QStringLiteral("the path is %1 bytes long, over the limit of %2").arg(bytes.size()).arg(PATH_MAX - 1);
    for (const QString &name : path.split(QLatin1Char('/'), Qt::SkipEmptyParts)) {
        const qsizetype length = QFile::encodeName(name).size();
        if (length > NAME_MAX)
            return QStringLiteral("the name %1 in it is %2 bytes long, over the limit of %3 a name")
                .arg(Error::quoted(name, 40))
                .arg(length)
                .arg(NAME_MAX);
    }
    for (QString up = QFileInfo(path).absolutePath(); !up.isEmpty(); up = QFileInfo(up).absolutePath()) {
        const QFileInfo fi(up);
        if (fi.exists()) {
            if (!fi.isDir())
                return QStringLiteral("%1 is a file, not a folder").arg(up);
            break;
        }
        if (up == QLatin1String("/"))
            break;
    }
    return QString();
}

// mneme_contains(text, needle): whether `text` contains `needle`, ignoring case as
// RecordFilter::contentContains does (QString's Unicode case folding). The needle is decoded once a
// statement.
// mneme_judged(rowid): 0 when the filter of the keyword search under way rejects the record by its
// vector index entry, else 1 (no search under way, no entry, or selected). The user data is the
// address of SqliteStorage::m_keywordJudge.
void judgedFunction(sqlite3_context *ctx, int, sqlite3_value **argv)
{
    const auto *judge = *static_cast<const VectorIndex::Judge *const *>(sqlite3_user_data(ctx));
    sqlite3_result_int(ctx, !judge || judge->verdict(sqlite3_value_int64(argv[0])) != VectorIndex::Verdict::Rejected);
}

void containsFunction(sqlite3_context *context, int, sqlite3_value **argv)
{
    const auto *text = reinterpret_cast<const char *>(sqlite3_value_text(argv[0]));
    if (!text) {
        sqlite3_result_int(context, 0);
        return;
    }
    const auto *needle = static_cast<const QString *>(sqlite3_get_auxdata(context, 1));
    if (!needle) {
        const auto *bytes = reinterpret_cast<const char *>(sqlite3_value_text(argv[1]));
        auto *decoded = new QString(QString::fromUtf8(bytes, bytes ? sqlite3_value_bytes(argv[1]) : 0));
        sqlite3_set_auxdata(context, 1, decoded, [](void *p) { delete static_cast<QString *>(p); });
        needle = static_cast<const QString *>(sqlite3_get_auxdata(context, 1));
        if (!needle) { // SQLite may drop auxiliary data at once (out of memory): use it this time only
            sqlite3_result_error_nomem(context);
            return;
        }
    }
    const QString haystack = QString::fromUtf8(text, sqlite3_value_bytes(argv[0]));
    sqlite3_result_int(context, haystack.contains(*needle, Qt::CaseInsensitive) ? 1 : 0);
}

// The column a RecordOrder sorts by.
const char *orderColumn(RecordOrder::Field field)
{
    switch (field) {
    case RecordOrder::Field::CreatedAt:
        return "r.created_at";
    case RecordOrder::Field::UpdatedAt:
        return "r.updated_at";
    case RecordOrder::Field::LastAccessed:
        return "r.last_accessed";
    case RecordOrder::Field::Importance:
        return "r.importance";
    case RecordOrder::Field::AccessCount:
        return "r.access_count";
    case RecordOrder::Field::Scope:
        return "r.scope";
    case RecordOrder::Field::Source:
        return "r.source";
    case RecordOrder::Field::Content:
        return "r.content";
    }
    return "r.created_at";
}

// Whether a filter has metadata conditions the vector index cannot judge (any but the identities').
bool needsPostFilter(const RecordFilter &f)
{
    return f.metadata.is_object() && !f.metadata.empty() && !VectorIndex::judges(MetadataFilter::parse(f.metadata));
}

// The identities of a metadata column's text: most records have none, and are not parsed.
std::array<QString, 3> identityOfText(std::string_view text)
{
    if (text.size() <= 2 || text.find("_id\"") == std::string_view::npos)
        return {};
    return VectorIndex::identityOf(parseJsonOrDiscarded(text));
}

// A JSON path for a top-level key, as SQLite's JSON functions read it; nothing for a key the path
// syntax cannot quote (a double quote in it): such a condition is left to the check on the records.
std::optional<QByteArray> jsonPath(const std::string &key)
{
    if (key.find('"') != std::string::npos)
        return std::nullopt;
    return QByteArray("$.\"") + QByteArray::fromStdString(key) + '"';
}

// A text column's UTF-8 bytes, valid until the statement steps again.
std::string_view columnView(sqlite3_stmt *st, int col)
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(st, col));
    return p ? std::string_view(p, std::size_t(sqlite3_column_bytes(st, col))) : std::string_view();
}

// Reads the categories column as the code writes it (a compact JSON array of strings) without a JSON
// parser: false when the text has any other form, escapes included, for the parser to read.
bool readPlainCategories(std::string_view text, QStringList &out)
{
    if (text.size() < 2 || text.front() != '[' || text.back() != ']' || text.find('\\') != std::string_view::npos)
        return false;
    std::string_view rest = text.substr(1, text.size() - 2);
    QStringList found;
    while (!rest.empty()) {
        if (rest.front() != '"')
            return false;
        const std::size_t close = rest.find('"', 1);
        if (close == std::string_view::npos)
            return false;
        found << QString::fromUtf8(rest.data() + 1, qsizetype(close - 1));
        rest.remove_prefix(close + 1);
        if (rest.empty())
            break;
        if (rest.front() != ',' || rest.size() < 2)
            return false;
        rest.remove_prefix(1);
    }
    out = std::move(found);
    return true;
}

// The categories column in any form: the plain form directly, any other through the JSON parser
// (strings kept, other values skipped). False when the text is not a JSON array.
bool readCategories(std::string_view text, QStringList &out)
{
    if (readPlainCategories(text, out))
        return true;
    const Json cats = parseJsonOrDiscarded(text);
    if (!cats.is_array())
        return false;
    for (const auto &c : cats)
        if (c.is_string())
            out << QString::fromStdString(c.get<std::string>());
    return true;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// One write transaction (BEGIN IMMEDIATE). Rolled back unless commit() succeeded.

class SqliteStorage::Transaction
{
public:
    explicit Transaction(SqliteStorage &storage)
        : m_storage(storage)
    {
        storage.ensureOpen();
        storage.ensureWritable();
        storage.exec("BEGIN IMMEDIATE", QStringLiteral("starting a write transaction"));
        m_active = true;
        try {
            // Another connection may have committed since our last look (embedder binding, vectors).
            storage.refreshIfChanged();
            storage.m_readCache.clear(); // saveLocked() keeps it by its own means
        } catch (...) {
            rollback();
            throw;
        }
    }
    ~Transaction()
    {
        if (m_active)
            rollback();
    }
    Transaction(const Transaction &) = delete;
    Transaction &operator=(const Transaction &) = delete;

    void commit()
    {
        m_storage.exec("COMMIT", QStringLiteral("committing a write"));
        m_active = false;
        ++m_storage.m_commits;
    }

private:
    void rollback()
    {
        m_active = false;
        sqlite3_exec(m_storage.m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        m_storage.keywordIndexChanged(-1); // what was read of its uncommitted keyword rows
        // Undo what this transaction may have cached (a dimension claimed for an unbound store).
        try {
            m_storage.loadBinding();
        } catch (...) {
            m_storage.m_binding.reset();
            m_storage.m_dataVersion = -1;
        }
    }

    SqliteStorage &m_storage;
    bool m_active = false;
};

// ---------------------------------------------------------------------------------------------
// One read transaction, so that several statements see the same state; a no-op inside a transaction.

class SqliteStorage::ReadSnapshot
{
public:
    explicit ReadSnapshot(SqliteStorage &storage)
        : m_storage(storage)
    {
        if (sqlite3_get_autocommit(storage.m_db)) {
            storage.exec("BEGIN", QStringLiteral("starting a read"));
            m_active = true;
        }
    }
    ~ReadSnapshot()
    {
        if (m_active)
            sqlite3_exec(m_storage.m_db, "COMMIT", nullptr, nullptr, nullptr);
    }
    ReadSnapshot(const ReadSnapshot &) = delete;
    ReadSnapshot &operator=(const ReadSnapshot &) = delete;

private:
    SqliteStorage &m_storage;
    bool m_active = false;
};

// ---------------------------------------------------------------------------------------------
// Configuration

SqliteStorage::Options SqliteStorage::Options::fromJson(const Json &config)
{
    Options o;
    if (config.is_null())
        return fromJson(Json::object());
    if (!config.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the sqlite storage configuration must be a JSON object such as {\"path\": \"memory.db\"}"));
    bool hasPath = false;
    for (auto it = config.begin(); it != config.end(); ++it) {
        const QString key = QString::fromStdString(it.key());
        const Json &v = it.value();
        if (key == QLatin1String("path")) {
            if (!v.is_string() || v.get<std::string>().empty())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("sqlite storage: \"path\" must be a non-empty string (a file, or \":memory:\")"));
            o.path = QString::fromStdString(v.get<std::string>());
            if (o.path.startsWith(QLatin1String("~/")))
                o.path = QDir::homePath() + o.path.mid(1);
            hasPath = true;
        } else if (key == QLatin1String("read_only") || key == QLatin1String("create")) {
            if (!v.is_boolean())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("sqlite storage: \"%1\" must be true or false").arg(key));
            (key == QLatin1String("create") ? o.create : o.readOnly) = v.get<bool>();
        } else if (key == QLatin1String("busy_timeout_ms")) {
            if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 86400000)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("sqlite storage: \"busy_timeout_ms\" must be a whole number of milliseconds between 0 and 86400000"));
            o.busyTimeoutMs = int(v.get<long long>());
        } else if (key == QLatin1String("ann_threshold") || key == QLatin1String("ann_m")
                   || key == QLatin1String("ann_ef_construction") || key == QLatin1String("ann_ef_search")
                   || key == QLatin1String("wal_checkpoint_pages") || key == QLatin1String("keyword_row_budget")
                   || key == QLatin1String("ann_background_from")) {
            struct Range
            {
                long long low, high;
                int *target;
                const char *meaning;
            };
            const Range range = key == QLatin1String("ann_threshold")       ? Range{0, 2000000000, &o.annThreshold, "records (0: always approximate)"}
                              : key == QLatin1String("ann_m")               ? Range{4, 64, &o.annM, "links per node"}
                              : key == QLatin1String("ann_ef_construction") ? Range{10, 2000, &o.annEfConstruction, "candidates"}
                              : key == QLatin1String("ann_ef_search")       ? Range{10, 5000, &o.annEfSearch, "candidates"}
                              : key == QLatin1String("keyword_row_budget")  ? Range{0, 2000000000, &o.keywordRowBudget, "records (0: no bound)"}
                              : key == QLatin1String("ann_background_from") ? Range{0, 2000000000, &o.annBackgroundFrom, "records"}
                                                                            : Range{10, 10000000, &o.walCheckpointPages, "pages"};
            if (!v.is_number_integer() || v.get<long long>() < range.low || v.get<long long>() > range.high)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("sqlite storage: \"%1\" must be a whole number of %2 between %3 and %4")
                                .arg(key, QLatin1String(range.meaning))
                                .arg(range.low)
                                .arg(range.high));
            *range.target = int(v.get<long long>());
        } else {
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("sqlite storage: unknown configuration key %1; the known keys are path, read_only, create, "
                                       "busy_timeout_ms, ann_threshold, ann_background_from, ann_m, ann_ef_construction, ann_ef_search, "
                                       "wal_checkpoint_pages and keyword_row_budget")
                            .arg(Error::quoted(key)));
        }
    }
    if (!hasPath)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("sqlite storage: the configuration needs \"path\" (a file such as ~/.mneme/memory.db, or \":memory:\")"));
    return o;
}

int SqliteStorage::latestSchemaVersion()
{
    return kLatestSchema;
}

// ---------------------------------------------------------------------------------------------
// Opening

SqliteStorage::SqliteStorage(const Options &options)
    : m_options(options)
{
    QMutexLocker lock(&m_mutex);
    try {
        open();
    } catch (...) {
        closeConnection();
        throw;
    }
}

SqliteStorage::~SqliteStorage()
{
    QMutexLocker lock(&m_mutex);
    if (!m_closed)
        saveIndexFile(true);
    closeConnection();
}

void SqliteStorage::stopCheckpointer()
{
    if (!m_checkpointer)
        return;
    m_checkpointer->stop(); // its connection closes first: the last one to close removes the WAL
    if (m_db)
        sqlite3_wal_hook(m_db, nullptr, nullptr);
    m_checkpointer.reset();
}

// A connection whose saves reach this many records, and as many as the store held before its first
// save, is loading the store in bulk (SqliteStorage::noteSaved()).
constexpr qint64 kBulkLoadFrom = 1000;

void SqliteStorage::dropIndex()
{
    cancelBuild();
    m_index.invalidate();
}

void SqliteStorage::cancelBuild()
{
    m_build.reset();
}

void SqliteStorage::noteChange(qint64 rowid)
{
    if (m_build)
        m_build->noteChange(rowid);
}

// A copy of the flat index becomes a graph in the background (IndexBuild) while searches scan the flat
// index exactly.
void SqliteStorage::startBuild()
{
    m_build = IndexBuild::start(m_index);
    if (m_build)
        ++m_stats.backgroundBuilds;
    if (!m_build)
        return;
    // Once a build, on the log (mneme --verbose shows it): recalls are exact, and slower, meanwhile.
    qCInfo(lcSqlite).noquote() << QStringLiteral("%1: building the HNSW graph of %2 records on background threads; until it "
                                                 "is done, each vector search scans every vector exactly")
                                      .arg(m_location, QLocale(QLocale::English).toString(qulonglong(m_index.size())));
}

bool SqliteStorage::finishBuild()
{
    if (!m_build || !m_build->done())
        return false;
    const std::unique_ptr<IndexBuild> build = std::move(m_build);
    if (!build->handOver(m_index))
        return false;
    ++m_stats.builds;
    m_stats.fromFile = false;
    m_unsaved = std::max<qint64>(m_unsaved, 1);
    saveIndexFile(true);
    return true;
}

void SqliteStorage::closeConnection()
{
    cancelBuild();
    for (sqlite3_stmt *st : std::as_const(m_statements))
        sqlite3_finalize(st);
    m_statements.clear();
    stopCheckpointer();
    if (m_db) {
        sqlite3_close_v2(m_db);
        m_db = nullptr;
    }
    dropIndex();
    m_closed = true;
}

void SqliteStorage::open()
{
    const bool memory = m_options.path == QLatin1String(":memory:");
    if (m_options.path.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("sqlite storage: \"path\" is empty"));
    m_readOnly = m_options.readOnly;
    if (memory) {
        m_location = m_options.path;
        if (m_readOnly)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("sqlite storage: an in-memory store (\":memory:\") cannot be read-only; drop \"read_only\""));
    } else {
        const QFileInfo fi(m_options.path);
        m_location = fi.absoluteFilePath();
        const QString folder = fi.absolutePath();
        if (const QString problem = pathProblem(m_location); !problem.isEmpty())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("the store path %1 cannot be used: %2; choose another path")
                                                        .arg(Error::quoted(m_location, 120), problem));
        if (fi.exists() && fi.isDir())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("sqlite storage: %1 is a folder; set \"path\" to a file inside it, such as %1/memory.db")
                            .arg(m_location));
        if (!fi.exists()) {
            if (m_readOnly)
                throw Error(ErrorKind::NotFound,
                            QStringLiteral("there is no Mneme store at %1 to open read-only; check the path, or open it without read_only to create it")
                                .arg(m_location));
            if (!m_options.create)
                throw Error(ErrorKind::NotFound,
                            QStringLiteral("there is no Mneme store at %1; check the path (mneme --db PATH), or save a memory "
                                           "first to create it")
                                .arg(m_location));
            if (!QDir().mkpath(folder))
                throw Error(ErrorKind::ReadOnlyStore,
                            QStringLiteral("cannot create the folder %1 for the store %2; check its permissions or choose another path")
                                .arg(folder, m_location));
            if (!QFileInfo(folder).isWritable())
                throw Error(ErrorKind::ReadOnlyStore,
                            QStringLiteral("cannot create the store %1: this user may not write the folder %2; choose another path or fix the permissions")
                                .arg(m_location, folder));
        } else if (!m_readOnly && (!fi.isWritable() || !QFileInfo(folder).isWritable())) {
            // Reads still work; every write reports ReadOnlyStore.
            m_readOnly = true;
            m_readOnlyReason = QStringLiteral("this user may not write the file or its folder (%1); fix the permissions to save").arg(folder);
        }
    }
    if (m_options.readOnly)
        m_readOnlyReason = QStringLiteral("it was opened with read_only; open it without read_only to save");

    openConnection(false);
    // A read-only connection to a WAL store in a folder it cannot write may fail to create the
    // shared-memory file; then the file can still be read as immutable.
    if (m_readOnly && !memory) {
        const int rc = sqlite3_exec(m_db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
        if (rc == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY) {
            closeConnection();
            m_closed = false;
            openConnection(true);
        }
    }
    checkStore();
    if (!m_readOnly) {
        if (m_version < kLatestSchema)
            migrate();
        configureWriting();
    } else {
        exec("PRAGMA query_only = 1", QStringLiteral("opening the store read-only"));
    }
    ensureStoreId();
    Statement dv(*this, "PRAGMA data_version");
    dv.step(QStringLiteral("reading the data version"));
    m_dataVersion = dv.int64(0);
    loadBinding();
}

QString SqliteStorage::metaValue(const char *key)
{
    Statement st(*this, "SELECT value FROM meta WHERE key = ?");
    st.bindBytes(1, QByteArray(key));
    return st.step(QStringLiteral("reading the store's settings")) ? st.text(0) : QString();
}

// A random name for the store, recorded once, so that an index file is never applied to another store.
void SqliteStorage::ensureStoreId()
{
    if (m_version < 1)
        return;
    m_storeId = metaValue("store_id");
    if (!m_storeId.isEmpty() || m_readOnly || m_location == QLatin1String(":memory:"))
        return;
    exec("BEGIN IMMEDIATE", QStringLiteral("naming the store"));
    try {
        Statement st(*this, "INSERT INTO meta(key, value) VALUES ('store_id', ?) ON CONFLICT(key) DO NOTHING");
        st.bindText(1, QUuid::createUuid().toString(QUuid::WithoutBraces)).run(QStringLiteral("naming the store"));
        exec("COMMIT", QStringLiteral("naming the store"));
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    m_storeId = metaValue("store_id");
}

// The last history seq ever assigned (AUTOINCREMENT keeps it across deletions of the history).
qint64 SqliteStorage::currentSeq()
{
    Statement st(*this, "SELECT seq FROM sqlite_sequence WHERE name = 'history'");
    return st.step(QStringLiteral("reading the change sequence")) ? st.int64(0) : 0;
}

// Bumped by a reset of everything, which clears the history an index would catch up from.
qint64 SqliteStorage::currentGeneration()
{
    return metaValue("reset_generation").toLongLong();
}

qint64 SqliteStorage::recordCount()
{
    Statement st(*this, "SELECT count(*) FROM records");
    st.step(QStringLiteral("counting records"));
    return st.int64(0);
}

void SqliteStorage::openConnection(bool immutable)
{
    m_closed = false;
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    flags |= m_readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    QByteArray name;
    if (m_location == QLatin1String(":memory:")) {
        name = ":memory:";
    } else {
        name = fileUri(m_location);
        if (immutable)
            name += "?immutable=1";
    }
    const int rc = sqlite3_open_v2(name.constData(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const QString msg = m_db ? QString::fromUtf8(sqlite3_errmsg(m_db)) : QStringLiteral("out of memory");
        if (m_db) {
            sqlite3_close_v2(m_db);
            m_db = nullptr;
        }
        if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
            throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is not a SQLite database or is damaged (%2); Mneme did not change it. "
                                                           "Move it away or restore it from a backup, or set \"path\" to another file")
                                                .arg(m_location, msg));
        throw Error(ErrorKind::Storage, QStringLiteral("cannot open the store %1 (%2); check the path and its permissions")
                                            .arg(m_location, msg));
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, m_options.busyTimeoutMs);
    if (sqlite3_create_function_v2(m_db, "mneme_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nullptr,
                                   containsFunction, nullptr, nullptr, nullptr)
        != SQLITE_OK)
        throw Error(ErrorKind::Storage, QStringLiteral("cannot open the store %1: the text search function could not be "
                                                       "registered (%2)")
                                            .arg(m_location, QString::fromUtf8(sqlite3_errmsg(m_db))));
    if (sqlite3_create_function_v2(m_db, "mneme_judged", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, &m_keywordJudge, judgedFunction, nullptr,
                                   nullptr, nullptr)
        != SQLITE_OK)
        throw Error(ErrorKind::Storage, QStringLiteral("cannot open the store %1: the keyword filter function could not be "
                                                       "registered (%2)")
                                            .arg(m_location, QString::fromUtf8(sqlite3_errmsg(m_db))));
    m_tokenLengths.reset();
    m_phraseHits.clear();
    if (!KeywordEvidence::registerOn(m_db, &m_tokenLengths))
        throw Error(ErrorKind::Storage,
                    QStringLiteral("cannot open the store %1: the SQLite library lacks FTS5, which keyword search needs; "
                                   "install a SQLite built with FTS5")
                        .arg(m_location));
}

int SqliteStorage::storedSchemaVersion(bool *hasTables, bool *hasMeta)
{
    QStringList tables;
    {
        Statement st(*this, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
        while (st.step(QStringLiteral("reading the schema")))
            tables << st.text(0);
    }
    // Tables named chat_* belong to the chat sessions that share the file (the memory library's
    // SqliteChatStore): a file holding only them is still empty for the memory store.
    tables.erase(std::remove_if(tables.begin(), tables.end(), [](const QString &t) { return t.startsWith(QLatin1String("chat_")); }),
                 tables.end());
    m_tables = tables;
    *hasTables = !tables.isEmpty();
    *hasMeta = tables.contains(QStringLiteral("meta"));
    if (!*hasMeta)
        return 0;
    int version = -1;
    {
        Statement st(*this, "SELECT value FROM meta WHERE key = 'schema_version'");
        if (st.step(QStringLiteral("reading the schema version"))) {
            bool ok = false;
            version = st.text(0).toInt(&ok);
            if (!ok)
                version = -1;
        }
    }
    if (version < 0)
        throw Error(ErrorKind::Corrupt,
                    QStringLiteral("%1 is not a Mneme store (its meta table has no valid schema_version); Mneme did not change it. "
                                   "Set \"path\" to another file, or move this one away")
                        .arg(m_location));
    Statement uv(*this, "PRAGMA user_version");
    uv.step(QStringLiteral("reading the schema version"));
    return std::max(version, int(uv.int64(0)));
}

void SqliteStorage::checkStore()
{
    bool hasTables = false, hasMeta = false;
    m_version = storedSchemaVersion(&hasTables, &hasMeta);
    if (m_version > kLatestSchema)
        throw Error(ErrorKind::SchemaTooNew,
                    QStringLiteral("%1 was written by a newer Mneme (schema %2; this build reads up to %3): upgrade Mneme to open it. "
                                   "The file was not changed")
                        .arg(m_location)
                        .arg(m_version)
                        .arg(kLatestSchema));
    if (hasTables && !hasMeta)
        throw Error(ErrorKind::Corrupt,
                    QStringLiteral("%1 is a SQLite database but is not a Mneme store (it has no meta table); Mneme did not change it. "
                                   "Set \"path\" to another file")
                        .arg(m_location));
    if (m_version == 0 && m_readOnly) {
        if (m_options.readOnly)
            throw Error(ErrorKind::NotFound,
                        QStringLiteral("%1 holds no Mneme store yet, and it is opened read-only; open it once without read_only to create the store")
                            .arg(m_location));
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("%1 holds no Mneme store yet, and this user may not write it to create one; fix the permissions or choose another path")
                        .arg(m_location));
    }
    if (m_version > 0 && m_version < kOldestReadableSchema && m_readOnly)
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("%1 is at schema %2 and must be upgraded to schema %3, which needs write access; open it once writable")
                        .arg(m_location)
                        .arg(m_version)
                        .arg(kLatestSchema));
    // Only the tables of the store's own version: an older store lacks the later ones until migrate().
    for (const RequiredTable &t : kRequiredTables) {
        if (m_version >= t.since && !m_tables.contains(QLatin1String(t.name)))
            throw Error(ErrorKind::Corrupt,
                        QStringLiteral("%1 is damaged: its table \"%2\" is missing; Mneme did not change it. Restore it from a backup, "
                                       "or `mneme export` what is readable and import it into a new store")
                            .arg(m_location, QLatin1String(t.name)));
    }
}

void SqliteStorage::migrate()
{
    exec("BEGIN IMMEDIATE", QStringLiteral("starting the schema upgrade"));
    try {
        // Another process may have created or upgraded the store while we waited for the lock.
        bool hasTables = false, hasMeta = false;
        const int current = storedSchemaVersion(&hasTables, &hasMeta);
        if (current > kLatestSchema || (hasTables && !hasMeta)) {
            exec("ROLLBACK", QStringLiteral("ending the schema upgrade"));
            checkStore(); // throws the matching error
            return;
        }
        for (const Migration &m : kMigrations) {
            if (m.version <= current)
                continue;
            exec(m.sql, QStringLiteral("upgrading the schema to version %1").arg(m.version));
            Statement st(*this, "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
            st.bindText(1, QString::number(m.version)).run(QStringLiteral("recording the schema version"));
            if (m.version == 1) {
                Statement by(*this, "INSERT INTO meta(key, value) VALUES ('created_by', ?)");
                by.bindText(1, QStringLiteral("mneme " MNEME_VERSION_STR)).run(QStringLiteral("recording the creator"));
            }
        }
        exec(QByteArray("PRAGMA user_version = ") + QByteArray::number(kLatestSchema), QStringLiteral("recording the schema version"));
        exec("COMMIT", QStringLiteral("committing the schema upgrade"));
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    bool hasTables = false, hasMeta = false;
    m_version = storedSchemaVersion(&hasTables, &hasMeta);
}

void SqliteStorage::configureWriting()
{
    if (m_location != QLatin1String(":memory:")) {
        // Switching to WAL needs a moment alone with the file; another process opening it at the
        // same instant makes it busy, so retry within the busy timeout.
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            Statement st(*this, "PRAGMA journal_mode = WAL");
            const int rc = sqlite3_step(st.get());
            if (rc == SQLITE_ROW) {
                const QString mode = st.text(0).toLower();
                if (mode != QLatin1String("wal"))
                    throw Error(ErrorKind::Storage,
                                QStringLiteral("cannot switch the store %1 to WAL mode (it stays in %2 mode); the file system may not support it")
                                    .arg(m_location, mode));
                break;
            }
            if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
                fail(rc, QStringLiteral("switching to WAL mode"));
            if (timer.elapsed() > m_options.busyTimeoutMs)
                fail(rc, QStringLiteral("switching to WAL mode"));
            QThread::msleep(10);
        }
    }
    exec("PRAGMA synchronous = FULL", QStringLiteral("configuring durable writes"));
    // A batch of a few hundred records dirties a few megabytes of pages: a page cache that holds
    // them is not spilled to the WAL in the middle of the transaction, and a WAL allowed to grow to
    // 16 MB (wal_checkpoint_pages) is checkpointed every few batches, not after each (SQLite's
    // defaults: 2 MB, 4 MB), by a thread of its own instead of inside a commit.
    exec("PRAGMA cache_size = -8192", QStringLiteral("configuring the page cache"));
    if (m_location != QLatin1String(":memory:")) {
        m_checkpointer = std::make_unique<WalCheckpointer>(fileUri(m_location), m_location, m_options.walCheckpointPages);
        m_checkpointer->attach(m_db);
    }
}

// ---------------------------------------------------------------------------------------------
// Plumbing

void SqliteStorage::ensureOpen() const
{
    if (m_closed || !m_db)
        throw Error(ErrorKind::Storage, QStringLiteral("the store %1 is closed; open it again to use it").arg(m_location));
}

void SqliteStorage::ensureWritable() const
{
    if (m_readOnly)
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("the store %1 is read-only: %2").arg(m_location, m_readOnlyReason));
}

void SqliteStorage::fail(int rc, const QString &doing) const
{
    const QString detail = m_db ? QString::fromUtf8(sqlite3_errmsg(m_db)) : QString::fromUtf8(sqlite3_errstr(rc));
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        throw Error(ErrorKind::Corrupt,
                    QStringLiteral("%1 is not a Mneme store or is damaged (%2 while %3); Mneme did not change it. "
                                   "Restore it from a backup or move it away and set \"path\" to a new file")
                        .arg(m_location, detail, doing));
    case SQLITE_READONLY:
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("the store %1 cannot be written (%2 while %3); check the permissions of the file and its folder")
                        .arg(m_location, detail, doing));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        throw Error(ErrorKind::Storage,
                    QStringLiteral("the store %1 stayed locked by another connection for more than %2 ms while %3; "
                                   "retry, or raise busy_timeout_ms")
                        .arg(m_location)
                        .arg(m_options.busyTimeoutMs)
                        .arg(doing));
    case SQLITE_FULL:
        throw Error(ErrorKind::Storage,
                    QStringLiteral("the disk holding %1 is full (while %2); free some space and retry").arg(m_location, doing));
    default:
        throw Error(ErrorKind::Storage,
                    QStringLiteral("SQLite failed on %1 while %2: %3").arg(m_location, doing, detail));
    }
}

sqlite3_stmt *SqliteStorage::prepare(const QByteArray &sql, bool *owned)
{
    ensureOpen();
    *owned = false;
    auto it = m_statements.constFind(sql);
    if (it != m_statements.constEnd())
        return it.value();
    // Filters produce a handful of SQL shapes; past the cap (pathological variety) a statement is
    // prepared for one use and finalized by its Statement.
    const bool cache = m_statements.size() < 256;
    sqlite3_stmt *st = nullptr;
    const int rc = sqlite3_prepare_v3(m_db, sql.constData(), int(sql.size()), cache ? SQLITE_PREPARE_PERSISTENT : 0, &st, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        fail(rc, QStringLiteral("preparing a query"));
    }
    if (cache)
        m_statements.insert(sql, st);
    else
        *owned = true;
    return st;
}

void SqliteStorage::exec(const char *sql, const QString &doing)
{
    ensureOpen();
    char *err = nullptr;
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK)
        fail(rc, doing);
}

void SqliteStorage::exec(const QByteArray &sql, const QString &doing)
{
    exec(sql.constData(), doing);
}

void SqliteStorage::refreshIfChanged()
{
    Statement st(*this, "PRAGMA data_version");
    st.step(QStringLiteral("checking for changes by other connections"));
    const qint64 v = st.int64(0);
    if (v == m_dataVersion)
        return;
    m_dataVersion = v;
    m_readCache.clear();
    keywordIndexChanged(-1);
    loadBinding();
    if (!m_index.isLoaded())
        return;
    // Another connection committed: apply its changes (from the history) instead of reloading.
    bool current = false;
    try {
        current = catchUp();
    } catch (...) {
        dropIndex();
        throw;
    }
    if (!current)
        dropIndex(); // reloaded (or rebuilt) on the next search
}

void SqliteStorage::loadBinding()
{
    Statement st(*this, "SELECT key, value FROM meta WHERE key IN ('embedder_id', 'dimension')");
    QString id;
    int dimension = 0;
    while (st.step(QStringLiteral("reading the embedder binding"))) {
        if (st.text(0) == QLatin1String("embedder_id"))
            id = st.text(1);
        else
            dimension = st.text(1).toInt();
    }
    if (dimension > 0)
        m_binding = EmbedderBinding{id, dimension};
    else
        m_binding.reset();
}

std::optional<EmbedderBinding> SqliteStorage::effectiveBinding() const
{
    return m_binding ? m_binding : m_sessionBinding;
}

void SqliteStorage::checkDimension(int dimension, const QString &what)
{
    const auto b = effectiveBinding();
    if (b && b->dimension != dimension)
        throw Error(ErrorKind::EmbedderMismatch,
                    QStringLiteral("%1 is %2-dimensional, but the store %3 holds embeddings of %4; Mneme does not mix embeddings. "
                                   "Configure the embedder the store was written with, or %5")
                        .arg(what)
                        .arg(dimension)
                        .arg(m_location, describe(b), kResetAdvice));
}

void SqliteStorage::claimDimension(int dimension)
{
    if (m_binding)
        return;
    Statement st(*this, "INSERT INTO meta(key, value) VALUES ('dimension', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    st.bindText(1, QString::number(dimension)).run(QStringLiteral("recording the embedding dimension"));
    m_binding = EmbedderBinding{QString(), dimension};
}

void SqliteStorage::checkRecord(const MemoryRecord &r) const
{
    if (r.id.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a record to store has no id; create records with MemoryRecord::create()"));
    QString error, normalized;
    if (!ScopePath::isValid(r.scope, &error))
        throw Error(ErrorKind::InvalidArgument, error);
    if (ScopePath::normalize(r.scope) != r.scope)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the scope \"%1\" of record %2 is not normalised; pass it through ScopePath::normalize()").arg(r.scope, r.id));
}

// ---------------------------------------------------------------------------------------------
// Rows

SqliteStorage::Where SqliteStorage::where(const RecordFilter &filter) const
{
    Where w;
    QList<QByteArray> conds;
    if (!filter.scopes.isEmpty()) {
        // Whole path components: a record lies in P when its scope is P or starts with "P/", i.e.
        // sorts in ["P/", "P0") byte-wise ('0' follows '/'). Exact, case-sensitive, uses the index,
        // and no character of P is ever a wildcard.
        QList<QByteArray> any;
        bool everything = false;
        for (const QString &s : filter.scopes) {
            if (s.isEmpty() || s == QLatin1String("/")) {
                everything = true;
                break;
            }
            const QByteArray p = s.toUtf8();
            any << "(r.scope = ? OR (r.scope >= ? AND r.scope < ?))";
            w.args.emplace_back(p);
            w.args.emplace_back(p + '/');
            w.args.emplace_back(p + '0');
        }
        if (!everything) {
            conds << "(" + any.join(" OR ") + ")";
        } else {
            w.args.clear();
        }
    }
    if (!filter.categories.isEmpty()) {
        conds << "EXISTS (SELECT 1 FROM json_each(" + kCategoriesOrNone + ") c WHERE c.value IN (SELECT value FROM json_each(?)))";
        w.args.emplace_back(jsonBytes(Json(filter.categories)));
    }
    if (!filter.ids.isEmpty()) {
        conds << "r.id IN (SELECT value FROM json_each(?))";
        w.args.emplace_back(jsonBytes(Json(filter.ids)));
    }
    if (filter.createdBefore.isValid()) {
        conds << "r.created_at < ?";
        w.args.emplace_back(filter.createdBefore.toMSecsSinceEpoch());
    }
    if (filter.createdAfter.isValid()) {
        conds << "r.created_at >= ?";
        w.args.emplace_back(filter.createdAfter.toMSecsSinceEpoch());
    }
    if (!filter.onlySource.isEmpty()) {
        conds << "r.source = ?";
        w.args.emplace_back(filter.onlySource.toUtf8());
    }
    if (!filter.contentContains.isEmpty()) {
        conds << "mneme_contains(r.content, ?)";
        w.args.emplace_back(filter.contentContains.toUtf8());
    }
    // Metadata conditions select a superset here (SQLite's types: text, integer, real; its JSON
    // booleans are 1 and 0); the records read are then checked exactly (RecordFilter::matches).
    const MetadataFilter metadataConditions = MetadataFilter::parse(filter.metadata);
    for (const MetadataFilter::Condition &c : metadataConditions.conditions()) {
        const std::optional<QByteArray> path = jsonPath(c.key);
        if (!path)
            continue;
        const auto scalar = [](const Json &v) -> std::optional<std::variant<qint64, QByteArray, double>> {
            if (v.is_string())
                return QByteArray::fromStdString(v.get<std::string>());
            if (v.is_boolean())
                return qint64(v.get<bool>() ? 1 : 0);
            if (v.is_number_integer())
                return qint64(v.get<long long>());
            if (v.is_number())
                return v.get<double>();
            return std::nullopt;
        };
        switch (c.op) {
        case MetadataFilter::Op::Eq:
        case MetadataFilter::Op::Gt:
        case MetadataFilter::Op::Gte:
        case MetadataFilter::Op::Lt:
        case MetadataFilter::Op::Lte: {
            const auto value = scalar(c.value);
            if (!value)
                break;
            const char *op = c.op == MetadataFilter::Op::Eq  ? " = ?"
                           : c.op == MetadataFilter::Op::Gt  ? " > ?"
                           : c.op == MetadataFilter::Op::Gte ? " >= ?"
                           : c.op == MetadataFilter::Op::Lt  ? " < ?"
                                                             : " <= ?";
            conds << QByteArray("json_extract(r.metadata, ?)") + op;
            w.args.emplace_back(*path);
            if (std::holds_alternative<double>(*value))
                w.args.emplace_back(std::get<double>(*value));
            else if (std::holds_alternative<qint64>(*value))
                w.args.emplace_back(std::get<qint64>(*value));
            else
                w.args.emplace_back(std::get<QByteArray>(*value));
            break;
        }
        case MetadataFilter::Op::In:
            conds << "json_extract(r.metadata, ?) IN (SELECT value FROM json_each(?))";
            w.args.emplace_back(*path);
            w.args.emplace_back(jsonBytes(c.value));
            break;
        case MetadataFilter::Op::Exists:
            conds << (c.value.get<bool>() ? "json_type(r.metadata, ?) IS NOT NULL" : "json_type(r.metadata, ?) IS NULL");
            w.args.emplace_back(*path);
            break;
        case MetadataFilter::Op::Ne:
        case MetadataFilter::Op::Nin:
            break; // hold for most records: nothing to narrow
        }
    }
    if (filter.applyPrivacy && !filter.includePrivate) {
        if (filter.source.isEmpty()) {
            conds << "r.private = 0";
        } else {
            conds << "(r.private = 0 OR r.source = ?)";
            w.args.emplace_back(filter.source.toUtf8());
        }
    }
    w.sql = conds.isEmpty() ? QByteArray("1") : conds.join(" AND ");
    return w;
}

SqliteStorage::Row SqliteStorage::readRow(sqlite3_stmt *st, bool withEmbedding) const
{
    Row row;
    MemoryRecord &r = row.record;
    row.rowid = sqlite3_column_int64(st, 0);
    r.id = Statement::columnText(st, 1);
    r.content = Statement::columnText(st, 2);
    r.scope = Statement::columnText(st, 3);
    const std::string_view categoriesText = columnView(st, 4);
    if (!readCategories(categoriesText, r.categories)) {
        r.categories.clear();
        row.damage << QStringLiteral("its categories are not a JSON array");
        row.raw["categories"] = std::string(categoriesText);
    }
    r.importance = sqlite3_column_double(st, 5);
    r.source = Statement::columnText(st, 6);
    r.isPrivate = sqlite3_column_int(st, 7) != 0;
    const std::string_view metaText = columnView(st, 8);
    const Json meta = metaText == "{}" ? Json::object() : parseJsonOrDiscarded(metaText);
    if (meta.is_object()) {
        r.metadata = meta;
    } else {
        r.metadata = Json::object();
        row.damage << QStringLiteral("its metadata is not a JSON object");
        row.raw["metadata"] = std::string(metaText);
    }
    auto time = [st](int col) {
        if (sqlite3_column_type(st, col) == SQLITE_NULL)
            return QDateTime();
        return QDateTime::fromMSecsSinceEpoch(sqlite3_column_int64(st, col), Qt::UTC);
    };
    r.createdAt = time(9);
    r.updatedAt = time(10);
    r.lastAccessed = time(11);
    r.accessCount = sqlite3_column_int(st, 12);
    if (withEmbedding && sqlite3_column_type(st, 13) == SQLITE_BLOB) {
        const int bytes = sqlite3_column_bytes(st, 13);
        const void *data = sqlite3_column_blob(st, 13);
        r.embedding.resize(std::size_t(bytes) / sizeof(float));
        if (!r.embedding.empty())
            std::memcpy(r.embedding.data(), data, r.embedding.size() * sizeof(float));
    }
    return row;
}

bool SqliteStorage::readable(const Row &row) const
{
    if (row.damage.isEmpty())
        return true;
    if (!m_reportedDamage.contains(row.record.id)) {
        m_reportedDamage.insert(row.record.id);
        qCWarning(lcSqlite).noquote() << QStringLiteral("record %1 of %2 is damaged (%3) and is left out of what is read; "
                                                        "`mneme check` lists such records, `mneme export --curator` writes them "
                                                        "as they are, `mneme forget --id %1 --curator` deletes it")
                                             .arg(row.record.id, m_location, row.damage.join(QStringLiteral(", ")));
    }
    return false;
}

std::vector<SqliteStorage::Row> SqliteStorage::selectRows(const RecordFilter &filter, bool withEmbedding, bool withDamaged)
{
    const Where w = where(filter);
    QByteArray sql = QByteArray("SELECT ") + kRecordColumns + (withEmbedding ? ", r.embedding" : "")
                   + " FROM records r WHERE " + w.sql;
    Statement st(*this, sql);
    st.bindAll(w.args);
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    std::vector<Row> rows;
    while (st.step(QStringLiteral("reading records"))) {
        Row row = readRow(st.get(), withEmbedding);
        if ((withDamaged || readable(row)) && filter.matches(row.record, conditions))
            rows.push_back(std::move(row));
    }
    return rows;
}

std::optional<SqliteStorage::Row> SqliteStorage::rowById(const QString &id, bool withEmbedding)
{
    Statement st(*this, QByteArray("SELECT ") + kRecordColumns + (withEmbedding ? ", r.embedding" : "")
                            + " FROM records r WHERE r.id = ?");
    st.bindText(1, id);
    if (!st.step(QStringLiteral("reading a record")))
        return std::nullopt;
    return readRow(st.get(), withEmbedding);
}

std::optional<SqliteStorage::Row> SqliteStorage::rowByRowid(qint64 rowid, bool withEmbedding)
{
    Statement st(*this, QByteArray("SELECT ") + kRecordColumns + (withEmbedding ? ", r.embedding" : "")
                            + " FROM records r WHERE r.rid = ?");
    st.bind(1, rowid);
    if (!st.step(QStringLiteral("reading a record")))
        return std::nullopt;
    return readRow(st.get(), withEmbedding);
}

std::unordered_map<qint64, SqliteStorage::Row> SqliteStorage::rowsByRowids(const std::vector<qint64> &rowids)
{
    Statement st(*this, QByteArray("SELECT ") + kRecordColumns + " FROM records r WHERE r.rid IN (SELECT value FROM json_each(?))");
    st.bindBytes(1, jsonBytes(Json(rowids)));
    std::unordered_map<qint64, Row> rows;
    while (st.step(QStringLiteral("reading records"))) {
        Row row = readRow(st.get(), false);
        if (!readable(row))
            continue;
        const qint64 rid = row.rowid;
        rows.emplace(rid, std::move(row));
    }
    return rows;
}

std::vector<qint64> SqliteStorage::rowidsForIds(const QStringList &ids)
{
    Statement st(*this, "SELECT rid FROM records WHERE id IN (SELECT value FROM json_each(?))");
    st.bindBytes(1, jsonBytes(Json(ids)));
    std::vector<qint64> out;
    while (st.step(QStringLiteral("looking up records by id")))
        out.push_back(st.int64(0));
    return out;
}

// Binds the thirteen stored fields of a record, content to embedding in table order, from `first`.
SqliteStorage::Statement &SqliteStorage::bindFields(Statement &st, int first, const MemoryRecord &r, qint64 hash)
{
    return st.bindText(first, r.content)
        .bindText(first + 1, r.scope)
        .bindBytes(first + 2, categoriesJson(r.categories))
        .bindDouble(first + 3, r.importance)
        .bindText(first + 4, r.source)
        .bind(first + 5, r.isPrivate ? 1 : 0)
        .bindBytes(first + 6, metadataJson(r.metadata))
        .bindTime(first + 7, r.createdAt)
        .bindTime(first + 8, r.updatedAt)
        .bindTime(first + 9, r.lastAccessed)
        .bind(first + 10, r.accessCount)
        .bind(first + 11, hash)
        .bindEmbedding(first + 12, r.embedding);
}

qint64 SqliteStorage::insertRecord(const MemoryRecord &r)
{
    Statement st(*this, "INSERT INTO records(id, content, scope, categories, importance, source, private, metadata, "
                        "created_at, updated_at, last_accessed, access_count, content_hash, embedding) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const qint64 hash = hashOf(r.content);
    st.bindText(1, r.id);
    bindFields(st, 2, r, hash);
    // The id's UNIQUE index finds a record that exists already (no lookup before each insert).
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("a record with id %1 already exists in the store %2; nothing was saved").arg(r.id, m_location));
    if (rc != SQLITE_DONE)
        fail(rc, QStringLiteral("saving record %1").arg(r.id));
    const qint64 rowid = sqlite3_last_insert_rowid(m_db);
    Statement fts(*this, "INSERT INTO records_fts(rowid, content, context) VALUES (?, ?, ?)");
    fts.bind(1, rowid).bindText(2, r.content).bindText(3, r.context).run(QStringLiteral("indexing record %1").arg(r.id));
    keywordIndexChanged(rowid);
    addContentHash(hash, rowid);
    return rowid;
}

// The category counts of records just inserted: one row per scope, source, privacy and category of
// the batch (updates and deletes are counted by the table's triggers).
void SqliteStorage::addCategoryCounts(const std::vector<const MemoryRecord *> &inserted)
{
    if (m_version < 6)
        return;
    std::map<std::tuple<QString, QString, int, QString>, qint64> added;
    for (const MemoryRecord *r : inserted) {
        QStringList categories = r->categories;
        categories.removeDuplicates();
        for (const QString &c : std::as_const(categories))
            ++added[{r->scope, r->source, r->isPrivate ? 1 : 0, c}];
    }
    if (added.empty())
        return;
    Statement st(*this, "INSERT INTO category_counts(scope, source, private, category, n) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT DO UPDATE SET n = n + excluded.n");
    for (const auto &[key, n] : added) {
        const auto &[scope, source, isPrivate, category] = key;
        st.bindText(1, scope).bindText(2, source).bind(3, isPrivate).bindText(4, category).bind(5, n).run(QStringLiteral("counting the categories"));
        sqlite3_reset(st.get());
    }
}

qint64 SqliteStorage::hashOf(const QString &content) const
{
    const auto it = m_batchHashes.constFind(content);
    return it != m_batchHashes.cend() ? *it : contentHash(content);
}

void SqliteStorage::addContentHash(qint64 hash, qint64 rowid)
{
    Statement st(*this, "INSERT INTO content_hashes_recent(hash, rid) VALUES (?, ?)");
    st.bind(1, hash).bind(2, rowid).run(QStringLiteral("indexing the content of row %1").arg(rowid));
}

void SqliteStorage::removeContentHash(qint64 rowid)
{
    // The stored hash, not one computed again: the entry is found whatever wrote the row.
    for (const char *sql : {"DELETE FROM content_hashes WHERE rid = ?1 AND hash = (SELECT content_hash FROM records WHERE rid = ?1)",
                            "DELETE FROM content_hashes_recent WHERE rid = ?1 AND hash = (SELECT content_hash FROM records WHERE rid = ?1)"}) {
        Statement st(*this, sql);
        st.bind(1, rowid).run(QStringLiteral("unindexing the content of row %1").arg(rowid));
    }
}

void SqliteStorage::mergeRecentHashes()
{
    {
        Statement st(*this, "SELECT count(*) FROM content_hashes_recent");
        st.step(QStringLiteral("counting recent content hashes"));
        if (st.int64(0) < kRecentHashLimit)
            return;
    }
    // Read in key order, so the inserts walk content_hashes from one end to the other.
    exec("INSERT INTO content_hashes(hash, rid) SELECT hash, rid FROM content_hashes_recent",
         QStringLiteral("merging recent content hashes"));
    exec("DELETE FROM content_hashes_recent", QStringLiteral("merging recent content hashes"));
}

void SqliteStorage::insertHistory(const QString &recordId, HistoryEntry::Event event, const MemoryRecord *oldRecord,
                                  const MemoryRecord *newRecord, qint64 atMs)
{
    Statement st(*this, "INSERT INTO history(record_id, event, old_content, new_content, old_record, new_record, at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    st.bindText(1, recordId).bindText(2, HistoryEntry::eventName(event));
    if (oldRecord)
        st.bindText(3, oldRecord->content).bindBytes(5, recordJson(*oldRecord));
    else
        st.bindNull(3).bindNull(5);
    if (newRecord)
        st.bindText(4, newRecord->content).bindBytes(6, recordJson(*newRecord));
    else
        st.bindNull(4).bindNull(6);
    st.bind(7, atMs);
    st.run(QStringLiteral("writing the history of record %1").arg(recordId));
}

// The ADD entries of saved records, up to 32 rows a statement: the history's AUTOINCREMENT counter is
// read and written once per statement, not once per row. Statements of 32, 16, ... 1 rows.
void SqliteStorage::insertAddHistory(const std::vector<const MemoryRecord *> &records, qint64 atMs)
{
    const QByteArray event = HistoryEntry::eventName(HistoryEntry::Event::Add).toUtf8();
    for (std::size_t first = 0; first < records.size();) {
        std::size_t rows = 32;
        while (rows > records.size() - first)
            rows /= 2;
        QByteArray sql("INSERT INTO history(record_id, event, new_content, new_record, at) VALUES (?, ?, ?, ?, ?)");
        for (std::size_t i = 1; i < rows; ++i)
            sql += ", (?, ?, ?, ?, ?)";
        Statement st(*this, sql);
        int param = 1;
        for (std::size_t i = first; i < first + rows; ++i) {
            const MemoryRecord &r = *records[i];
            st.bindText(param, r.id).bindBytes(param + 1, event).bindText(param + 2, r.content);
            st.bindBytes(param + 3, recordJson(r)).bind(param + 4, atMs);
            param += 5;
        }
        st.run(QStringLiteral("writing the history of record %1").arg(records[first]->id));
        first += rows;
    }
}

VectorIndex::Item SqliteStorage::indexItem(qint64 rowid, const MemoryRecord &r)
{
    VectorIndex::Item item;
    item.rowid = rowid;
    item.scope = r.scope;
    item.categories = r.categories;
    item.source = r.source;
    item.isPrivate = r.isPrivate;
    item.hasCreated = r.createdAt.isValid();
    item.createdMs = item.hasCreated ? r.createdAt.toMSecsSinceEpoch() : 0;
    item.importance = r.importance;
    item.identity = VectorIndex::identityOf(r.metadata);
    return item;
}

void SqliteStorage::indexPut(qint64 rowid, const MemoryRecord &r)
{
    if (!m_index.isLoaded())
        return;
    noteChange(rowid);
    if (r.embedding.empty()) {
        // An update that keeps the stored vector (a record without one stays unvectored).
        m_index.updateAttributes(indexItem(rowid, r));
        return;
    }
    if (m_index.dimension() != int(r.embedding.size())) {
        if (m_index.trackedCount() == 0 && !m_index.isAnn()) {
            m_index.reset(int(r.embedding.size())); // the first vector of an empty store
        } else {
            dropIndex(); // cannot happen after checkDimension(); reload to be safe
            return;
        }
    }
    m_index.upsert(indexItem(rowid, r), r.embedding.data());
}

void SqliteStorage::indexInserted(const std::vector<qint64> &rowids, const std::vector<const MemoryRecord *> &records)
{
    std::vector<VectorIndex::Change> changes;
    changes.reserve(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        const MemoryRecord &r = *records[i];
        if (!r.embedding.empty() && m_index.dimension() != int(r.embedding.size())) {
            if (m_index.trackedCount() == 0 && !m_index.isAnn() && changes.empty()) {
                m_index.reset(int(r.embedding.size())); // the first vector of an empty store
            } else {
                dropIndex(); // cannot happen after checkDimension(); reload to be safe
                return;
            }
        }
        noteChange(rowids[i]);
        VectorIndex::Change c;
        c.kind = r.embedding.empty() ? VectorIndex::Change::Kind::Remove : VectorIndex::Change::Kind::Put;
        c.item = indexItem(rowids[i], r);
        c.vector = r.embedding.data();
        changes.push_back(std::move(c));
    }
    // During a bulk load the batch's graph inserts go on while the writer writes the next batch (the
    // index waits for them at its next use).
    m_index.apply(changes, indexBuildThreads(), m_bulkLoading);
}

// A connection that has saved as many records as the store held before its first save (and at least
// kBulkLoadFrom) is loading it in bulk: it loads the index now, with the records just committed
// (reading at most twice as many vectors as it wrote), and keeps it up to date with every later save,
// so that the graph is built during the load, each batch inserted with every core on the writer's
// side, and written when the load ends (close()). Called after a save while the index is not loaded.
void SqliteStorage::noteSaved(qint64 saved)
{
    m_savedHere += saved;
    if (m_savedHere < kBulkLoadFrom || m_indexFailed)
        return;
    if (m_recordsBeforeSaves < 0) // counted once, and only by a connection that saves this much
        m_recordsBeforeSaves = std::max<qint64>(0, recordCount() - m_savedHere);
    if (m_savedHere < m_recordsBeforeSaves)
        return;
    m_bulkLoading = true;
    try {
        loadIndex();
    } catch (...) {
        m_indexFailed = true; // the save is committed; searches load the index as before
        dropIndex();
    }
}

void SqliteStorage::indexRemove(qint64 rowid)
{
    if (m_index.isLoaded()) {
        noteChange(rowid);
        m_index.remove(rowid);
    }
}

// After this connection's own committed write of `changes` records, ending at history seq lastSeq.
void SqliteStorage::afterWrite(qint64 lastSeq, qint64 changes)
{
    if (!m_index.isLoaded())
        return;
    m_indexSeq = lastSeq;
    m_unsaved += changes;
    try {
        promoteIfLarge();
    } catch (...) {
        dropIndex();
        return;
    }
    saveIndexFile(false);
}

// A flat index that grew past the threshold becomes a graph (and is written, so no one builds it again).
// From ann_background_from vectors on, the graph is built in the background (startBuild()) and taken
// by the first search or write after it is done; smaller ones are built here.
void SqliteStorage::promoteIfLarge()
{
    if (finishBuild() || m_build)
        return;
    if (!m_index.isLoaded() || m_index.isAnn() || m_index.dimension() <= 0
        || m_index.size() < std::size_t(std::max(1, m_options.annThreshold)))
        return;
    if (m_index.size() >= std::size_t(m_options.annBackgroundFrom)) {
        startBuild();
        return;
    }
    m_index.buildAnn(indexBuildThreads());
    ++m_stats.builds;
    m_stats.fromFile = false;
    m_unsaved = std::max<qint64>(m_unsaved, 1);
    saveIndexFile(!m_bulkLoading); // a bulk load writes it when it ends
}

bool SqliteStorage::indexFileUsable() const
{
    return !m_storeId.isEmpty() && !indexFilePath().isEmpty();
}

// The index file is a cache of the records table: written after a build, after many changes (force:
// whenever it lacks any) and on close; a failure to write it is not an error of the write that asked.
// A connection loading the store in bulk writes it only when asked to (on close): a file written
// during the load would lag a load that does not end by more changes than catchUp() replays, and each
// write stops the graph's inserts while one core writes (about 7 s of a million-record load).
void SqliteStorage::saveIndexFile(bool force) noexcept
{
    if (!m_index.isLoaded() || !m_index.isAnn() || m_readOnly || !indexFileUsable() || m_unsaved <= 0)
        return;
    if (!force && (m_bulkLoading || m_unsaved < std::max<qint64>(1000, qint64(m_index.size() / 8))))
        return;
    VectorIndex::Stamp stamp;
    stamp.storeId = m_storeId;
    stamp.generation = m_indexGeneration;
    stamp.seq = m_indexSeq;
    QString error;
    try {
        if (m_index.save(indexFilePath(), stamp, &error)) {
            m_unsaved = 0;
            ++m_stats.saves;
        }
    } catch (...) {
        // out of memory or disk: the database stays the truth; the next open catches up
    }
}

// Reads a row of kIndexColumns into the index.
void SqliteStorage::applyIndexRow(sqlite3_stmt *stmt)
{
    const int dimension = m_index.dimension();
    VectorIndex::Item item;
    item.rowid = sqlite3_column_int64(stmt, 0);
    noteChange(item.rowid);
    const int bytes = sqlite3_column_type(stmt, 7) == SQLITE_BLOB ? sqlite3_column_bytes(stmt, 7) : 0;
    if (dimension <= 0 || bytes != int(dimension * sizeof(float))) {
        m_index.markUnvectored(item.rowid); // not of this embedder; never searched
        return;
    }
    item.scope = Statement::columnText(stmt, 1);
    readCategories(columnView(stmt, 2), item.categories); // a damaged column filters as no categories
    item.source = Statement::columnText(stmt, 3);
    item.isPrivate = sqlite3_column_int64(stmt, 4) != 0;
    item.hasCreated = sqlite3_column_type(stmt, 5) != SQLITE_NULL;
    item.createdMs = sqlite3_column_int64(stmt, 5);
    item.importance = sqlite3_column_double(stmt, 6);
    item.identity = identityOfText(columnView(stmt, 8));
    const auto *blob = static_cast<const float *>(sqlite3_column_blob(stmt, 7));
    if (reinterpret_cast<quintptr>(blob) % alignof(float) == 0) {
        m_index.upsert(item, blob);
    } else {
        std::vector<float> aligned(static_cast<std::size_t>(dimension));
        std::memcpy(aligned.data(), blob, std::size_t(bytes));
        m_index.upsert(item, aligned.data());
    }
}

void SqliteStorage::loadIndex()
{
    ReadSnapshot snapshot(*this);
    dropIndex();
    VectorIndex::AnnParams params;
    params.m = m_options.annM;
    params.efConstruction = m_options.annEfConstruction;
    params.efSearch = m_options.annEfSearch;
    const int dimension = m_binding ? m_binding->dimension : 0;
    // The state the index will reflect, read before the rows (replaying a change twice is harmless).
    m_indexGeneration = currentGeneration();
    m_indexSeq = currentSeq();
    m_unsaved = 0;
    m_stats.fromFile = false;
    if (dimension <= 0) {
        m_index.reset(0);
        m_index.setParams(params);
        return;
    }
    const qint64 total = recordCount();
    const QString file = indexFilePath();
    if (total >= std::max(1, m_options.annThreshold) && indexFileUsable() && QFileInfo::exists(file)) {
        VectorIndex::Stamp stamp;
        QString error;
        if (m_index.load(file, dimension, &stamp, &error)) {
            m_index.setParams(params);
            // A file of this store and generation, not from its future, with few dead nodes: catch up.
            const bool usable = stamp.storeId == m_storeId && stamp.generation == m_indexGeneration
                             && stamp.seq <= m_indexSeq && m_index.deletedNodes() * 3 <= m_index.graphNodes();
            if (usable) {
                const qint64 target = m_indexSeq;
                m_indexSeq = stamp.seq;
                ++m_stats.fileLoads;
                if (catchUp()) {
                    m_stats.fromFile = true;
                    saveIndexFile(false);
                    return;
                }
                m_indexSeq = target;
            }
            dropIndex();
        }
    }
    m_index.reset(dimension);
    m_index.setParams(params);
    Statement st(*this, QByteArray("SELECT ") + kIndexColumns + " FROM records");
    while (st.step(QStringLiteral("loading the vectors")))
        applyIndexRow(st.get());
    promoteIfLarge();
}

// The most history entries catchUp() replays into an index of `tracked` records. A replay inserts one
// record at a time, on the thread of the search that asked, while a rebuild reads every vector (about
// 9 µs a record) and builds the graph in the background with every core, searches answering exactly
// meanwhile. So at most as many as the index holds (and 1,000), and at most the larger of 10,000 (a
// few seconds) and a twentieth of the index (about what reading it again costs): a file left far behind,
// by a load that did not end or another process's large save, is read again rather than replayed for
// minutes.
qint64 SqliteStorage::replayAtMost(qint64 tracked)
{
    return std::min(tracked + 1000, std::max<qint64>(10000, tracked / 20));
}

// Applies what other connections committed since the index's seq; false when the index cannot be
// brought up to date that way (a reset, a file from elsewhere, too many changes, counts that differ).
bool SqliteStorage::catchUp()
{
    ReadSnapshot snapshot(*this);
    if (currentGeneration() != m_indexGeneration)
        return false;
    const int dimension = m_binding ? m_binding->dimension : 0;
    if (dimension != m_index.dimension() && !(m_index.trackedCount() == 0 && !m_index.isAnn()))
        return false;
    if (dimension != m_index.dimension())
        m_index.reset(dimension);
    const qint64 seq = currentSeq();
    if (seq == m_indexSeq)
        return true;
    if (seq < m_indexSeq)
        return false;
    QStringList ids;
    QSet<QString> seen;
    bool deletes = false;
    qint64 changes = 0;
    {
        Statement st(*this, "SELECT record_id, event FROM history WHERE seq > ? ORDER BY seq");
        st.bind(1, m_indexSeq);
        while (st.step(QStringLiteral("reading the changes of other connections"))) {
            const QString id = st.text(0);
            if (!seen.contains(id)) {
                seen.insert(id);
                ids.append(id);
            }
            if (st.text(1) == QLatin1String("DELETE"))
                deletes = true;
            ++changes;
        }
    }
    if (changes > replayAtMost(qint64(m_index.trackedCount())))
        return false; // read again and built (in the background from ann_background_from records)
    {
        Statement st(*this, QByteArray("SELECT ") + kIndexColumns + " FROM records WHERE id = ?");
        for (const QString &id : std::as_const(ids)) {
            st.bindText(1, id);
            if (st.step(QStringLiteral("reading a changed record")))
                applyIndexRow(st.get());
            sqlite3_reset(st.get());
        }
    }
    if (deletes) {
        // A deleted record's rowid is not in the history: compare the rowids the index holds with the table's.
        std::vector<qint64> present;
        {
            Statement st(*this, "SELECT rid FROM records");
            while (st.step(QStringLiteral("listing records")))
                present.push_back(st.int64(0));
        }
        std::sort(present.begin(), present.end());
        for (qint64 rowid : m_index.trackedRowids())
            if (!std::binary_search(present.begin(), present.end(), rowid)) {
                noteChange(rowid);
                m_index.remove(rowid);
            }
    }
    if (recordCount() != qint64(m_index.trackedCount()))
        return false;
    m_indexSeq = seq;
    m_unsaved += changes;
    m_stats.replayed += changes;
    return true;
}

std::vector<QString> SqliteStorage::distinctScopesBelow(const QString &prefix, const RecordFilter &visible)
{
    RecordFilter f = visible;
    f.scopes = {prefix};
    return distinctScopes(f);
}

std::vector<QString> SqliteStorage::distinctScopes(const RecordFilter &filter)
{
    // The scopes from the scope index alone, then for each whether a record there passes the other
    // conditions: one scan of the index instead of one of the table.
    RecordFilter onlyScopes;
    onlyScopes.scopes = filter.scopes;
    const Where ws = where(onlyScopes);
    std::vector<QString> scopes;
    {
        Statement st(*this, "SELECT DISTINCT r.scope FROM records r WHERE " + ws.sql);
        st.bindAll(ws.args);
        while (st.step(QStringLiteral("listing scopes")))
            scopes.push_back(st.text(0));
    }
    RecordFilter rest = filter;
    rest.scopes.clear();
    const Where w = where(rest);
    if (w.sql == "1")
        return scopes;
    std::vector<QString> out;
    Statement st(*this, "SELECT 1 FROM records r WHERE r.scope = ? AND " + w.sql + " LIMIT 1");
    for (const QString &scope : scopes) {
        st.bindText(1, scope);
        st.bindAll(w.args, 2);
        if (st.step(QStringLiteral("listing scopes")))
            out.push_back(scope);
        sqlite3_reset(st.get());
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Public interface

QString SqliteStorage::location() const
{
    return m_location;
}

int SqliteStorage::schemaVersion() const
{
    return m_version;
}

bool SqliteStorage::isReadOnly() const
{
    return m_readOnly;
}

std::optional<EmbedderBinding> SqliteStorage::embedderBinding() const
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    // Reading may refresh what this object caches about the file; the object itself is not const.
    const_cast<SqliteStorage *>(this)->refreshIfChanged();
    return m_binding;
}

void SqliteStorage::bindEmbedder(const EmbedderBinding &binding)
{
    if (binding.embedderId.isEmpty() || binding.dimension <= 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("an embedder binding needs an embedder id and a positive dimension (got \"%1\", %2)")
                        .arg(binding.embedderId)
                        .arg(binding.dimension));
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();

    auto verdict = [&](const std::optional<EmbedderBinding> &stored) {
        // 0: nothing stored, 1: the same, 2: same dimension and no id stored yet; throws on mismatch.
        if (!stored)
            return 0;
        if (stored->dimension == binding.dimension
            && (stored->embedderId.isEmpty() || stored->embedderId == binding.embedderId))
            return stored->embedderId.isEmpty() ? 2 : 1;
        throw Error(ErrorKind::EmbedderMismatch,
                    QStringLiteral("the store %1 was written with the embedder %2, but the configured embedder is %3; "
                                   "Mneme does not mix embeddings. Configure the embedder the store was written with, or %4")
                        .arg(m_location, describe(stored), describe(binding), kResetAdvice));
    };

    if (m_readOnly) {
        // Nothing can be recorded; remember it for this session so searches are checked.
        if (verdict(effectiveBinding()) != 1 && !m_binding)
            m_sessionBinding = binding;
        return;
    }
    if (verdict(m_binding) == 1)
        return;
    Transaction t(*this);
    if (verdict(m_binding) == 1)
        return;
    Statement st(*this, "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    st.bindText(1, QStringLiteral("embedder_id")).bindText(2, binding.embedderId).run(QStringLiteral("recording the embedder"));
    sqlite3_reset(st.get());
    st.bindText(1, QStringLiteral("dimension")).bindText(2, QString::number(binding.dimension)).run(QStringLiteral("recording the embedder"));
    t.commit();
    m_binding = binding;
}

void SqliteStorage::save(std::span<const MemoryRecord> records)
{
    QMutexLocker lock(&m_mutex);
    saveLocked(records);
}

std::vector<QString> SqliteStorage::saveUnlessIdentical(std::span<const MemoryRecord> records)
{
    QMutexLocker lock(&m_mutex);
    std::vector<QString> ids;
    saveLocked(records, &ids);
    return ids;
}

bool SqliteStorage::batchLookupCurrent(std::span<const MemoryRecord> records) const
{
    if (m_batchDataVersion != m_dataVersion || m_batchCommits != m_commits)
        return false;
    for (const MemoryRecord &r : records)
        if (!m_batchHashes.contains(r.content))
            return false;
    return true;
}

void SqliteStorage::saveLocked(std::span<const MemoryRecord> records, std::vector<QString> *storedIds)
{
    ensureOpen();
    ensureWritable();
    if (records.empty())
        return;
    int dimension = 0;
    QSet<QString> ids;
    for (const MemoryRecord &r : records) {
        checkRecord(r);
        if (ids.contains(r.id))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the batch holds record %1 twice; nothing was saved").arg(r.id));
        ids.insert(r.id);
        if (r.embedding.empty())
            continue;
        if (dimension == 0)
            dimension = int(r.embedding.size());
        else if (dimension != int(r.embedding.size()))
            throw Error(ErrorKind::EmbedderMismatch,
                        QStringLiteral("the batch mixes %1-dimensional and %2-dimensional embeddings (record %3); "
                                       "embed a batch with one embedder. Nothing was saved")
                            .arg(dimension)
                            .arg(r.embedding.size())
                            .arg(r.id));
    }
    // The cached answers stay exact with the inserted records added, unless another connection
    // committed before this transaction began.
    ReadCache cache = std::move(m_readCache);
    const qint64 dataVersion = m_dataVersion;
    Transaction t(*this);
    if (m_dataVersion != dataVersion)
        cache.clear();
    if (dimension > 0) {
        checkDimension(dimension, QStringLiteral("the embedding of the records to save"));
        claimDimension(dimension);
    }
    // Identical records: looked up again under the write lock, unless the last findExact() of these
    // contents saw the store as it is now (another process may have saved them meanwhile).
    std::vector<const MemoryRecord *> inserted;
    inserted.reserve(records.size());
    if (storedIds) {
        std::vector<QString> &ids = *storedIds;
        ids.assign(records.size(), QString());
        const bool lookUp = !batchLookupCurrent(records);
        // content, scope, source, privacy and identities -> the id saved first
        QHash<QString, QString> inBatch;
        for (std::size_t i = 0; i < records.size(); ++i) {
            const MemoryRecord &r = records[i];
            const std::array<QString, 3> identity = VectorIndex::identityOf(r.metadata);
            const QString key = QStringList{r.content, r.scope, r.source, r.isPrivate ? QStringLiteral("1") : QStringLiteral("0"),
                                            identity[0], identity[1], identity[2]}
                                    .join(QChar(0));
            if (const auto seen = inBatch.constFind(key); seen != inBatch.cend()) {
                ids[i] = *seen;
                continue;
            }
            if (lookUp) {
                if (const std::optional<MemoryRecord> stored =
                        findExactLocked(r.content, &r.scope, r.source, r.isPrivate, hashOf(r.content), &r.metadata)) {
                    ids[i] = stored->id;
                    inBatch.insert(key, stored->id);
                    continue;
                }
            }
            ids[i] = r.id;
            inBatch.insert(key, r.id);
            inserted.push_back(&r);
        }
    } else {
        for (const MemoryRecord &r : records)
            inserted.push_back(&r);
    }
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    std::vector<qint64> rowids;
    rowids.reserve(inserted.size());
    for (const MemoryRecord *r : inserted)
        rowids.push_back(insertRecord(*r));
    m_batchHashes.clear();
    mergeRecentHashes();
    addCategoryCounts(inserted);
    insertAddHistory(inserted, at);
    const qint64 lastSeq = currentSeq();
    t.commit();
    cache.add(inserted);
    m_readCache = std::move(cache);
    if (!m_index.isLoaded()) {
        noteSaved(qint64(inserted.size()));
        return;
    }
    try {
        indexInserted(rowids, inserted);
    } catch (...) {
        dropIndex(); // committed: the next search reloads
        return;
    }
    afterWrite(lastSeq, qint64(inserted.size()));
}

void SqliteStorage::update(const MemoryRecord &record)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ensureWritable();
    checkRecord(record);
    Transaction t(*this);
    const std::optional<Row> old = rowById(record.id, false);
    if (!old || !readable(*old))
        throw Error(ErrorKind::NotFound, QStringLiteral("there is no record with id %1 in the store %2 to update").arg(record.id, m_location));
    if (!record.embedding.empty()) {
        checkDimension(int(record.embedding.size()), QStringLiteral("the embedding of record %1").arg(record.id));
        claimDimension(int(record.embedding.size()));
    }
    Statement st(*this, "UPDATE records SET content = ?, scope = ?, categories = ?, importance = ?, source = ?, private = ?, "
                        "metadata = ?, created_at = ?, updated_at = ?, last_accessed = max(coalesce(last_accessed, 0), ?), "
                        "access_count = max(access_count, ?), content_hash = ?, "
                        "embedding = coalesce(?, embedding) WHERE rid = ?"); // a touch() in between is kept
    const qint64 hash = contentHash(record.content);
    const bool contentChanged = record.content != old->record.content;
    if (contentChanged)
        removeContentHash(old->rowid);
    bindFields(st, 1, record, hash).bind(14, old->rowid);
    st.run(QStringLiteral("updating record %1").arg(record.id));
    if (contentChanged) {
        addContentHash(hash, old->rowid);
        Statement fts(*this, "UPDATE records_fts SET content = ? WHERE rowid = ?");
        fts.bindText(1, record.content).bind(2, old->rowid).run(QStringLiteral("indexing record %1").arg(record.id));
        keywordIndexChanged(old->rowid);
    }
    insertHistory(record.id, HistoryEntry::Event::Update, &old->record, &record, nowUtc().toMSecsSinceEpoch());
    const qint64 lastSeq = currentSeq();
    t.commit();
    if (!m_index.isLoaded())
        return;
    try {
        indexPut(old->rowid, record);
    } catch (...) {
        dropIndex();
        return;
    }
    afterWrite(lastSeq, 1);
}

int SqliteStorage::deleteRows(const std::vector<Row> &rows)
{
    const qint64 at = nowUtc().toMSecsSinceEpoch();
    for (const Row &row : rows) {
        removeContentHash(row.rowid);
        Statement st(*this, "DELETE FROM records WHERE rid = ?");
        st.bind(1, row.rowid).run(QStringLiteral("deleting record %1").arg(row.record.id));
        Statement fts(*this, "DELETE FROM records_fts WHERE rowid = ?");
        fts.bind(1, row.rowid).run(QStringLiteral("unindexing record %1").arg(row.record.id));
        keywordIndexChanged(row.rowid);
        insertHistory(row.record.id, HistoryEntry::Event::Delete, &row.record, nullptr, at);
    }
    return int(rows.size());
}

int SqliteStorage::remove(const RecordFilter &requested)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    return removeLocked(filter);
}

int SqliteStorage::removeLocked(const RecordFilter &filter)
{
    ensureOpen();
    ensureWritable();
    Transaction t(*this);
    const std::vector<Row> rows = selectRows(filter, false, true); // a damaged record can be deleted
    const int n = deleteRows(rows);
    const qint64 lastSeq = currentSeq();
    t.commit();
    if (m_index.isLoaded() && n > 0) {
        for (const Row &row : rows)
            indexRemove(row.rowid);
        afterWrite(lastSeq, n);
    }
    return n;
}

int SqliteStorage::reset(const QString &scopePrefix)
{
    const QString prefix = ScopePath::normalize(scopePrefix);
    QMutexLocker lock(&m_mutex);
    if (prefix != QLatin1String("/")) {
        RecordFilter f; // a subtree: deleted like remove(), with history
        f.scopes = {prefix};
        return removeLocked(f);
    }
    ensureOpen();
    ensureWritable();
    Transaction t(*this);
    int n = 0;
    {
        Statement st(*this, "SELECT count(*) FROM records");
        st.step(QStringLiteral("counting records"));
        n = int(st.int64(0));
    }
    exec("DELETE FROM records", QStringLiteral("deleting every record"));
    exec("DELETE FROM records_fts", QStringLiteral("clearing the keyword index"));
    keywordIndexChanged(-1);
    exec("DELETE FROM content_hashes", QStringLiteral("clearing the content index"));
    exec("DELETE FROM content_hashes_recent", QStringLiteral("clearing the content index"));
    exec("DELETE FROM history", QStringLiteral("deleting the history"));
    exec("DELETE FROM state", QStringLiteral("deleting the stored state"));
    exec("DELETE FROM meta WHERE key IN ('embedder_id', 'dimension')", QStringLiteral("clearing the embedder binding"));
    // The history an index file would catch up from is gone: a new generation makes such files stale.
    const qint64 generation = currentGeneration() + 1;
    {
        Statement st(*this, "INSERT INTO meta(key, value) VALUES ('reset_generation', ?) "
                            "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
        st.bindText(1, QString::number(generation)).run(QStringLiteral("recording the reset"));
    }
    const qint64 seq = currentSeq();
    t.commit();
    m_binding.reset();
    m_sessionBinding.reset();
    m_index.reset(0);
    m_termCounts.clear();
    m_indexGeneration = generation;
    m_indexSeq = seq;
    m_unsaved = 0;
    if (!indexFilePath().isEmpty())
        QFile::remove(indexFilePath());
    return n;
}

void SqliteStorage::restore(const MemoryRecord &record)
{
    QMutexLocker lock(&m_mutex);
    saveLocked(std::span<const MemoryRecord>(&record, 1));
}

std::vector<ScoredRecord> SqliteStorage::search(const Embedding &query, const RecordFilter &requested, int limit,
                                                VectorSearchAnswer *answer)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (query.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
    if (limit <= 0)
        return {};
    ReadSnapshot snapshot(*this); // one read transaction for the index's catch-up and every row
    refreshIfChanged();
    if (!prepareIndex(query))
        return {};
    const bool post = needsPostFilter(filter);
    std::vector<qint64> rows;
    if (!filter.ids.isEmpty())
        rows = rowidsForIds(filter.ids);
    const std::vector<VectorIndex::Hit> hits =
        searchIndex(query, filter, post ? -1 : limit, filter.ids.isEmpty() ? nullptr : &rows, VectorIndex::Mode::Auto, answer);
    std::vector<ScoredRecord> out;
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    // The rows are read a chunk of hits at a time, each chunk in one statement; a post-filtered search
    // reads on until it has `limit` records.
    const size_t chunk = size_t(std::max(limit, 32));
    for (size_t first = 0; first < hits.size() && int(out.size()) < limit; first += chunk) {
        const size_t last = std::min(hits.size(), first + chunk);
        std::vector<qint64> ids;
        for (size_t i = first; i < last; ++i)
            ids.push_back(hits[i].rowid);
        std::unordered_map<qint64, Row> rows = rowsByRowids(ids);
        for (size_t i = first; i < last && int(out.size()) < limit; ++i) {
            auto it = rows.find(hits[i].rowid);
            // The record itself is the final judge: the index never widens what the filter selects.
            if (it == rows.end() || !filter.matches(it->second.record, conditions))
                continue;
            out.push_back({std::move(it->second.record), hits[i].score});
        }
    }
    return out;
}

// Loads or brings up to date the index for a search with `query`; false when there is nothing to search.
bool SqliteStorage::prepareIndex(const Embedding &query)
{
    const auto b = effectiveBinding();
    if (!b)
        return false; // nothing was ever embedded into this store
    checkDimension(int(query.size()), QStringLiteral("the query embedding"));
    if (!m_index.isLoaded())
        loadIndex();
    promoteIfLarge();
    if (m_build)
        ++m_stats.exactWhileBuilding;
    return m_index.dimension() == int(query.size()); // else a read-only session binding on a store without vectors
}

std::vector<VectorIndex::Hit> SqliteStorage::nearest(const Embedding &query, const RecordFilter &requested, int limit,
                                                     VectorIndex::Mode mode)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (query.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
    if (limit == 0)
        return {};
    refreshIfChanged();
    if (!prepareIndex(query))
        return {};
    std::vector<qint64> rows;
    if (!filter.ids.isEmpty())
        rows = rowidsForIds(filter.ids);
    return searchIndex(query, filter, limit, filter.ids.isEmpty() ? nullptr : &rows, mode);
}

std::vector<VectorIndex::Hit> SqliteStorage::searchIndex(const Embedding &query, const RecordFilter &filter, int limit,
                                                         const std::vector<qint64> *rows, VectorIndex::Mode mode,
                                                         VectorSearchAnswer *answer)
{
    bool walked = false;
    std::vector<VectorIndex::Hit> hits = m_index.search(query.data(), filter, limit, rows, mode, &walked);
    VectorSearchAnswer a = m_index.answerOf(walked, m_build != nullptr);
    m_stats.lastSearch = a.detail;
    if (answer)
        *answer = std::move(a);
    return hits;
}

SqliteStorage::IndexStats SqliteStorage::indexStats()
{
    QMutexLocker lock(&m_mutex);
    IndexStats s = m_stats;
    s.loaded = m_index.isLoaded();
    s.approximate = m_index.isAnn();
    s.vectors = m_index.isLoaded() ? m_index.size() : 0;
    s.deletedNodes = m_index.deletedNodes();
    s.building = m_build != nullptr;
    s.seq = m_indexSeq;
    s.checkpoints = m_checkpointer ? m_checkpointer->background() : 0;
    s.inlineCheckpoints = m_checkpointer ? m_checkpointer->inlined() : 0;
    return s;
}

void SqliteStorage::waitForIndex()
{
    QMutexLocker lock(&m_mutex);
    awaitBuild();
}

void SqliteStorage::awaitBuild()
{
    for (int round = 0; m_build && round < 3; ++round) {
        m_build->wait(); // it never takes m_mutex
        if (!finishBuild() && !m_closed)
            promoteIfLarge(); // built again from the flat index (too many writes came meanwhile)
    }
}

QString SqliteStorage::indexFilePath() const
{
    if (m_location == QLatin1String(":memory:"))
        return QString();
    return m_location + QStringLiteral(".hnsw");
}

void SqliteStorage::flushIndex()
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    saveIndexFile(true);
}

SqliteStorage::KeywordQuery SqliteStorage::selectiveMatch(const QList<QByteArray> &terms, QList<QByteArray> *keptTerms)
{
    // A term found in the content of more than `cap` records tells little (its BM25 weight is low) and
    // would make the query score and sort a large part of the store, so it is left out (unless it is
    // about as common as the query's rarest term under the cap, below). Counting stops
    // past the largest cap. (Contexts are not counted: in a conversation they repeat the neighbours'
    // content.)
    qint64 records = 0;
    {
        Statement st(*this, "SELECT coalesce(max(rid), 0) FROM records");
        if (st.step(QStringLiteral("estimating the store's size")))
            records = st.int64(0);
    }
    const qint64 cap = std::clamp<qint64>(records / 10, kKeywordMinCap, kKeywordMaxCap);
    // Counts are a judgement of commonness, not part of any result: those of a store about the size
    // it had when they were taken are good enough, and save a scan of each term per query.
    if (records < m_termCountsRecords || records > m_termCountsRecords + m_termCountsRecords / 20
        || m_termCounts.size() > 4096) {
        m_termCounts.clear();
        m_termCountsRecords = records;
    }
    QList<QPair<qint64, QByteArray>> counted; // (records holding the term, the term)
    for (const QByteArray &term : terms) {
        auto known = m_termCounts.constFind(term);
        if (known == m_termCounts.constEnd()) {
            Statement st(*this, "SELECT count(*) FROM (SELECT rowid FROM records_fts WHERE records_fts MATCH ? LIMIT ?)");
            st.bindBytes(1, "content : " + term).bind(2, kKeywordMaxCap + 1);
            known = m_termCounts.insert(term, st.step(QStringLiteral("weighing a search term")) ? st.int64(0) : 0);
        }
        counted.append({*known, term});
    }
    // A term over the cap stays when it is about as common as the rarest term under it (at most twice
    // as common): a cap is a line, and two words on either side of it tell about as much.
    qint64 rarest = -1;
    for (const auto &c : std::as_const(counted))
        if (c.first <= cap && (rarest < 0 || c.first < rarest))
            rarest = c.first;
    QList<QPair<qint64, QByteArray>> kept;
    KeywordQuery query;
    for (const auto &c : std::as_const(counted)) {
        if (c.first <= cap || (rarest >= 0 && c.first <= 2 * rarest && c.first <= kKeywordMaxCap))
            kept.append(c);
        else // still part of what was asked: its (small) idf weighs in the evidence's scale
            query.leftOutIdf += KeywordEvidence::idf(records, c.first);
    }
    QList<QByteArray> &all = *keptTerms;
    for (const auto &k : std::as_const(kept))
        all.append(k.second);
    query.match = all.join(" OR ");
    const QByteArray gate = keywordGate(kept, m_options.keywordRowBudget);
    if (!gate.isEmpty()) {
        query.gatePhrases = int(gate.count('"') / 2);
        query.match = "(" + gate + ") AND (" + query.match + ")";
    }
    return query;
}

QByteArray SqliteStorage::keywordGate(QList<QPair<qint64, QByteArray>> terms, int budget)
{
    qint64 total = 0;
    for (const auto &t : std::as_const(terms))
        total += t.first;
    if (budget <= 0 || total <= budget || terms.size() < 2)
        return QByteArray();
    std::stable_sort(terms.begin(), terms.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    // The rarest terms alone while their records fit the budget (at least the rarest)...
    QList<QByteArray> gate;
    qsizetype rare = 0;
    for (qint64 used = 0; rare < terms.size() && (rare == 0 || used + terms[rare].first <= budget); ++rare) {
        used += terms[rare].first;
        gate.append(terms[rare].second);
    }
    // ...and the others in pairs: a record holding two of them is a strong match; one holding a single
    // common term and none of the rare ones is the weakest kind of match, and is not scored.
    const qsizetype last = std::min(terms.size(), rare + kKeywordPairedTerms);
    for (qsizetype i = rare; i < last; ++i)
        for (qsizetype j = i + 1; j < last; ++j)
            gate.append("(" + terms[i].second + " AND " + terms[j].second + ")");
    return gate.join(" OR ");
}

std::optional<SqliteStorage::KeywordQuery> SqliteStorage::keywordQuery(const QString &text, double contextWeight)
{
    if (!(contextWeight >= 0))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the weight of the keyword context must be 0 or more (got %1)").arg(contextWeight));
    QList<QByteArray> kept;
    KeywordQuery query = selectiveMatch(matchTerms(text), &kept);
    if (query.match.isEmpty())
        return std::nullopt;
    // A store before schema 3 (read-only, not upgraded) has no context column.
    const bool context = contextWeight > 0 && m_version >= 3;
    if (!context)
        query.match = "content : (" + query.match + ")";
    query.contextWeight = context ? contextWeight : 0.0;
    // The counted phrases are the kept terms, in order, after the gate's: their rows as the query's
    // column filter sees them, counted once until the keyword index changes.
    for (const QByteArray &term : std::as_const(kept)) {
        const qint64 hits = phraseHits(context ? term : "content : " + term);
        query.hits.append(reinterpret_cast<const char *>(&hits), sizeof hits);
    }
    m_tokenLengths.loadOnce(m_db);
    return query;
}

qint64 SqliteStorage::phraseHits(const QByteArray &match)
{
    auto known = m_phraseHits.constFind(match);
    if (known != m_phraseHits.constEnd())
        return *known;
    if (m_phraseHits.size() >= 4096)
        m_phraseHits.clear();
    Statement st(*this, "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?");
    st.bindBytes(1, match);
    const qint64 hits = st.step(QStringLiteral("counting a search term")) ? st.int64(0) : 0;
    m_phraseHits.insert(match, hits);
    return hits;
}

void SqliteStorage::keywordIndexChanged(qint64 rowid)
{
    m_phraseHits.clear();
    if (rowid < 0)
        m_tokenLengths.forgetAll();
    else
        m_tokenLengths.forget(rowid);
}

void SqliteStorage::runKeywordSearch(const QString &text, const RecordFilter &filter, int limit, double contextWeight,
                                     const QByteArray &columns, const std::function<bool(sqlite3_stmt *, double)> &row)
{
    const std::optional<KeywordQuery> query = keywordQuery(text, contextWeight);
    if (!query)
        return;
    const Where w = where(filter);
    const bool post = needsPostFilter(filter);
    Statement st(*this, QByteArray("SELECT ") + columns
                            + ", mneme_keyword(records_fts, ?, ?, ?, ?) AS relevance "
                              "FROM records_fts JOIN records r ON r.rid = records_fts.rowid "
                              "WHERE records_fts MATCH ? AND ("
                            + w.sql + ") ORDER BY relevance DESC, r.rid LIMIT ?");
    st.bindDouble(1, query->contextWeight).bindDouble(2, query->leftOutIdf).bind(3, query->gatePhrases);
    st.bindBlob(4, query->hits).bindBytes(5, query->match);
    st.bindAll(w.args, 6);
    st.bind(int(w.args.size()) + 6, post ? -1 : limit);
    const int relevanceColumn = sqlite3_column_count(st.get()) - 1;
    while (st.step(QStringLiteral("searching the full-text index")))
        if (!row(st.get(), std::min(1.0, sqlite3_column_double(st.get(), relevanceColumn))))
            break;
}

std::vector<ScoredRecord> SqliteStorage::keywordSearch(const QString &text, const RecordFilter &requested, int limit,
                                                       double contextWeight)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (limit <= 0)
        return {};
    ReadSnapshot snapshot(*this); // one read transaction for the term counts and the search
    refreshIfChanged();
    std::vector<ScoredRecord> out;
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    runKeywordSearch(text, filter, limit, contextWeight, kRecordColumns, [&](sqlite3_stmt *st, double relevance) {
        Row row = readRow(st, false);
        if (readable(row) && filter.matches(row.record, conditions))
            out.push_back({std::move(row.record), relevance});
        return int(out.size()) < limit;
    });
    return out;
}

std::optional<std::vector<SearchHit>> SqliteStorage::searchHits(const Embedding &query, const RecordFilter &requested, int limit,
                                                                VectorSearchAnswer *answer)
{
    const RecordFilter filter = normalized(requested);
    if (needsPostFilter(filter))
        return std::nullopt; // metadata is judged on the records
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (query.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding"));
    std::vector<SearchHit> out;
    if (limit <= 0)
        return out;
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    if (!prepareIndex(query))
        return out;
    std::vector<qint64> rows;
    if (!filter.ids.isEmpty())
        rows = rowidsForIds(filter.ids);
    for (const VectorIndex::Hit &h :
         searchIndex(query, filter, limit, filter.ids.isEmpty() ? nullptr : &rows, VectorIndex::Mode::Auto, answer)) {
        const std::optional<VectorIndex::RankFields> f = m_index.rankFields(h.rowid);
        if (!f)
            continue; // cannot happen: the index found it
        out.push_back(SearchHit{h.rowid, h.score, h.score, f->importance,
                                f->hasCreated ? QDateTime::fromMSecsSinceEpoch(f->createdMs, Qt::UTC) : QDateTime()});
    }
    return out;
}

std::optional<std::vector<SearchHit>> SqliteStorage::keywordHits(const QString &text, const Embedding &query,
                                                                 const RecordFilter &requested, int limit, double contextWeight)
{
    const RecordFilter filter = normalized(requested);
    if (needsPostFilter(filter))
        return std::nullopt;
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    std::vector<SearchHit> out;
    if (limit <= 0)
        return out;
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    const bool vectors = !query.empty() && prepareIndex(query);
    const std::optional<KeywordQuery> words = keywordQuery(text, contextWeight);
    if (!words)
        return out;
    // The matches are scored and ordered in the full-text index alone, then walked best first: the
    // vector index judges the filter and gives the ranking fields of the records it holds (no read of
    // the records table, whose rows carry the embeddings), the records table those it does not. A
    // filter the index judges (a scope, a source...) also leaves out the matches it rejects before they
    // are scored: a search within 2 % of the store scores about 2 % of the matches.
    const VectorIndex::Judge judge = vectors ? m_index.judgeFor(filter) : VectorIndex::Judge();
    const bool prefilter = vectors && judge.selective();
    Statement st(*this, QByteArray("SELECT rowid, mneme_keyword(records_fts, ?, ?, ?, ?) AS relevance FROM records_fts "
                                   "WHERE records_fts MATCH ?")
                            + (prefilter ? " AND mneme_judged(rowid)" : "") + " ORDER BY relevance DESC, rowid");
    m_keywordJudge = prefilter ? &judge : nullptr;
    const auto stopJudging = qScopeGuard([this] { m_keywordJudge = nullptr; });
    st.bindDouble(1, words->contextWeight).bindDouble(2, words->leftOutIdf).bind(3, words->gatePhrases);
    st.bindBlob(4, words->hits).bindBytes(5, words->match);
    const Where w = where(filter);
    std::optional<Statement> record;
    std::unordered_set<qint64> onlyRows;
    if (!filter.ids.isEmpty())
        for (qint64 r : rowidsForIds(filter.ids))
            onlyRows.insert(r);
    std::vector<std::pair<qint64, double>> batch;
    auto take = [&](qint64 rowid, double relevance, double importance, const QDateTime &createdAt) {
        SearchHit h;
        h.key = rowid;
        h.score = relevance;
        h.importance = importance;
        h.createdAt = createdAt;
        if (vectors)
            h.cosine = m_index.similarity(query.data(), rowid).value_or(0.0);
        out.push_back(std::move(h));
    };
    auto judgeBatch = [&] {
        std::vector<qint64> rowids;
        for (const auto &[rowid, relevance] : batch)
            rowids.push_back(rowid);
        const std::vector<VectorIndex::Judged> judged =
            vectors ? m_index.judge(filter, rowids) : std::vector<VectorIndex::Judged>(rowids.size());
        for (std::size_t i = 0; i < batch.size() && int(out.size()) < limit; ++i) {
            const auto [rowid, relevance] = batch[i];
            if (!filter.ids.isEmpty() && !onlyRows.count(rowid))
                continue;
            if (judged[i].verdict == VectorIndex::Verdict::Selected) {
                const VectorIndex::RankFields &f = judged[i].fields;
                take(rowid, relevance, f.importance,
                     f.hasCreated ? QDateTime::fromMSecsSinceEpoch(f.createdMs, Qt::UTC) : QDateTime());
            } else if (judged[i].verdict == VectorIndex::Verdict::Unknown) {
                if (!record) {
                    record.emplace(*this, "SELECT r.importance, r.created_at FROM records r WHERE r.rid = ? AND (" + w.sql + ")");
                    record->bindAll(w.args, 2);
                }
                sqlite3_reset(record->get());
                record->bind(1, rowid);
                if (record->step(QStringLiteral("reading a keyword match")))
                    take(rowid, relevance, sqlite3_column_double(record->get(), 0),
                         sqlite3_column_type(record->get(), 1) == SQLITE_NULL
                             ? QDateTime()
                             : QDateTime::fromMSecsSinceEpoch(sqlite3_column_int64(record->get(), 1), Qt::UTC));
            }
        }
        batch.clear();
    };
    // Batches grow with the rows walked: a filter that selects few records is judged in larger ones.
    std::size_t batchSize = std::size_t(limit);
    while (int(out.size()) < limit && st.step(QStringLiteral("searching the full-text index"))) {
        batch.emplace_back(sqlite3_column_int64(st.get(), 0), std::min(1.0, sqlite3_column_double(st.get(), 1)));
        if (batch.size() >= batchSize) {
            judgeBatch();
            batchSize *= 2;
        }
    }
    if (int(out.size()) < limit)
        judgeBatch();
    return out;
}

std::vector<std::optional<MemoryRecord>> SqliteStorage::hitRecords(const std::vector<qint64> &keys)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    std::vector<std::optional<MemoryRecord>> out(keys.size());
    if (keys.empty())
        return out;
    std::unordered_map<qint64, Row> rows = rowsByRowids(keys);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        auto it = rows.find(keys[i]);
        if (it != rows.end())
            out[i] = std::move(it->second.record);
    }
    return out;
}

std::optional<MemoryRecord> SqliteStorage::get(const QString &id, bool withEmbedding)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();
    std::optional<Row> row = rowById(id, withEmbedding);
    if (!row || !readable(*row))
        return std::nullopt;
    return std::move(row->record);
}

std::vector<MemoryRecord> SqliteStorage::list(const RecordFilter &requested, int limit, int offset)
{
    return listOrdered(requested, RecordOrder(), limit, offset);
}

std::vector<MemoryRecord> SqliteStorage::listOrdered(const RecordFilter &requested, const RecordOrder &order, int limit,
                                                     int offset)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (limit == 0)
        return {};
    offset = std::max(offset, 0);
    refreshIfChanged();
    const Where w = where(filter);
    const bool post = needsPostFilter(filter);
    Statement st(*this, QByteArray("SELECT ") + kRecordColumns + " FROM records r WHERE " + w.sql
                            + " ORDER BY " + orderColumn(order.field) + (order.descending ? " DESC" : " ASC")
                            + ", r.id ASC LIMIT ? OFFSET ?");
    st.bindAll(w.args);
    const int n = int(w.args.size());
    st.bind(n + 1, post || limit < 0 ? -1 : limit);
    st.bind(n + 2, post ? 0 : offset);
    std::vector<MemoryRecord> out;
    int skipped = 0;
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    while (st.step(QStringLiteral("listing records"))) {
        Row row = readRow(st.get(), false);
        if (!readable(row) || !filter.matches(row.record, conditions))
            continue;
        if (post && skipped < offset) {
            ++skipped;
            continue;
        }
        out.push_back(std::move(row.record));
        if (limit > 0 && int(out.size()) >= limit)
            break;
    }
    return out;
}

std::optional<MemoryRecord> SqliteStorage::findExact(const QString &content, const QString &scope, const QString &source,
                                                     bool isPrivate)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();
    return findExactLocked(content, &scope, source, isPrivate, contentHash(content));
}

std::vector<std::optional<MemoryRecord>> SqliteStorage::findExact(std::span<const MemoryRecord> records)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    std::vector<std::optional<MemoryRecord>> out;
    out.reserve(records.size());
    // Kept for the save that usually follows with the same contents: a hash costs more than the lookup.
    m_batchHashes.clear();
    m_batchDataVersion = m_dataVersion;
    m_batchCommits = m_commits;
    for (const MemoryRecord &r : records) {
        const qint64 hash = contentHash(r.content);
        m_batchHashes.insert(r.content, hash);
        out.push_back(findExactLocked(r.content, &r.scope, r.source, r.isPrivate, hash, &r.metadata));
    }
    return out;
}

std::vector<std::optional<MemoryRecord>> SqliteStorage::findSameContent(std::span<const MemoryRecord> records,
                                                                        const QString &scopePrefix)
{
    const QString prefix = ScopePath::normalize(scopePrefix);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    std::vector<std::optional<MemoryRecord>> out;
    out.reserve(records.size());
    for (const MemoryRecord &r : records)
        out.push_back(findExactLocked(r.content, nullptr, r.source, r.isPrivate, hashOf(r.content), &r.metadata, prefix));
    return out;
}

std::optional<MemoryRecord> SqliteStorage::findExactLocked(const QString &content, const QString *scope,
                                                           const QString &source, bool isPrivate, qint64 hash,
                                                           const Json *identityOf, const QString &scopePrefix)
{
    // The first (lowest rid) identical record (of the same identities, with `identityOf`). Each lookup table is probed with its own statement,
    // ordered by the table's rid, which its key (hash, rid) yields in order: one statement over both
    // tables, or ordering by r.rid, would build a temporary B-tree on every call. A read-only
    // connection may read a store from before v4, which has the index on records.content_hash instead.
    // Without a scope, "r.scope = ?3" becomes "?3 IS NULL" (true) and the prefix is checked on the rows.
    static const QByteArray kMatch = " AND r.content = ?2 AND (r.scope = ?3 OR ?3 IS NULL) AND r.source = ?4 AND r.private = ?5";
    static const QByteArray kByColumn =
        QByteArray("SELECT ") + kRecordColumns + " FROM records r WHERE r.content_hash = ?1" + kMatch + " ORDER BY r.rid";
    static const QByteArray kByTable[2] = {
        QByteArray("SELECT ") + kRecordColumns + " FROM content_hashes h CROSS JOIN records r ON r.rid = h.rid WHERE h.hash = ?1"
            + kMatch + " ORDER BY h.rid",
        QByteArray("SELECT ") + kRecordColumns + " FROM content_hashes_recent h CROSS JOIN records r ON r.rid = h.rid "
                                                 "WHERE h.hash = ?1"
            + kMatch + " ORDER BY h.rid",
    };
    const std::array<QString, 3> identity = identityOf ? VectorIndex::identityOf(*identityOf) : std::array<QString, 3>{};
    const auto firstIn = [&](const QByteArray &sql) -> std::optional<Row> {
        Statement st(*this, sql);
        st.bind(1, hash).bindText(2, content).bindText(4, source).bind(5, isPrivate ? 1 : 0);
        if (scope)
            st.bindText(3, *scope);
        else
            st.bindNull(3);
        // Identical words of several identities are rare: the first rows are the ones read. A damaged
        // record is none to read, nor one to be identical to.
        while (st.step(QStringLiteral("looking for an identical record"))) {
            Row row = readRow(st.get(), false);
            if (readable(row) && (!identityOf || VectorIndex::identityOf(row.record.metadata) == identity)
                && (scope || ScopePath::contains(scopePrefix, row.record.scope)))
                return row;
        }
        return std::nullopt;
    };
    std::optional<Row> best = firstIn(m_version >= 4 ? kByTable[0] : kByColumn);
    if (m_version >= 4) {
        std::optional<Row> recent = firstIn(kByTable[1]);
        if (recent && (!best || recent->rowid < best->rowid))
            best = std::move(recent);
    }
    if (!best)
        return std::nullopt;
    return std::move(best->record);
}

int SqliteStorage::count(const RecordFilter &requested)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();
    if (needsPostFilter(filter))
        return int(selectRows(filter, false).size());
    const Where w = where(filter);
    Statement st(*this, "SELECT count(*) FROM records r WHERE " + w.sql);
    st.bindAll(w.args);
    st.step(QStringLiteral("counting records"));
    return int(st.int64(0));
}

ScopeInfo SqliteStorage::scopeInfo(const QString &scope, const RecordFilter &visible)
{
    const QString path = ScopePath::normalize(scope);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    ScopeInfo info;
    info.path = path;
    RecordFilter f = visible;
    f.scopes = {path};
    const Where w = where(f);
    {
        Statement st(*this, "SELECT count(*), min(r.created_at), max(r.created_at) FROM records r WHERE " + w.sql);
        st.bindAll(w.args);
        st.step(QStringLiteral("reading scope statistics"));
        info.recordCount = int(st.int64(0));
        if (!st.isNull(1))
            info.oldestRecord = QDateTime::fromMSecsSinceEpoch(st.int64(1), Qt::UTC);
        if (!st.isNull(2))
            info.newestRecord = QDateTime::fromMSecsSinceEpoch(st.int64(2), Qt::UTC);
    }
    if (info.recordCount == 0)
        return info;
    {
        Statement st(*this, "SELECT DISTINCT c.value FROM records r, json_each(" + kCategoriesOrNone + ") c WHERE " + w.sql);
        st.bindAll(w.args);
        while (st.step(QStringLiteral("reading scope categories")))
            info.categories << st.text(0);
        info.categories.sort();
    }
    info.childScopes = childScopesLocked(path, f);
    return info;
}

QStringList SqliteStorage::childScopes(const QString &parent, const RecordFilter &visible)
{
    const QString path = ScopePath::normalize(parent);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    if (std::optional<QStringList> kept = m_readCache.childScopes(path, visible))
        return *kept;
    const QStringList out = childScopesLocked(path, visible);
    m_readCache.keepChildScopes(path, visible, out);
    return out;
}

QStringList SqliteStorage::childScopesLocked(const QString &path, const RecordFilter &visible)
{
    QSet<QString> children;
    for (const QString &s : distinctScopesBelow(path, visible)) {
        const QString child = ScopePath::childToward(path, s);
        if (!child.isEmpty())
            children.insert(child);
    }
    QStringList out(children.begin(), children.end());
    out.sort();
    return out;
}


std::vector<MemoryRecord> SqliteStorage::scopeSamples(const RecordFilter &requested, int perScope)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (perScope <= 0)
        return {};
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    if (std::optional<std::vector<MemoryRecord>> kept = m_readCache.scopeSamples(filter, perScope))
        return std::move(*kept);
    std::vector<MemoryRecord> samples;
    // The distinct scopes (from the scope index), then each scope's newest records.
    const Where w = where(filter);
    const std::vector<QString> scopes = distinctScopes(filter);
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    const QByteArray sql = QByteArray("SELECT ") + kRecordColumns + ", r.embedding FROM records r WHERE r.scope = ? AND " + w.sql
                         + " ORDER BY r.rid DESC";
    for (const QString &scope : scopes) {
        Statement st(*this, sql);
        st.bindText(1, scope);
        st.bindAll(w.args, 2);
        int taken = 0;
        while (taken < perScope && st.step(QStringLiteral("reading records of a scope"))) {
            Row row = readRow(st.get(), true);
            if (readable(row) && !row.record.embedding.empty() && filter.matches(row.record, conditions)) {
                samples.push_back(std::move(row.record));
                ++taken;
            }
        }
    }
    return m_readCache.keepScopeSamples(filter, perScope, std::move(samples));
}

QMap<QString, int> SqliteStorage::categories(const RecordFilter &requested)
{
    const RecordFilter filter = normalized(requested);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();
    if (std::optional<QMap<QString, int>> kept = m_readCache.categories(filter))
        return std::move(*kept);
    QMap<QString, int> out = countCategories(filter);
    m_readCache.keepCategories(filter, out);
    return out;
}

QMap<QString, int> SqliteStorage::countCategories(const RecordFilter &filter)
{
    QMap<QString, int> out;
    // Conditions on the scope, the source and the privacy only: the counts' table answers.
    const bool byCounts = m_version >= 6 && filter.categories.isEmpty() && filter.ids.isEmpty() && !filter.createdBefore.isValid()
                       && !filter.createdAfter.isValid() && filter.contentContains.isEmpty()
                       && (!filter.metadata.is_object() || filter.metadata.empty());
    if (byCounts) {
        const Where w = where(filter); // the counts' columns are named as the records'
        Statement st(*this, "SELECT r.category, sum(r.n) FROM category_counts r WHERE " + w.sql
                                + " GROUP BY r.category HAVING sum(r.n) > 0");
        st.bindAll(w.args);
        while (st.step(QStringLiteral("counting categories")))
            out.insert(st.text(0), int(st.int64(1)));
        return out;
    }
    if (needsPostFilter(filter)) {
        for (const Row &row : selectRows(filter, false)) {
            QStringList cats = row.record.categories;
            cats.removeDuplicates();
            for (const QString &c : std::as_const(cats))
                ++out[c];
        }
        return out;
    }
    const Where w = where(filter);
    Statement st(*this, "SELECT c.value, count(DISTINCT r.rid) FROM records r, json_each(" + kCategoriesOrNone + ") c WHERE " + w.sql
                            + " GROUP BY c.value");
    st.bindAll(w.args);
    while (st.step(QStringLiteral("counting categories")))
        out.insert(st.text(0), int(st.int64(1)));
    return out;
}

void SqliteStorage::touch(const QStringList &ids, const QDateTime &at)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ensureWritable();
    if (ids.isEmpty())
        return;
    const qint64 ms = (at.isValid() ? at : nowUtc()).toMSecsSinceEpoch();
    // Access statistics are a convenience: their commit is not synced (WAL with synchronous=NORMAL
    // stays consistent; a power loss may only forget the last accesses), so a recall that records
    // them does not wait for the disk.
    exec("PRAGMA synchronous = NORMAL", QStringLiteral("recording an access"));
    try {
        Transaction t(*this);
        for (const QString &id : ids) {
            Statement st(*this, "UPDATE records SET last_accessed = ?, access_count = access_count + 1 WHERE id = ?");
            st.bind(1, ms).bindText(2, id).run(QStringLiteral("recording an access"));
        }
        t.commit();
    } catch (...) {
        sqlite3_exec(m_db, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
        throw;
    }
    exec("PRAGMA synchronous = FULL", QStringLiteral("configuring durable writes"));
}

std::vector<HistoryEntry> SqliteStorage::history(const QString &recordId)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    refreshIfChanged();
    Statement st(*this, "SELECT seq, record_id, event, old_content, new_content, old_record, new_record, at "
                        "FROM history WHERE record_id = ? ORDER BY seq");
    st.bindText(1, recordId);
    std::vector<HistoryEntry> out;
    auto json = [&](int col) {
        if (st.isNull(col))
            return Json();
        Json j = parseJsonOrDiscarded(st.text(col).toStdString());
        return j.is_discarded() ? Json() : j;
    };
    while (st.step(QStringLiteral("reading the history"))) {
        HistoryEntry e;
        e.seq = st.int64(0);
        e.recordId = st.text(1);
        e.event = HistoryEntry::eventFromName(st.text(2));
        e.oldContent = st.text(3);
        e.newContent = st.text(4);
        e.oldRecord = json(5);
        e.newRecord = json(6);
        e.at = QDateTime::fromMSecsSinceEpoch(st.int64(7), Qt::UTC);
        out.push_back(std::move(e));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// State

bool SqliteStorage::hasStateTable()
{
    if (m_tables.contains(QLatin1String("state")))
        return true;
    // A read-only connection to an older store: another process may have upgraded it since the open.
    Statement st(*this, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'state'");
    if (!st.step(QStringLiteral("reading the schema")))
        return false;
    m_tables << QStringLiteral("state");
    return true;
}

std::optional<Json> SqliteStorage::readState(const QString &key)
{
    StateRequest::checkKey(key);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (!hasStateTable())
        return std::nullopt; // a store of schema 1, opened read-only: it has never held state
    Statement st(*this, "SELECT value FROM state WHERE key = ?");
    st.bindText(1, key);
    if (!st.step(QStringLiteral("reading the state \"%1\"").arg(key)))
        return std::nullopt;
    Json value = parseJsonOrDiscarded(st.text(0).toStdString());
    if (value.is_discarded())
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: the state \"%2\" is not valid JSON; delete it with a null value "
                                                       "or restore the store from a backup")
                                            .arg(m_location, key));
    return value;
}

void SqliteStorage::writeState(const QString &key, const Json &value)
{
    StateRequest::checkKey(key);
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ensureWritable();
    Transaction t(*this);
    if (value.is_null()) {
        Statement st(*this, "DELETE FROM state WHERE key = ?");
        st.bindText(1, key).run(QStringLiteral("deleting the state \"%1\"").arg(key));
    } else {
        Statement st(*this, "INSERT INTO state(key, value, updated_at) VALUES (?, ?, ?) "
                            "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at");
        st.bindText(1, key).bindBytes(2, jsonBytes(value)).bind(3, nowUtc().toMSecsSinceEpoch());
        st.run(QStringLiteral("saving the state \"%1\"").arg(key));
    }
    t.commit();
}

QStringList SqliteStorage::stateKeys(const QString &prefix)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    QStringList keys;
    if (!hasStateTable())
        return keys;
    // substr() compares characters exactly (LIKE would treat '%' and '_' in the prefix as wildcards).
    Statement st(*this, "SELECT key FROM state WHERE substr(key, 1, ?) = ? ORDER BY key");
    st.bind(1, qint64(prefix.toUcs4().size())).bindText(2, prefix); // SQLite counts code points
    while (st.step(QStringLiteral("listing the state")))
        keys << st.text(0);
    return keys;
}

// ---------------------------------------------------------------------------------------------
// Check and repair

std::vector<DamagedRecord> SqliteStorage::damagedRecords()
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    ReadSnapshot snapshot(*this);
    refreshIfChanged();
    return damagedLocked();
}

std::vector<DamagedRecord> SqliteStorage::damagedLocked()
{
    std::vector<DamagedRecord> out;
    std::vector<qint64> rowids;
    {
        Statement st(*this, QByteArray("SELECT ") + kRecordColumns + " FROM records r ORDER BY r.rid");
        while (st.step(QStringLiteral("reading every record"))) {
            Row row = readRow(st.get(), false);
            if (row.damage.isEmpty())
                continue;
            out.push_back(DamagedRecord{std::move(row.record), row.damage.join(QStringLiteral(", ")), row.raw});
            rowids.push_back(row.rowid);
        }
    }
    Statement st(*this, "SELECT embedding FROM records WHERE rid = ?");
    for (std::size_t i = 0; i < out.size(); ++i) {
        st.bind(1, rowids[i]);
        if (st.step(QStringLiteral("reading an embedding")) && sqlite3_column_type(st.get(), 0) == SQLITE_BLOB) {
            const int bytes = sqlite3_column_bytes(st.get(), 0);
            out[i].record.embedding.resize(std::size_t(bytes) / sizeof(float));
            if (!out[i].record.embedding.empty())
                std::memcpy(out[i].record.embedding.data(), sqlite3_column_blob(st.get(), 0), out[i].record.embedding.size() * sizeof(float));
        }
        sqlite3_reset(st.get());
    }
    return out;
}

QString SqliteStorage::keywordIndexProblem()
{
    try {
        if (!m_readOnly) // FTS5's own check is an INSERT command, which a read-only connection refuses
            exec("INSERT INTO records_fts(records_fts) VALUES('integrity-check')", QStringLiteral("checking the keyword index"));
    } catch (const Error &e) {
        return QStringLiteral("the keyword index does not pass its own check (%1)").arg(e.message());
    }
    const auto count = [&](const char *sql) {
        Statement st(*this, sql);
        st.step(QStringLiteral("checking the keyword index"));
        return st.int64(0);
    };
    const qint64 missing = count("SELECT count(*) FROM records r WHERE NOT EXISTS (SELECT 1 FROM records_fts f WHERE f.rowid = r.rid)");
    const qint64 orphans = count("SELECT count(*) FROM records_fts f WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.rid = f.rowid)");
    const qint64 stale = count("SELECT count(*) FROM records r JOIN records_fts f ON f.rowid = r.rid WHERE f.content IS NOT r.content");
    if (missing + orphans + stale == 0)
        return QString();
    return QStringLiteral("the keyword index is out of step with the records (%1 records missing from it, %2 entries of "
                          "records that are gone, %3 with other content)")
        .arg(missing)
        .arg(orphans)
        .arg(stale);
}

void SqliteStorage::rebuildKeywordIndex()
{
    // The keyword contexts live in the index only: those it can still give are kept.
    exec("CREATE TEMP TABLE IF NOT EXISTS kept_context(rid INTEGER PRIMARY KEY, context TEXT NOT NULL)",
         QStringLiteral("rebuilding the keyword index"));
    exec("DELETE FROM kept_context", QStringLiteral("rebuilding the keyword index"));
    if (m_version >= 3)
        sqlite3_exec(m_db, "INSERT OR IGNORE INTO kept_context(rid, context) SELECT rowid, context FROM records_fts WHERE context <> ''",
                     nullptr, nullptr, nullptr);
    Transaction t(*this);
    exec("DROP TABLE records_fts", QStringLiteral("rebuilding the keyword index"));
    exec(m_version >= 3 ? "CREATE VIRTUAL TABLE records_fts USING fts5(content, context, tokenize = 'porter unicode61 remove_diacritics 2')"
                        : "CREATE VIRTUAL TABLE records_fts USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')",
         QStringLiteral("rebuilding the keyword index"));
    exec(m_version >= 3 ? "INSERT INTO records_fts(rowid, content, context) SELECT r.rid, r.content, coalesce(k.context, '') "
                          "FROM records r LEFT JOIN kept_context k ON k.rid = r.rid ORDER BY r.rid"
                        : "INSERT INTO records_fts(rowid, content) SELECT rid, content FROM records ORDER BY rid",
         QStringLiteral("rebuilding the keyword index"));
    t.commit();
    exec("DROP TABLE kept_context", QStringLiteral("rebuilding the keyword index"));
    // Cached statements on the old table are gone with it.
    for (sqlite3_stmt *st : std::as_const(m_statements))
        sqlite3_finalize(st);
    m_statements.clear();
    m_termCounts.clear();
    keywordIndexChanged(-1);
}

QString SqliteStorage::contentHashProblem()
{
    qint64 stale = 0;
    {
        Statement st(*this, "SELECT content, content_hash FROM records");
        while (st.step(QStringLiteral("checking the content hashes")))
            if (contentHash(st.text(0)) != st.int64(1))
                ++stale;
    }
    if (m_version < 4)
        return stale ? QStringLiteral("%1 records have a wrong content hash").arg(stale) : QString();
    const auto count = [&](const char *sql) {
        Statement st(*this, sql);
        st.step(QStringLiteral("checking the content lookup"));
        return st.int64(0);
    };
    const qint64 missing = count("SELECT count(*) FROM records r WHERE NOT EXISTS (SELECT 1 FROM content_hashes h WHERE h.hash = "
                                 "r.content_hash AND h.rid = r.rid) AND NOT EXISTS (SELECT 1 FROM content_hashes_recent h WHERE "
                                 "h.hash = r.content_hash AND h.rid = r.rid)");
    const qint64 orphans = count("SELECT (SELECT count(*) FROM content_hashes h WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.rid "
                                 "= h.rid AND r.content_hash = h.hash)) + (SELECT count(*) FROM content_hashes_recent h WHERE NOT "
                                 "EXISTS (SELECT 1 FROM records r WHERE r.rid = h.rid AND r.content_hash = h.hash))");
    if (stale + missing + orphans == 0)
        return QString();
    return QStringLiteral("the lookup of identical records is out of step with the records (%1 wrong content hashes, %2 "
                          "records missing from it, %3 entries of records that are gone)")
        .arg(stale)
        .arg(missing)
        .arg(orphans);
}

void SqliteStorage::rebuildContentHashes()
{
    Transaction t(*this);
    std::vector<std::pair<qint64, qint64>> fixes; // rid, hash
    {
        Statement st(*this, "SELECT rid, content, content_hash FROM records");
        while (st.step(QStringLiteral("reading the contents"))) {
            const qint64 hash = contentHash(st.text(1));
            if (hash != st.int64(2))
                fixes.emplace_back(st.int64(0), hash);
        }
    }
    {
        Statement st(*this, "UPDATE records SET content_hash = ? WHERE rid = ?");
        for (const auto &[rid, hash] : fixes) {
            st.bind(1, hash).bind(2, rid).run(QStringLiteral("fixing a content hash"));
            sqlite3_reset(st.get());
        }
    }
    if (m_version >= 4) {
        exec("DELETE FROM content_hashes", QStringLiteral("rebuilding the content lookup"));
        exec("DELETE FROM content_hashes_recent", QStringLiteral("rebuilding the content lookup"));
        exec("INSERT INTO content_hashes(hash, rid) SELECT content_hash, rid FROM records ORDER BY content_hash, rid",
             QStringLiteral("rebuilding the content lookup"));
    }
    t.commit();
}

QString SqliteStorage::categoryCountsProblem()
{
    if (m_version < 6)
        return QString();
    // The keys whose count is wrong, missing from the table, or in it for no record.
    const QByteArray table = "SELECT scope, source, private, category, n FROM category_counts";
    Statement st(*this, "SELECT count(*) FROM (SELECT scope, source, private, category FROM (" + table + " EXCEPT " + kCountCategoriesSql
                            + ") UNION SELECT scope, source, private, category FROM (" + kCountCategoriesSql + " EXCEPT " + table + "))");
    st.step(QStringLiteral("checking the category counts"));
    const qint64 wrong = st.int64(0);
    return wrong == 0 ? QString()
                      : QStringLiteral("the category counts are out of step with the records (%1 of them wrong)").arg(wrong);
}

void SqliteStorage::rebuildCategoryCounts()
{
    Transaction t(*this);
    exec("DELETE FROM category_counts", QStringLiteral("rebuilding the category counts"));
    exec(QByteArray("INSERT INTO category_counts(scope, source, private, category, n) ") + kCountCategoriesSql,
         QStringLiteral("rebuilding the category counts"));
    t.commit();
}

QString SqliteStorage::indexFileProblem()
{
    const QString file = indexFilePath();
    if (file.isEmpty() || !QFileInfo::exists(file))
        return QString();
    const int dimension = m_binding ? m_binding->dimension : 0;
    VectorIndex probe;
    VectorIndex::Stamp stamp;
    QString error;
    if (dimension <= 0)
        error = QStringLiteral("the store holds no embeddings");
    else if (probe.load(file, dimension, &stamp, &error) && stamp.storeId != m_storeId)
        error = QStringLiteral("it was written for another store");
    if (error.isEmpty())
        return QString();
    return QStringLiteral("the vector index file %1 cannot be used (%2); it is rebuilt from the records when it is next needed")
        .arg(file, error);
}

StoreCheck SqliteStorage::check(bool repair)
{
    QMutexLocker lock(&m_mutex);
    ensureOpen();
    if (repair)
        ensureWritable();
    refreshIfChanged();
    if (repair)
        m_readCache.clear();
    StoreCheck report;
    {
        Statement st(*this, "PRAGMA integrity_check(20)");
        QStringList lines;
        while (st.step(QStringLiteral("checking the database file")))
            lines << st.text(0);
        if (lines != QStringList{QStringLiteral("ok")})
            report.problems << QStringLiteral("the database file is damaged (%1); restore it from a backup, or `mneme export "
                                              "--curator` what can be read and import it into a new store")
                                   .arg(lines.join(QStringLiteral("; ")).left(500));
    }
    report.damaged = damagedLocked();
    const auto derived = [&](const QString &problem, const QString &what, const std::function<void()> &rebuild) {
        if (problem.isEmpty())
            return;
        if (!repair) {
            report.problems << problem + QStringLiteral("; `mneme check --repair` rebuilds it");
            return;
        }
        try {
            rebuild();
            report.repaired << what;
        } catch (const Error &e) {
            report.problems << problem + QStringLiteral("; rebuilding it failed: ") + e.message();
        }
    };
    derived(keywordIndexProblem(), QStringLiteral("the keyword index, from the records"), [this] { rebuildKeywordIndex(); });
    derived(contentHashProblem(), QStringLiteral("the lookup of identical records, from the contents"), [this] { rebuildContentHashes(); });
    derived(categoryCountsProblem(), QStringLiteral("the category counts, from the records"), [this] { rebuildCategoryCounts(); });
    const QString indexFile = indexFileProblem();
    if (!indexFile.isEmpty() && !repair)
        report.problems << indexFile + QStringLiteral(" (`mneme check --repair` rebuilds it now)");
    if (repair && (!indexFile.isEmpty() || (m_index.isLoaded() && m_index.isAnn()))) {
        // The file is a cache of the records: removed, and written again by a build from the table.
        QFile::remove(indexFilePath());
        dropIndex();
        const int dimension = m_binding ? m_binding->dimension : 0;
        if (dimension > 0 && recordCount() >= std::max(1, m_options.annThreshold)) {
            loadIndex();
            awaitBuild(); // the file is written now, not by a build a close may stop
            saveIndexFile(true);
        }
        if (!indexFile.isEmpty())
            report.repaired << QStringLiteral("the vector index file, from the records");
    }
    graphLocked()->checkLocked(repair, report);
    return report;
}

GraphStore *SqliteStorage::graph()
{
    QMutexLocker lock(&m_mutex);
    return graphLocked();
}

SqliteGraphStore *SqliteStorage::graphLocked()
{
    if (!m_graph)
        m_graph = std::make_unique<SqliteGraphStore>(*this);
    return m_graph.get();
}

void SqliteStorage::close()
{
    QMutexLocker lock(&m_mutex);
    if (m_closed)
        return;
    saveIndexFile(true);
    for (sqlite3_stmt *st : std::as_const(m_statements))
        sqlite3_finalize(st);
    m_statements.clear();
    stopCheckpointer();
    const int rc = m_db ? sqlite3_close(m_db) : SQLITE_OK;
    if (rc != SQLITE_OK) {
        const QString msg = QString::fromUtf8(sqlite3_errmsg(m_db));
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        m_closed = true;
        dropIndex();
        throw Error(ErrorKind::Storage, QStringLiteral("closing the store %1 failed: %2").arg(m_location, msg));
    }
    m_db = nullptr;
    m_closed = true;
    dropIndex();
    m_readCache.clear();
}

// The operations of StorageBackend

StorageInfo SqliteStorage::info() const
{
    StorageInfo i;
    i.location = location();
    i.schemaVersion = schemaVersion();
    i.binding = embedderBinding();
    i.capabilities = StorageInfo::SearchHits | StorageInfo::AtomicDedup | StorageInfo::Check | StorageInfo::SharedWriters | StorageInfo::Graph;
    return i;
}

WriteResult SqliteStorage::write(const WriteRequest &request)
{
    WriteResult out;
    const auto one = [&]() -> const MemoryRecord & {
        if (request.records.size() != 1)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("an update or restore writes one record, not %1")
                                                        .arg(request.records.size()));
        return request.records.front();
    };
    switch (request.kind) {
    case WriteRequest::Kind::Insert:
        save(request.records);
        break;
    case WriteRequest::Kind::InsertUnlessIdentical:
        out.ids = saveUnlessIdentical(request.records);
        break;
    case WriteRequest::Kind::Update:
        update(one());
        break;
    case WriteRequest::Kind::Restore:
        restore(one());
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

SearchResult SqliteStorage::find(const SearchRequest &request)
{
    SearchResult out;
    const bool vector = request.kind == SearchRequest::Kind::Vector;
    if (request.output == SearchRequest::Output::Records) {
        out.records = vector ? search(request.vector, request.filter, request.limit, &out.answer)
                             : keywordSearch(request.text, request.filter, request.limit, request.contextWeight);
        return out;
    }
    std::optional<std::vector<SearchHit>> hits =
        vector ? searchHits(request.vector, request.filter, request.limit, &out.answer)
               : keywordHits(request.text, request.vector, request.filter, request.limit, request.contextWeight);
    if (hits)
        out.hits = std::move(*hits);
    else
        out.hitsDeclined = true;
    return out;
}

std::vector<std::optional<MemoryRecord>> SqliteStorage::read(const ReadRequest &request)
{
    if (!request.keys.empty())
        return hitRecords(request.keys);
    std::vector<std::optional<MemoryRecord>> out;
    out.reserve(request.ids.size());
    for (const QString &id : request.ids)
        out.push_back(get(id, request.withEmbedding));
    return out;
}

std::vector<MemoryRecord> SqliteStorage::browse(const ListRequest &request)
{
    return listOrdered(request.filter, request.order, request.limit, request.offset);
}

Aggregate SqliteStorage::aggregate(const AggregateRequest &request)
{
    Aggregate out;
    switch (request.kind) {
    case AggregateRequest::Kind::Count:
        out.count = count(request.filter);
        break;
    case AggregateRequest::Kind::ScopeInfo:
        out.scopeInfo = scopeInfo(request.scope, request.filter);
        break;
    case AggregateRequest::Kind::ChildScopes:
        out.scopes = childScopes(request.scope, request.filter);
        break;
    case AggregateRequest::Kind::Categories:
        out.categories = categories(request.filter);
        break;
    case AggregateRequest::Kind::ScopeSamples:
        out.samples = scopeSamples(request.filter, request.perScope);
        break;
    }
    return out;
}

std::vector<std::optional<MemoryRecord>> SqliteStorage::lookup(const LookupRequest &request)
{
    if (request.anyScopeBelow)
        return findSameContent(request.records, *request.anyScopeBelow);
    if (request.identities)
        return findExact(request.records);
    std::vector<std::optional<MemoryRecord>> out;
    out.reserve(request.records.size());
    for (const MemoryRecord &r : request.records)
        out.push_back(findExact(r.content, r.scope, r.source, r.isPrivate));
    return out;
}

StateResult SqliteStorage::state(const StateRequest &request)
{
    StateResult out;
    switch (request.kind) {
    case StateRequest::Kind::Read:
        out.value = readState(request.key);
        break;
    case StateRequest::Kind::Write:
        writeState(request.key, request.value);
        break;
    case StateRequest::Kind::Keys:
        out.keys = stateKeys(request.key);
        break;
    }
    return out;
}

StoreCheck SqliteStorage::inspect(InspectMode mode)
{
    if (mode == InspectMode::Damaged) {
        StoreCheck c;
        c.damaged = damagedRecords();
        return c;
    }
    return check(mode == InspectMode::Repair);
}

} // namespace mneme
