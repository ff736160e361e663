#include "migrate_command.h"

#include "command_context.h"
#include "progress_bar.h"

#include <mneme/core/error.h>
#include <mneme/core/graph_store.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/sqlite_chat_store.h>

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSet>
#include <QUuid>

namespace mneme::cli {

namespace {

QString describe(const EmbedderBinding &b)
{
    return b.embedderId.isEmpty() ? QStringLiteral("an embedder of dimension %1").arg(b.dimension)
                                  : QStringLiteral("%1 (dimension %2)").arg(b.embedderId).arg(b.dimension);
}

// Whether `from` and `to` are one store reached twice (another spelling of the path or the dsn): a
// state document written into the target is read back from the source, and deleted again. (Locations
// do not tell: two schemas of one PostgreSQL database have the same.)
bool sameStore(StorageBackend &from, StorageBackend &to)
{
    const QString probe = QStringLiteral("mneme.migrate.probe.") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    to.writeState(probe, Json{{"probe", true}});
    const bool same = from.readState(probe).has_value();
    to.writeState(probe, Json());
    return same;
}

// Refuses a target that holds anything but an earlier, interrupted run of this migration; returns
// whether it holds one (the run resumes it).
bool checkTarget(StorageBackend &from, StorageBackend &to)
{
    if (sameStore(from, to))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--to names the store this command reads (%1); give another store to migrate into").arg(from.location()));
    const std::optional<Json> marker = to.readState(QString::fromLatin1(MigrateCommand::kMarkerKey));
    if (marker) {
        const QString markedSource = QString::fromStdString(marker->value("source", std::string()));
        if (markedSource != from.location())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the store %1 is being filled from another store (%2), not from %3; migrate into an "
                                       "empty store, or finish that migration first")
                            .arg(to.location(), markedSource, from.location()));
        return true;
    }
    const int records = to.count(RecordFilter());
    const bool graph = to.graph() && !to.graph()->entities({}, 1, 0).empty();
    const bool state = !to.stateKeys({}).isEmpty();
    if (records > 0 || graph || state)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the store %1 is not empty (%2%3); migrate moves a store into an empty one: give a new "
                                   "SQLite file or an empty PostgreSQL database or schema, or empty this one with "
                                   "`mneme reset --yes` pointed at it")
                        .arg(to.location(), Console::counted(records, QStringLiteral("record")),
                             graph ? QStringLiteral(", a graph") : state ? QStringLiteral(", state documents")
                                                                         : QString()));
    return false;
}

// The target takes the source's embedder, so that the moved embeddings are used as they are.
void bindEmbedder(StorageBackend &from, StorageBackend &to)
{
    const std::optional<EmbedderBinding> source = from.embedderBinding();
    const std::optional<EmbedderBinding> target = to.embedderBinding();
    if (!source)
        return;
    if (target && (target->embedderId != source->embedderId || target->dimension != source->dimension))
        throw Error(ErrorKind::EmbedderMismatch,
                    QStringLiteral("the store %1 was written with the embedder %2, but %3 with %4; migrate moves embeddings "
                                   "as they are. Migrate into an empty store, or move the records with `mneme export "
                                   "--curator` and `mneme import --reembed` pointed at the target")
                        .arg(to.location(), describe(*target), from.location(), describe(*source)));
    if (!target && !source->embedderId.isEmpty())
        to.bindEmbedder(*source);
}

struct Moved
{
    int copied = 0;  // records written into the target by this run
    int already = 0; // records the target held (an earlier run)
};

// The records, oldest first, a batch at a time: each batch reads the page, asks the target which of
// its ids it holds, and saves the others (with their embeddings) in one write.
Moved moveRecords(StorageBackend &from, StorageBackend &to, int batch, ProgressBar &bar)
{
    Moved moved;
    ListRequest page;
    page.order = RecordOrder{RecordOrder::Field::CreatedAt, false};
    page.limit = batch;
    for (page.offset = 0;; page.offset += batch) {
        const std::vector<MemoryRecord> listed = from.browse(page);
        QStringList ids;
        for (const MemoryRecord &r : listed)
            ids << r.id;
        QSet<QString> there;
        if (!ids.isEmpty()) {
            ListRequest held;
            held.filter.ids = ids;
            for (const MemoryRecord &r : to.browse(held))
                there.insert(r.id);
        }
        ReadRequest missing;
        missing.withEmbedding = true;
        for (const QString &id : std::as_const(ids))
            if (!there.contains(id))
                missing.ids << id;
        std::vector<MemoryRecord> records;
        if (!missing.ids.isEmpty())
            for (std::optional<MemoryRecord> &r : from.read(missing))
                if (r)
                    records.push_back(std::move(*r));
        if (!records.empty())
            to.save(records);
        moved.copied += int(records.size());
        moved.already += int(there.size());
        bar.update(page.offset + qint64(listed.size()));
        if (int(listed.size()) < batch)
            return moved;
    }
}

