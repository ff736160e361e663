#include <mneme/flows/sqlite_flow_persistence.h>

#include "memory/sqlite_file_p.h"

#include <mneme/core/error.h>
#include <mneme/core/version.h>
#include <mneme/memory/memory_config.h>

#include <QDir>
#include <QFileInfo>
#include <QMutexLocker>

namespace mneme {

namespace {

// The schema's steps (see SqliteMigration).
constexpr SqliteMigration kMigrations[] = {
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

using Statement = SqliteStatement;

SqliteFlowPersistence::SqliteFlowPersistence(const QString &path)
    : SqliteFlowPersistence(Options{path})
{
}

SqliteFlowPersistence::SqliteFlowPersistence(const Options &options)
    : m_options(options),
      m_file(std::make_unique<SqliteFile>(SqliteFileKind{QStringLiteral("flow-state store"),
                                                         QStringLiteral("give the persistence another file"), QStringLiteral("flows.db")},
                                          options.busyTimeoutMs))
{
    open();
}

SqliteFlowPersistence::~SqliteFlowPersistence() = default;

QString SqliteFlowPersistence::location() const
{
    return m_file->location();
}

QString SqliteFlowPersistence::defaultPath()
{
    return QFileInfo(MemoryConfig::defaultStoragePath()).dir().filePath(QStringLiteral("flows.db"));
}

int SqliteFlowPersistence::latestSchemaVersion()
{
    return kLatestSchema;
}

void SqliteFlowPersistence::open()
{
    if (m_options.path.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the flow-state store needs a path, such as %1").arg(defaultPath()));
    if (m_options.busyTimeoutMs < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("busyTimeoutMs of the flow-state store must not be negative"));
    m_file->open(m_options.path);
    QStringList tables;
    const int version = storedVersion(&tables);
    if (version > kLatestSchema)
        throw Error(ErrorKind::SchemaTooNew,
                    QStringLiteral("%1 was written by a newer Mneme (flow-state schema %2; this build reads up to %3): upgrade "
                                   "Mneme to use it. The file was not changed")
                        .arg(m_file->location())
                        .arg(version)
                        .arg(kLatestSchema));
    if (version < kLatestSchema)
        migrate();
    m_file->useWal();
}

int SqliteFlowPersistence::storedVersion(QStringList *tables)
{
    tables->clear();
    {
        Statement st(*m_file, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
        while (st.step(QStringLiteral("reading the schema")))
            *tables << st.text(0);
    }
    tables->removeAll(QStringLiteral("sqlite_sequence"));
    if (tables->isEmpty())
        return 0;
    if (!tables->contains(QStringLiteral("meta")))
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is a SQLite database but not a flow-state store (it has no meta "
                                                       "table); Mneme did not change it. Give the persistence another file")
                                            .arg(m_file->location()));
    QString kind;
    int version = -1;
    {
        Statement st(*m_file, "SELECT key, value FROM meta WHERE key IN ('store_kind', 'schema_version')");
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
                                            .arg(m_file->location(), what, defaultPath()));
    }
    if (version < 1)
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its meta table has no valid schema_version; Mneme did "
                                                       "not change it. Move it away or give the persistence another file")
                                            .arg(m_file->location()));
    if (version <= kLatestSchema && !tables->contains(QStringLiteral("flow_states")))
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its table \"flow_states\" is missing; Mneme did not "
                                                       "change it. Move it away or give the persistence another file")
                                            .arg(m_file->location()));
    return version;
}

void SqliteFlowPersistence::migrate()
{
    SqliteTransaction tx(*m_file, QStringLiteral("upgrading the schema"));
    // Another process may have created or upgraded the store while we waited for the lock.
    QStringList tables;
    const int current = storedVersion(&tables);
    applySqliteMigrations(*m_file, kMigrations, current, "meta", QStringLiteral("the flow-state schema"), [this] {
        Statement kind(*m_file, "INSERT INTO meta(key, value) VALUES ('store_kind', ?), ('created_by', ?)");
        kind.bind(1, QLatin1String(kStoreKind)).bind(2, QStringLiteral("mneme " MNEME_VERSION_STR)).step(QStringLiteral("naming the store"));
    });
    tx.commit();
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
    const QString doing = QStringLiteral("saving the state of flow %1").arg(flowId);
    SqliteTransaction tx(*m_file, doing);
    Statement st(*m_file, "INSERT INTO flow_states(flow_uuid, method_name, timestamp, state_json) VALUES (?, ?, ?, ?)");
    st.bind(1, flowId).bind(2, stepName).bind(3, QDateTime::currentMSecsSinceEpoch()).bind(4, text);
    st.step(doing);
    tx.commit();
}

SqliteFlowPersistence::SavedState SqliteFlowPersistence::readRow(SqliteStatement &st) const
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
                                            .arg(m_file->location())
                                            .arg(s.row)
                                            .arg(s.flowId));
    return s;
}

std::optional<Json> SqliteFlowPersistence::loadState(const QString &flowId)
{
    QMutexLocker lock(&m_mutex);
    Statement st(*m_file, "SELECT id, flow_uuid, method_name, timestamp, state_json FROM flow_states WHERE flow_uuid = ? "
                          "ORDER BY id DESC LIMIT 1");
    st.bind(1, flowId);
    if (!st.step(QStringLiteral("loading the state of flow %1").arg(flowId)))
        return std::nullopt;
    return readRow(st).state;
}

QList<SqliteFlowPersistence::SavedState> SqliteFlowPersistence::history(const QString &flowId)
{
    QMutexLocker lock(&m_mutex);
    Statement st(*m_file, "SELECT id, flow_uuid, method_name, timestamp, state_json FROM flow_states WHERE flow_uuid = ? ORDER BY id");
    st.bind(1, flowId);
    QList<SavedState> out;
    while (st.step(QStringLiteral("listing the states of flow %1").arg(flowId)))
        out << readRow(st);
    return out;
}

QStringList SqliteFlowPersistence::flowIds()
{
    QMutexLocker lock(&m_mutex);
    Statement st(*m_file, "SELECT flow_uuid FROM flow_states GROUP BY flow_uuid ORDER BY max(id) DESC");
    QStringList out;
    while (st.step(QStringLiteral("listing the flow ids")))
        out << st.text(0);
    return out;
}

} // namespace mneme
