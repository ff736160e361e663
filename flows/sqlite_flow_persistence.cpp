#include <mneme/flows/sqlite_flow_persistence.h>

#include <mneme/core/error.h>
#include <mneme/core/version.h>
#include <mneme/memory/memory_config.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMutexLocker>
#include <QThread>
#include <QUrl>
#include <sqlite3.h>


namespace mneme {

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

CREATE TABLE flow_states(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    flow_uuid TEXT NOT NULL,
    method_name TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    state_json TEXT NOT NULL
);
CREATE INDEX flow_states_flow ON flow_states(flow_uuid, id);
)SQL"},
};

constexpr int kLatestSchema = int(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrations[kLatestSchema - 1].version == kLatestSchema);

constexpr char kStoreKind[] = "flow_states";

} // namespace

// A prepared statement, finalized when it goes out of scope.
class SqliteFlowPersistence::Statement
{
public:
    Statement(const SqliteFlowPersistence &store, const char *sql)
        : m_store(store)
    {
        const int rc = sqlite3_prepare_v2(store.m_db, sql, -1, &m_st, nullptr);
        if (rc != SQLITE_OK)
            store.fail(rc, QStringLiteral("preparing a query"));
    }
    ~Statement() { sqlite3_finalize(m_st); }
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    Statement &bind(int index, const QString &text)
    {
        const QByteArray bytes = text.toUtf8();
        check(sqlite3_bind_text(m_st, index, bytes.constData(), int(bytes.size()), SQLITE_TRANSIENT));
        return *this;
    }
    Statement &bind(int index, qint64 value)
    {
        check(sqlite3_bind_int64(m_st, index, value));
        return *this;
    }
    // True when a row is ready.
    bool step(const QString &doing)
    {
        const int rc = sqlite3_step(m_st);
        if (rc == SQLITE_ROW)
            return true;
        if (rc != SQLITE_DONE)
            m_store.fail(rc, doing);
        return false;
    }
    QString text(int column) const
    {
        const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_st, column));
        return p ? QString::fromUtf8(p, sqlite3_column_bytes(m_st, column)) : QString();
    }
    qint64 int64(int column) const { return sqlite3_column_int64(m_st, column); }

private:
    void check(int rc)
    {
        if (rc != SQLITE_OK)
            m_store.fail(rc, QStringLiteral("binding a value"));
    }

    const SqliteFlowPersistence &m_store;
    sqlite3_stmt *m_st = nullptr;
};

SqliteFlowPersistence::SqliteFlowPersistence(const QString &path)
    : SqliteFlowPersistence(Options{path})
{
}

SqliteFlowPersistence::SqliteFlowPersistence(const Options &options)
    : m_options(options)
{
    try {
        open();
    } catch (...) {
        if (m_db)
            sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw;
    }
}

SqliteFlowPersistence::~SqliteFlowPersistence()
{
    if (m_db)
        sqlite3_close_v2(m_db);
}

QString SqliteFlowPersistence::defaultPath()
{
    return QFileInfo(MemoryConfig::defaultStoragePath()).dir().filePath(QStringLiteral("flows.db"));
}

int SqliteFlowPersistence::latestSchemaVersion()
{
    return kLatestSchema;
}

void SqliteFlowPersistence::fail(int rc, const QString &doing) const
{
    const QString detail = m_db ? QString::fromUtf8(sqlite3_errmsg(m_db)) : QString::fromUtf8(sqlite3_errstr(rc));
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        throw Error(ErrorKind::Corrupt,
                    QStringLiteral("%1 is not a flow-state store or is damaged (%2 while %3); Mneme did not change it. Move it "
                                   "away or give the persistence another file")
                        .arg(m_location, detail, doing));
    case SQLITE_READONLY:
        throw Error(ErrorKind::ReadOnlyStore, QStringLiteral("the flow-state store %1 cannot be written (%2 while %3); check the "
                                                             "permissions of the file and its folder")
                                                  .arg(m_location, detail, doing));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        throw Error(ErrorKind::Storage, QStringLiteral("the flow-state store %1 stayed locked by another connection for more "
                                                       "than %2 ms while %3; retry, or raise busyTimeoutMs")
                                            .arg(m_location)
                                            .arg(m_options.busyTimeoutMs)
                                            .arg(doing));
    case SQLITE_FULL:
        throw Error(ErrorKind::Storage,
                    QStringLiteral("the disk holding %1 is full (while %2); free some space and retry").arg(m_location, doing));
    default:
        throw Error(ErrorKind::Storage, QStringLiteral("SQLite failed on %1 while %2: %3").arg(m_location, doing, detail));
    }
}