// The state documents (a conversation's rolling summary, ...), but the migration's own.
int moveState(StorageBackend &from, StorageBackend &to)
{
    int n = 0;
    for (const QString &key : from.stateKeys({})) {
        if (key.startsWith(QLatin1String("mneme.migrate")))
            continue;
        if (const std::optional<Json> value = from.readState(key)) {
            to.writeState(key, *value);
            ++n;
        }
    }
    return n;
}

// The graph, table by table, rows keys and all (GraphStore::dumpRows/loadRows); rows the target
// holds already (an earlier run) are left as they are. The rows per table.
Json moveGraph(GraphStore &from, GraphStore &to, int batch)
{
    Json counts = Json::object();
    for (const auto &[table, name, key] : {std::tuple{GraphStore::Table::Entities, "entities", "id"},
                                           std::tuple{GraphStore::Table::Relations, "relations", "id"},
                                           std::tuple{GraphStore::Table::History, "changes", "seq"}}) {
        qint64 after = 0;
        int n = 0;
        for (Json rows = from.dumpRows(table, after, batch); !rows.empty(); rows = from.dumpRows(table, after, batch)) {
            to.loadRows(table, rows);
            after = rows.back().at(key).get<qint64>();
            n += int(rows.size());
        }
        counts[name] = n;
    }
    return counts;
}

// The chat sessions kept in the source's file (a SQLite store: the chat memory's default place), copied
// into the target's file when it is a SQLite file too; a PostgreSQL target keeps no chat sessions, so
// they are left where they are (`left`). Null when the source keeps no chat sessions.
Json moveChatSessions(StorageBackend &from, StorageBackend &to, bool toSqlite)
{
    if (from.location().contains(QLatin1String("://")))
        return Json(); // a server keeps no chat sessions
    const int stored = SqliteChatStore::countSessions(from.location());
    if (!toSqlite)
        return Json{{"copied", 0}, {"already", 0}, {"left", stored}};
    if (stored == 0)
        return Json{{"copied", 0}, {"already", 0}, {"left", 0}};
    const SqliteChatStore::Copied c = SqliteChatStore(to.location()).copySessionsFrom(from.location());
    return Json{{"copied", c.copied}, {"already", c.already}, {"left", 0}};
}

} // namespace

MigrateCommand::MigrateCommand(CommandContext &context) : m_ctx(context) {}

Json MigrateCommand::targetStorage(const QString &target)
{
    static const QRegularExpression keyValue(QStringLiteral("^\\s*[A-Za-z_]+\\s*="));
    if (target.startsWith(QLatin1String("postgresql://")) || target.startsWith(QLatin1String("postgres://"))
        || keyValue.match(target).hasMatch())
        return Json{{"provider", "postgres"}, {"config", {{"dsn", target.toStdString()}}}};
    return Json{{"provider", "sqlite"}, {"config", {{"path", target.toStdString()}}}};
}

