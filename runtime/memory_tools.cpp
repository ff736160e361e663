#include <mneme/runtime/memory_tools.h>

#include <mneme/core/error.h>
#include <mneme/runtime/function_tool.h>

#include <QSet>
#include <QThreadPool>
#include <QtConcurrent>

namespace mneme::MemoryTools {

namespace {

constexpr int kSearchLimit = 20;

// The non-blank strings of a list the schema has already checked.
QStringList stringsOf(const Json &list)
{
    QStringList out;
    for (const Json &v : list)
        if (const QString s = QString::fromStdString(v.get<std::string>()).trimmed(); !s.isEmpty())
            out << s;
    return out;
}

// The tool's blocking work as a job of `pool`, handed to `track`.
FunctionTool::AsyncFunction onPool(QThreadPool *pool, const Track &track, std::function<QString(const Json &)> work)
{
    return [pool, track, work](const Json &args) {
        QFuture<QString> job = QtConcurrent::run(pool ? pool : QThreadPool::globalInstance(), [work, args] { return work(args); });
        if (track)
            track(QFuture<void>(job));
        return job;
    };
}

// One type per value: some providers (Gemini) refuse type lists in tool schemas.
Json listOfStrings(const char *what)
{
    return Json{{"type", "array"}, {"items", {{"type", "string"}}}, {"description", what}};
}

} // namespace

std::shared_ptr<Tool> search(const MemoryRef &memory, QThreadPool *pool, Track track)
{
    const Json schema = {{"type", "object"},
                         {"properties", {{"queries", listOfStrings("One or more search phrases; use several different "
                                                                   "phrasings to find everything relevant.")}}},
                         {"required", Json::array({"queries"})}};
    return std::make_shared<FunctionTool>(
        QLatin1String(kSearchName),
        QStringLiteral("Search the shared long-term memory for facts, decisions and results stored by earlier work. "
                       "Pass several different queries when you need to count, list or total things, and enumerate "
                       "every distinct item you find."),
        schema, onPool(pool, track, [memory](const Json &args) {
            const QStringList queries = stringsOf(args.at("queries"));
            if (queries.isEmpty())
                throw Error(ErrorKind::InvalidArgument, QStringLiteral("Give at least one non-empty query in \"queries\"."));
            QSet<QString> seen;
            QStringList lines;
            for (const QString &q : queries) {
                RecallOptions options;
                options.limit = kSearchLimit;
                for (const MemoryMatch &m : memory.recall(q, options)) {
                    if (seen.contains(m.record.id))
                        continue;
                    seen.insert(m.record.id);
                    lines << m.format();
                }
            }
            if (lines.isEmpty())
                return QStringLiteral("No memories match these queries.");
            return QStringLiteral("Memories found:\n") + lines.join(QLatin1Char('\n'));
        }));
}

std::shared_ptr<Tool> save(const MemoryRef &memory, const QString &role, QThreadPool *pool, Track track)
{
    if (memory.isReadOnly())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("The %1 is read-only, so there is no save_to_memory tool for it.").arg(memory.describe()));
    const Json schema = {{"type", "object"},
                         {"properties", {{"contents", listOfStrings("The facts to remember, each one self-contained "
                                                                    "statement.")}}},
                         {"required", Json::array({"contents"})}};
    return std::make_shared<FunctionTool>(
        QLatin1String(kSaveName),
        QStringLiteral("Save facts to the shared long-term memory so later tasks and runs can find them. Write each "
                       "fact as one self-contained statement."),
        schema, onPool(pool, track, [memory, role](const Json &args) {
            const QStringList contents = stringsOf(args.at("contents"));
            if (contents.isEmpty())
                throw Error(ErrorKind::InvalidArgument, QStringLiteral("Give at least one non-empty fact in \"contents\"."));
            if (contents.size() == 1) {
                const MemoryRecord r = memory.remember(contents.front(), role);
                return QStringLiteral("Saved to memory (scope=%1, importance=%2).").arg(r.scope).arg(r.importance, 0, 'f', 1);
            }
            memory.rememberMany(contents, role);
            return QStringLiteral("Saving %1 facts to memory in the background.").arg(contents.size());
        }));
}

} // namespace mneme::MemoryTools