void SqliteFlowPersistence::exec(const char *sql, const QString &doing)
{
    char *err = nullptr;
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK)
        fail(rc, doing);
}

void SqliteFlowPersistence::open()
{
    if (m_options.path.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the flow-state store needs a path, such as %1").arg(defaultPath()));
    if (m_options.busyTimeoutMs < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("busyTimeoutMs of the flow-state store must not be negative"));
    const QFileInfo fi(m_options.path);
    m_location = fi.absoluteFilePath();
    if (fi.exists() && fi.isDir())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is a folder; give the flow-state store a file inside it, such as %1/flows.db").arg(m_location));
    if (!fi.exists() && !QDir().mkpath(fi.absolutePath()))
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("cannot create the folder %1 for the flow-state store; check its permissions or choose another path")
                        .arg(fi.absolutePath()));
    if ((fi.exists() && !fi.isWritable()) || !QFileInfo(fi.absolutePath()).isWritable())
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("the flow-state store %1 cannot be written by this user (the file or its folder); fix the "
                                   "permissions or choose another path")
                        .arg(m_location));

    // A file: URI, so that no character of the path is taken for a URI parameter.
    const QByteArray uri = "file:" + QUrl::toPercentEncoding(m_location, "/");
    const int rc = sqlite3_open_v2(uri.constData(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK)
        fail(rc, QStringLiteral("opening the file"));
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, m_options.busyTimeoutMs);

    QStringList tables;
    const int version = storedVersion(&tables);
    if (version > kLatestSchema)
        throw Error(ErrorKind::SchemaTooNew,
                    QStringLiteral("%1 was written by a newer Mneme (flow-state schema %2; this build reads up to %3): upgrade "
                                   "Mneme to use it. The file was not changed")
                        .arg(m_location)
                        .arg(version)
                        .arg(kLatestSchema));
    if (version < kLatestSchema)
        migrate();

    // Switching to WAL needs a moment alone with the file; another process opening it at the same
    // instant makes it busy, so retry within the busy timeout.
    QElapsedTimer timer;
    timer.start();
    for (;;) {
        char *err = nullptr;
        const int walRc = sqlite3_exec(m_db, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
        sqlite3_free(err);
        if (walRc == SQLITE_OK)
            break;
        if (((walRc & 0xff) != SQLITE_BUSY && (walRc & 0xff) != SQLITE_LOCKED) || timer.elapsed() > m_options.busyTimeoutMs)
            fail(walRc, QStringLiteral("switching to WAL mode"));
        QThread::msleep(10);
    }
    {
        Statement mode(*this, "PRAGMA journal_mode");
        if (mode.step(QStringLiteral("reading the journal mode")) && mode.text(0).toLower() != QLatin1String("wal"))
            throw Error(ErrorKind::Storage, QStringLiteral("cannot switch the flow-state store %1 to WAL mode (it stays in %2 "
                                                           "mode); the file system may not support it")
                                                .arg(m_location, mode.text(0)));
    }
    exec("PRAGMA synchronous = FULL", QStringLiteral("configuring durable writes"));
}

int SqliteFlowPersistence::storedVersion(QStringList *tables)
{
    tables->clear();
    {
        Statement st(*this, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
        while (st.step(QStringLiteral("reading the schema")))
            *tables << st.text(0);
    }
    tables->removeAll(QStringLiteral("sqlite_sequence"));
    if (tables->isEmpty())
        return 0;
    if (!tables->contains(QStringLiteral("meta")))
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is a SQLite database but not a flow-state store (it has no meta "
                                                       "table); Mneme did not change it. Give the persistence another file")
                                            .arg(m_location));
    QString kind;
    int version = -1;
    {
        Statement st(*this, "SELECT key, value FROM meta WHERE key IN ('store_kind', 'schema_version')");
        while (st.step(QStringLiteral("reading the schema version"))) {
            if (st.text(0) == QLatin1String("store_kind"))
                kind = st.text(1);
            else
                version = st.text(1).toInt();
        }
    }
    if (kind != QLatin1String(kStoreKind)) {
        const QString what = tables->contains(QStringLiteral("records")) ? QStringLiteral("a Mneme memory store")
                                                                         : QStringLiteral("not a flow-state store");
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is %2, not a flow-state store; Mneme did not change it. Give the "
                                                       "flow persistence a file of its own, such as %3")
                                            .arg(m_location, what, defaultPath()));
    }
    if (version < 1)
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its meta table has no valid schema_version; Mneme did "
                                                       "not change it. Move it away or give the persistence another file")
                                            .arg(m_location));
    if (version <= kLatestSchema && !tables->contains(QStringLiteral("flow_states")))
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its table \"flow_states\" is missing; Mneme did not "
                                                       "change it. Move it away or give the persistence another file")
                                            .arg(m_location));
    return version;
}

