#pragma once

#include <mneme/flows/export.h>
#include <mneme/flows/flow_persistence.h>

#include <QDateTime>
#include <QList>
#include <QMutex>
#include <QString>
#include <QStringList>

#include <memory>

namespace mneme {

class SqliteFile;
class SqliteStatement;

// Flow states in one SQLite file (CrewAI's SQLiteFlowPersistence), with the memory store's
// conventions: WAL mode, synchronous=FULL (a save that returned is on disk), a busy timeout, every
// write one BEGIN IMMEDIATE transaction (several processes may share the file), and a versioned
// schema in a meta table. Every save is kept: table flow_states(id, flow_uuid, method_name,
// timestamp, state_json); loadState() reads the newest row of a flow id.
//
// A file that is not a flow-state store (a memory store, another SQLite database, anything else),
// one written by a newer Mneme, or a damaged one is refused with a clear error and left untouched.
// Thread-safe: one mutex guards the connection.
class MNEME_FLOWS_EXPORT SqliteFlowPersistence : public FlowPersistence
{
public:
    struct Options
    {
        QString path;
        int busyTimeoutMs = 10000;
    };

    // One saved state, as history() lists it.
    struct SavedState
    {
        qint64 row = 0;
        QString flowId;
        QString step;
        QDateTime savedAt;
        Json state;
    };

    // Opens the file, creating it (and its folder) when missing. Throws Error: InvalidArgument for an
    // empty path or a folder, Corrupt for a file that is not a flow-state store or is damaged,
    // SchemaTooNew, ReadOnlyStore when the file or its folder cannot be written, Storage otherwise.
    explicit SqliteFlowPersistence(const QString &path = defaultPath());
    explicit SqliteFlowPersistence(const Options &options);
    ~SqliteFlowPersistence() override;
    SqliteFlowPersistence(const SqliteFlowPersistence &) = delete;
    SqliteFlowPersistence &operator=(const SqliteFlowPersistence &) = delete;

    // flows.db beside the default memory store (MemoryConfig::defaultStoragePath()).
    static QString defaultPath();
    // The schema version this build writes and the newest it reads.
    static int latestSchemaVersion();

    // Throws Error(InvalidArgument) for an empty flow id or a state that is not an object whose
    // "id" is `flowId`.
    void saveState(const QString &flowId, const QString &stepName, const Json &state) override;
    std::optional<Json> loadState(const QString &flowId) override;
    QString location() const override;

    // Every state saved for `flowId`, oldest first.
    QList<SavedState> history(const QString &flowId);
    // The flow ids with saved states, the most recently saved first.
    QStringList flowIds();

private:
    void open();
    void migrate();
    int storedVersion(QStringList *tables);
    SavedState readRow(SqliteStatement &st) const;

    Options m_options;
    std::unique_ptr<SqliteFile> m_file;
    QMutex m_mutex;
};

} // namespace mneme