void MigrateCommand::migrate()
{
    const CliArguments &a = m_ctx.args();
    Console &console = m_ctx.console();
    const QString target = a.value(QStringLiteral("to")).value_or(QString()).trimmed();
    if (target.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("migrate needs --to TARGET: a PostgreSQL dsn (\"host=db.example dbname=mneme user=mneme\" "
                                   "or postgresql://mneme@db.example/mneme) or a SQLite file"));
    const int batch = a.integer(QStringLiteral("batch"), 1).value_or(kDefaultBatch);

    StorageBackend &from = m_ctx.memory().storage();
    const Json spec = targetStorage(target);
    const std::unique_ptr<StorageBackend> to =
        PluginRegistry::instance().createStorage(QString::fromStdString(spec["provider"].get<std::string>()), spec["config"]);
    const bool resumed = checkTarget(from, *to);
    bindEmbedder(from, *to);

    QElapsedTimer timer;
    timer.start();
    const QString markerKey = QString::fromLatin1(kMarkerKey);
    Json marker = to->readState(markerKey).value_or(
        Json{{"source", from.location().toStdString()}, {"started_at", nowUtc().toString(Qt::ISODateWithMs).toStdString()}});
    marker.erase("finished_at");
    to->writeState(markerKey, marker);
    if (resumed && !m_ctx.json()) // --json says "resumed"
        console.notice(QStringLiteral("continuing the migration into %1 (started %2): the records it holds already are skipped")
                           .arg(to->location(), QString::fromStdString(marker.value("started_at", std::string()))));

    const int total = from.count(RecordFilter());
    Moved moved;
    {
        ProgressBar bar(console, QStringLiteral("migrating"), total);
        moved = moveRecords(from, *to, batch, bar);
        bar.finish();
    }
    const int stateDocuments = moveState(from, *to);
    Json graph; // null: not moved
    if (GraphStore *g = from.graph()) {
        if (GraphStore *h = to->graph())
            graph = moveGraph(*g, *h, batch);
        else if (!g->entities({}, 1, 0).empty())
            console.notice(QStringLiteral("the graph was not moved: %1 keeps no graph").arg(to->location()));
    }
    const Json chat = moveChatSessions(from, *to, spec["provider"] == "sqlite");
    if (chat.is_object() && chat["left"].get<int>() > 0)
        console.notice(QStringLiteral("%1 not moved: %2 keeps no chat sessions. They stay in %3; give the chat memory that file "
                                      "(its \"storage\" key, or --db for `mneme chat`)")
                           .arg(Console::counted(chat["left"].get<int>(), QStringLiteral("chat session")), to->location(), from.location()));
    const int damaged = int(from.damagedRecords().size());
    if (damaged > 0)
        console.notice(QStringLiteral("%1 not moved (see `mneme check`)").arg(Console::counted(damaged, QStringLiteral("damaged record"))));

    marker["finished_at"] = nowUtc().toString(Qt::ISODateWithMs).toStdString();
    marker["records"] = moved.copied + moved.already;
    to->writeState(markerKey, marker);
    const QString location = to->location();
    to->close();
    const double seconds = double(timer.elapsed()) / 1000.0;

    if (m_ctx.json()) {
        console.writeJson(Json{{"source", from.location().toStdString()},
                               {"target", location.toStdString()},
                               {"records", moved.copied + moved.already},
                               {"copied", moved.copied},
                               {"already", moved.already},
                               {"damaged", damaged},
                               {"state", stateDocuments},
                               {"graph", graph},
                               {"chat_sessions", chat},
                               {"resumed", resumed},
                               {"seconds", seconds}});
        return;
    }
    // The records this run copied; those an earlier run copied are named apart.
    QString text = QStringLiteral("Migrated %1 from %2 to %3 in %4 s")
                       .arg(Console::counted(moved.copied, QStringLiteral("record")), from.location(), location,
                            QString::number(seconds, 'f', 1));
    if (moved.already > 0)
        text += QStringLiteral(" (%1 already there from an earlier run: %2 in all)")
                    .arg(Console::counted(moved.already, QStringLiteral("record")))
                    .arg(moved.copied + moved.already);
    if (graph.is_object())
        text += QStringLiteral("; graph: %1, %2")
                    .arg(Console::counted(graph["entities"].get<int>(), QStringLiteral("entity"), QStringLiteral("entities")),
                         Console::counted(graph["relations"].get<int>(), QStringLiteral("relation")));
    if (chat.is_object() && chat["copied"].get<int>() + chat["already"].get<int>() > 0)
        text += QStringLiteral("; chat: %1").arg(Console::counted(chat["copied"].get<int>(), QStringLiteral("session")))
              + (chat["already"].get<int>() > 0 ? QStringLiteral(" (%1 already there)").arg(chat["already"].get<int>()) : QString());
    console.write(text + QStringLiteral(".\n"));
}

} // namespace mneme::cli