void SqliteFlowPersistence::migrate()
{
    exec("BEGIN IMMEDIATE", QStringLiteral("starting the schema upgrade"));
    try {
        // Another process may have created or upgraded the store while we waited for the lock.
        QStringList tables;
        const int current = storedVersion(&tables);
        for (const Migration &m : kMigrations) {
            if (m.version <= current)
                continue;
            exec(m.sql, QStringLiteral("upgrading the schema to version %1").arg(m.version));
            Statement st(*this, "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                                "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
            st.bind(1, QString::number(m.version)).step(QStringLiteral("recording the schema version"));
            if (m.version == 1) {
                Statement kind(*this, "INSERT INTO meta(key, value) VALUES ('store_kind', ?), ('created_by', ?)");
                kind.bind(1, QLatin1String(kStoreKind)).bind(2, QStringLiteral("mneme " MNEME_VERSION_STR)).step(QStringLiteral("naming the store"));
            }
        }
        exec("COMMIT", QStringLiteral("committing the schema upgrade"));
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

void SqliteFlowPersistence::saveState(const QString &flowId, const QString &stepName, const Json &state)
{
    if (flowId.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a flow state is saved under its flow id, and the id is empty"));
    if (!state.is_object() || !state.contains("id") || state["id"] != flowId.toStdString())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the state saved under flow id %1 must be a JSON object whose \"id\" is that id").arg(flowId));
    const QString text = QString::fromStdString(state.dump(-1, ' ', false, Json::error_handler_t::replace));
    QMutexLocker lock(&m_mutex);
    exec("BEGIN IMMEDIATE", QStringLiteral("saving the state of flow %1").arg(flowId));
    try {
        Statement st(*this, "INSERT INTO flow_states(flow_uuid, method_name, timestamp, state_json) VALUES (?, ?, ?, ?)");
        st.bind(1, flowId).bind(2, stepName).bind(3, QDateTime::currentMSecsSinceEpoch()).bind(4, text);
        st.step(QStringLiteral("saving the state of flow %1").arg(flowId));
        exec("COMMIT", QStringLiteral("committing the state of flow %1").arg(flowId));
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

SqliteFlowPersistence::SavedState SqliteFlowPersistence::readRow(Statement &st) const
{
    SavedState s;
    s.row = st.int64(0);
    s.flowId = st.text(1);
    s.step = st.text(2);
    s.savedAt = QDateTime::fromMSecsSinceEpoch(st.int64(3), Qt::UTC);
    s.state = parseJsonOrDiscarded(st.text(4).toStdString());
    if (!s.state.is_object())
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: the state saved in row %2 (flow id %3) is not a JSON "
                                                       "object; Mneme did not change it. Delete that row, or move the file away")
                                            .arg(m_location)
                                            .arg(s.row)
                                            .arg(s.flowId));
    return s;
}

std::optional<Json> SqliteFlowPersistence::loadState(const QString &flowId)
{
    QMutexLocker lock(&m_mutex);
    Statement st(*this, "SELECT id, flow_uuid, method_name, timestamp, state_json FROM flow_states WHERE flow_uuid = ? "
                        "ORDER BY id DESC LIMIT 1");
    st.bind(1, flowId);
    if (!st.step(QStringLiteral("loading the state of flow %1").arg(flowId)))
        return std::nullopt;
    return readRow(st).state;
}

QList<SqliteFlowPersistence::SavedState> SqliteFlowPersistence::history(const QString &flowId)
{
    QMutexLocker lock(&m_mutex);
    Statement st(*this, "SELECT id, flow_uuid, method_name, timestamp, state_json FROM flow_states WHERE flow_uuid = ? ORDER BY id");
    st.bind(1, flowId);
    QList<SavedState> out;
    while (st.step(QStringLiteral("listing the states of flow %1").arg(flowId)))
        out << readRow(st);
    return out;
}

QStringList SqliteFlowPersistence::flowIds()
{
    QMutexLocker lock(&m_mutex);
    Statement st(*this, "SELECT flow_uuid FROM flow_states GROUP BY flow_uuid ORDER BY max(id) DESC");
    QStringList out;
    while (st.step(QStringLiteral("listing the flow ids")))
        out << st.text(0);
    return out;
}

} // namespace mneme
