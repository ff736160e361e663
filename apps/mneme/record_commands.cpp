#include "record_commands.h"

#include "command_context.h"
#include "input_lines.h"
#include "table_printer.h"

#include <mneme/core/error.h>
#include <mneme/core/metadata_filter.h>

#include <QRegularExpression>

namespace mneme::cli {

namespace {

constexpr int kContentWidth = 60;

QString shortTime(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : QStringLiteral("-");
}

QString number(double x)
{
    return QString::number(x, 'f', 2);
}

// The record for people, one field per line.
QString describe(const MemoryRecord &r)
{
    QString content = r.content;
    content.replace(QLatin1Char('\n'), QStringLiteral("\n             "));
    QString source = r.source.isEmpty() ? QStringLiteral("-") : r.source;
    if (r.isPrivate)
        source += QStringLiteral(" (private)");
    const Json metadata = r.metadata.is_object() ? r.metadata : Json::object();
    QString text;
    text += QStringLiteral("id:          %1\n").arg(r.id);
    text += QStringLiteral("content:     %1\n").arg(content);
    text += QStringLiteral("scope:       %1\n").arg(r.scope);
    text += QStringLiteral("categories:  %1\n")
                .arg(r.categories.isEmpty() ? QStringLiteral("-") : r.categories.join(QStringLiteral(", ")));
    text += QStringLiteral("importance:  %1\n").arg(number(r.importance));
    text += QStringLiteral("source:      %1\n").arg(source);
    if (!metadata.empty())
        text += QStringLiteral("metadata:    %1\n")
                    .arg(QString::fromStdString(metadata.dump(-1, ' ', false, Json::error_handler_t::replace)));
    text += QStringLiteral("created:     %1\n").arg(toIso(r.createdAt));
    text += QStringLiteral("updated:     %1\n").arg(toIso(r.updatedAt));
    text += QStringLiteral("accessed:    %1 (%2 times)\n").arg(toIso(r.lastAccessed), QString::number(r.accessCount));
    return text;
}

// A value written in a --where condition: JSON when it reads as JSON (numbers, true, false, null,
// "quoted text", [lists]; read with the limits of any JSON from outside), else the text itself. A
// number JSON cannot hold (1e309), and a list or object that is not acceptable JSON (nested too
// deep, cut short), are refused rather than compared as text.
Json whereValue(const QString &text)
{
    static const QRegularExpression number(QStringLiteral(R"(^-?\d+(\.\d+)?([eE][+-]?\d+)?$)"));
    const QString t = text.trimmed();
    Json parsed;
    const QString problem = readJson(t.toStdString(), &parsed);
    if (problem.isEmpty())
        return parsed;
    if (number.match(t).hasMatch() || t.startsWith(QLatin1Char('[')) || t.startsWith(QLatin1Char('{')))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--where: the value %1 is not valid JSON (%2); write a number a double holds, or a "
                                   "JSON list or object of at most 64 levels")
                        .arg(Error::quoted(t), problem.size() > 160 ? problem.left(160) + QStringLiteral("...") : problem));
    return Json(t.toStdString());
}

// One --where condition as a filter document.
Json whereCondition(const QString &text)
{
    static const QRegularExpression membership(QStringLiteral(R"(^\s*(.+?)\s+(not\s+in|in)\s+(.*)$)"),
                                               QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression comparison(QStringLiteral(R"(^\s*([^=!<>]+?)\s*(!=|>=|<=|=|>|<)\s*(.*)$)"));
    const auto refuse = [&]() -> Json {
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--where %1 is not a condition; write KEY=VALUE, KEY!=VALUE, KEY>N, KEY>=N, KEY<N, "
                                   "KEY<=N, \"KEY in A,B\" or \"KEY not in A,B\"; a value is read as JSON when it is JSON (a number, "
                                   "true, false, null, \"quoted text\"), else as text")
                        .arg(Error::quoted(text)));
    };
    if (const QRegularExpressionMatch m = membership.match(text); m.hasMatch() && !m.captured(1).contains(QLatin1Char('='))) {
        const QString list = m.captured(3).trimmed();
        Json values = Json::array();
        if (list.startsWith(QLatin1Char('['))) {
            values = whereValue(list);
            if (!values.is_array())
                return refuse();
        } else {
            for (const QString &item : list.split(QLatin1Char(','), Qt::SkipEmptyParts))
                values.push_back(whereValue(item));
        }
        const bool negated = m.captured(2).startsWith(QLatin1String("not"), Qt::CaseInsensitive);
        return Json{{m.captured(1).trimmed().toStdString(), {{negated ? "$nin" : "$in", values}}}};
    }
    const QRegularExpressionMatch m = comparison.match(text);
    if (!m.hasMatch() || m.captured(1).trimmed().isEmpty())
        return refuse();
    static const QMap<QString, const char *> ops = {{QStringLiteral("="), "$eq"}, {QStringLiteral("!="), "$ne"}, {QStringLiteral(">"), "$gt"}, {QStringLiteral(">="), "$gte"}, {QStringLiteral("<"), "$lt"}, {QStringLiteral("<="), "$lte"}};
    return Json{{m.captured(1).trimmed().toStdString(), {{ops.value(m.captured(2)), whereValue(m.captured(3))}}}};
}

// The metadata conditions of --where (each) and --metadata (a JSON filter), all of which must hold;
// checked here, so that a bad one stops the command before the store is opened.
Json metadataConditions(const CliArguments &a)
{
    Json all = Json::object();
    for (const QString &text : a.values(QStringLiteral("where")))
        all = MetadataFilter::both(all, whereCondition(text));
    if (const std::optional<Json> document = a.jsonObject(QStringLiteral("metadata")))
        all = MetadataFilter::both(all, *document);
    (void)MetadataFilter::parse(all);
    return all;
}

// --user, --agent and --run into options that have userId, agentId and runId.
template<typename Options>
void readIdentity(const CliArguments &a, Options &o)
{
    o.userId = a.value(QStringLiteral("user")).value_or(QString()).trimmed();
    o.agentId = a.value(QStringLiteral("agent")).value_or(QString()).trimmed();
    o.runId = a.value(QStringLiteral("run")).value_or(QString()).trimmed();
}

} // namespace

RememberOptions RecordCommands::rememberOptions(const CliArguments &a)
{
    RememberOptions o;
    o.scope = a.scope(QStringLiteral("scope"));
    if (a.has(QStringLiteral("category")))
        o.categories = a.nonBlankValues(QStringLiteral("category"));
    o.importance = a.unitInterval(QStringLiteral("importance"));
    if (const std::optional<QString> source = a.value(QStringLiteral("source")))
        o.source = source->trimmed();
    o.isPrivate = a.has(QStringLiteral("private"));
    if (const std::optional<QDateTime> at = a.time(QStringLiteral("at")))
        o.createdAt = *at;
    if (const std::optional<Json> metadata = a.jsonObject(QStringLiteral("metadata")))
        o.metadata = *metadata;
    readIdentity(a, o);
    return o;
}

namespace {

[[noreturn]] void unknownId(const QString &id)
{
    throw Error(ErrorKind::NotFound,
                QStringLiteral("no record has the id %1; \"mneme list\" shows the ids").arg(Error::quoted(id)));
}

QString requiredText(const CliArguments &a, const QString &what)
{
    const QString text = a.positional(0);
    if (text.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 needs a non-empty %2 (usage: %3)").arg(a.commandName(), what, a.command()->synopsis()));
    return text;
}

} // namespace

RecordCommands::RecordCommands(CommandContext &context)
    : m_ctx(context)
{
}

void RecordCommands::remember()
{
    const CliArguments &a = m_ctx.args();
    // "-" reads the text from standard input (for texts too long for a command line).
    const QString content = a.positional(0) == QLatin1String("-") ? InputLines::readText(QStringLiteral("-"))
                                                                  : requiredText(a, QStringLiteral("TEXT"));
    const RememberOptions options = rememberOptions(a);
    const MemoryRecord record = m_ctx.memory().remember(content, options);
    if (m_ctx.json()) {
        m_ctx.console().writeJson(record);
        return;
    }
    m_ctx.console().write(QStringLiteral("Remembered:\n") + describe(record));
}

void RecordCommands::recall()
{
    const CliArguments &a = m_ctx.args();
    const QString query = requiredText(a, QStringLiteral("QUERY"));
    RecallOptions o;
    o.scopes = a.scopes(QStringLiteral("scope"));
    o.categories = a.nonBlankValues(QStringLiteral("category"));
    o.limit = a.integer(QStringLiteral("limit"), 1).value_or(o.limit);
    if (const std::optional<QString> depth = a.value(QStringLiteral("depth"))) {
        if (*depth == QLatin1String("shallow"))
            o.depth = RecallDepth::Shallow;
        else if (*depth == QLatin1String("deep"))
            o.depth = RecallDepth::Deep;
        else
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("--depth must be shallow or deep, got \"%1\"").arg(*depth));
    }
    o.reader = a.reader();
    if (const std::optional<QString> only = a.value(QStringLiteral("only-source")))
        o.onlySource = only->trimmed();
    if (const std::optional<QDateTime> now = a.time(QStringLiteral("now")))
        o.now = *now;
    o.metadata = metadataConditions(a);
    readIdentity(a, o);
    o.threshold = a.unitInterval(QStringLiteral("min-score"));
    o.minRelevance = a.unitInterval(QStringLiteral("min-relevance"));
    if (const std::optional<QDateTime> asOf = a.time(QStringLiteral("as-of")))
        o.asOf = *asOf;
    const bool withRelations = a.has(QStringLiteral("relations"));
    const bool withStats = a.has(QStringLiteral("stats"));
    RecallStats stats;
    if (withStats)
        o.stats = &stats;

    const QList<MemoryMatch> matches = m_ctx.memory().recall(query, o);
    o.stats = nullptr;
    const QList<RelationMatch> relations = withRelations ? m_ctx.memory().recallRelations(query, o) : QList<RelationMatch>();
    if (m_ctx.json()) {
        Json out = Json::array();
        for (const MemoryMatch &m : matches)
            out.push_back(m);
        if (withRelations || withStats) {
            out = Json{{"matches", out}};
            if (withRelations) {
                Json related = Json::array();
                for (const RelationMatch &r : relations)
                    related.push_back(r);
                out["relations"] = related;
            }
            if (withStats)
                out["stats"] = stats;
        }
        m_ctx.console().writeJson(out);
        return;
    }
    printMatches(matches, relations);
    if (withStats)
        m_ctx.console().write(statsLine(stats));
}

// "stats: exact (exact scan of 4,000 records: the HNSW graph is being built); 1 vector search; 0.81 ms"
QString RecordCommands::statsLine(const RecallStats &stats)
{
    QString how = stats.exact ? QStringLiteral("exact") : QStringLiteral("approximate");
    if (!stats.answers.isEmpty())
        how += QStringLiteral(" (%1)").arg(stats.answers.join(QStringLiteral("; ")));
    return QStringLiteral("stats: %1; %2 vector search%3; %4 ms\n")
        .arg(how)
        .arg(stats.vectorSearches)
        .arg(stats.vectorSearches == 1 ? QString() : QStringLiteral("es"))
        .arg(QString::number(stats.elapsedMs, 'f', 2));
}

void RecordCommands::printMatches(const QList<MemoryMatch> &matches, const QList<RelationMatch> &relations)
{
    if (!relations.isEmpty()) {
        TablePrinter table;
        table.addColumn(QStringLiteral("SCORE"), TablePrinter::Align::Right);
        table.addColumn(QStringLiteral("RELATION"), TablePrinter::Align::Left, kContentWidth);
        table.addColumn(QStringLiteral("RECORDS"));
        for (const RelationMatch &r : relations)
            table.addRow({number(r.score), r.relation.text(), r.relation.recordIds.join(QLatin1Char(' '))});
        m_ctx.console().write(table.render() + QLatin1Char('\n'));
    }
    if (matches.isEmpty()) {
        m_ctx.console().write(QStringLiteral("No memories match.\n"));
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("SCORE"), TablePrinter::Align::Right);
    table.addColumn(QStringLiteral("SCOPE"), TablePrinter::Align::Left, 24);
    table.addColumn(QStringLiteral("CONTENT"), TablePrinter::Align::Left, kContentWidth);
    table.addColumn(QStringLiteral("ID"));
    for (const MemoryMatch &m : matches)
        table.addRow({number(m.score), m.record.scope, m.record.content, m.record.id});
    m_ctx.console().write(table.render());
}

void RecordCommands::forget()
{
    const CliArguments &a = m_ctx.args();
    ForgetOptions o;
    o.scope = a.scope(QStringLiteral("scope"));
    o.ids = a.nonBlankValues(QStringLiteral("id"));
    o.categories = a.nonBlankValues(QStringLiteral("category"));
    if (const std::optional<QDateTime> before = a.time(QStringLiteral("older-than")))
        o.olderThan = *before;
    o.metadata = metadataConditions(a);
    readIdentity(a, o);
    if (!o.scope && o.ids.isEmpty() && o.categories.isEmpty() && !o.olderThan.isValid() && o.metadata.empty()
        && o.userId.isEmpty() && o.agentId.isEmpty() && o.runId.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("forget needs at least one of --scope, --id, --category, --older-than, --where, "
                                   "--metadata, --user, --agent or --run; to delete everything run \"mneme reset --yes\""));
    const int deleted = m_ctx.memory().forget(o, a.reader());
    if (m_ctx.json())
        m_ctx.console().writeJson(Json{{"deleted", deleted}});
    else
        m_ctx.console().write(QStringLiteral("Deleted %1 record(s).\n").arg(deleted));
}

void RecordCommands::update()
{
    const CliArguments &a = m_ctx.args();
    const QString id = requiredText(a, QStringLiteral("ID")).trimmed();
    UpdateOptions o;
    if (const std::optional<QString> content = a.value(QStringLiteral("content"))) {
        if (content->trimmed().isEmpty())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("--content needs a non-empty text"));
        o.content = *content;
    }
    o.scope = a.scope(QStringLiteral("scope"));
    if (a.has(QStringLiteral("category")) && a.has(QStringLiteral("no-categories")))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--category and --no-categories contradict each other; give one of them"));
    if (a.has(QStringLiteral("category"))) {
        o.categories = a.nonBlankValues(QStringLiteral("category"));
        if (o.categories->isEmpty())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("--category needs a category name; to remove every category use --no-categories"));
    }
    if (a.has(QStringLiteral("no-categories")))
        o.categories = QStringList();
    o.importance = a.unitInterval(QStringLiteral("importance"));
    o.metadata = a.jsonObject(QStringLiteral("metadata"));
    o.mergeMetadata = !a.has(QStringLiteral("replace-metadata"));
    if (a.has(QStringLiteral("replace-metadata")) && !o.metadata)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("--replace-metadata needs --metadata JSON (the new metadata object)"));
    if (!o.content && !o.scope && !o.categories && !o.importance && !o.metadata)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("update needs at least one of --content, --scope, --category, --no-categories, "
                                   "--importance or --metadata"));
    const MemoryRecord record = m_ctx.memory().update(id, o, a.reader());
    if (m_ctx.json()) {
        m_ctx.console().writeJson(record);
        return;
    }
    m_ctx.console().write(QStringLiteral("Updated:\n") + describe(record));
}

void RecordCommands::get()
{
    const QString id = requiredText(m_ctx.args(), QStringLiteral("ID")).trimmed();
    const std::optional<MemoryRecord> record = m_ctx.memory().get(id, m_ctx.args().reader());
    if (!record)
        unknownId(id);
    if (m_ctx.json())
        m_ctx.console().writeJson(*record);
    else
        m_ctx.console().write(describe(*record));
}

void RecordCommands::history()
{
    const QString id = requiredText(m_ctx.args(), QStringLiteral("ID")).trimmed();
    const QList<HistoryEntry> entries = m_ctx.memory().history(id, m_ctx.args().reader());
    if (m_ctx.json()) {
        Json out = Json::array();
        for (const HistoryEntry &e : entries)
            out.push_back(e);
        m_ctx.console().writeJson(out);
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("AT"));
    table.addColumn(QStringLiteral("EVENT"));
    table.addColumn(QStringLiteral("OLD"), TablePrinter::Align::Left, 40);
    table.addColumn(QStringLiteral("NEW"), TablePrinter::Align::Left, 40);
    for (const HistoryEntry &e : entries) {
        table.addRow({toIso(e.at), HistoryEntry::eventName(e.event),
                      e.oldContent.isNull() ? QStringLiteral("-") : e.oldContent,
                      e.newContent.isNull() ? QStringLiteral("-") : e.newContent});
    }
    m_ctx.console().write(table.render());
}

void RecordCommands::undo()
{
    const QString id = requiredText(m_ctx.args(), QStringLiteral("ID")).trimmed();
    const MemoryRecord record = m_ctx.memory().undo(id, m_ctx.args().reader());
    if (m_ctx.json()) {
        m_ctx.console().writeJson(record);
        return;
    }
    m_ctx.console().write(QStringLiteral("Restored:\n") + describe(record));
}

void RecordCommands::list()
{
    const CliArguments &a = m_ctx.args();
    const QString scope = a.scope(QStringLiteral("scope")).value_or(QString());
    const int limit = a.integer(QStringLiteral("limit"), 1).value_or(200);
    const int offset = a.integer(QStringLiteral("offset"), 0).value_or(0);
    const QList<MemoryRecord> records = m_ctx.memory().listRecords(scope, limit, offset, a.reader());
    if (m_ctx.json()) {
        Json out = Json::array();
        for (const MemoryRecord &r : records)
            out.push_back(r);
        m_ctx.console().writeJson(out);
        return;
    }
    if (records.isEmpty()) {
        m_ctx.console().write(QStringLiteral("No records.\n"));
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("CREATED (UTC)"));
    table.addColumn(QStringLiteral("IMP"), TablePrinter::Align::Right);
    table.addColumn(QStringLiteral("SCOPE"), TablePrinter::Align::Left, 24);
    table.addColumn(QStringLiteral("CONTENT"), TablePrinter::Align::Left, kContentWidth);
    table.addColumn(QStringLiteral("ID"));
    for (const MemoryRecord &r : records) {
        QString content = r.content;
        if (r.isPrivate)
            content.prepend(QStringLiteral("[private] "));
        table.addRow({shortTime(r.createdAt), number(r.importance), r.scope, content, r.id});
    }
    m_ctx.console().write(table.render());
}

void RecordCommands::extract()
{
    const CliArguments &a = m_ctx.args();
    const QString text = a.positional(0) == QLatin1String("-") ? InputLines::readText(QStringLiteral("-")) : a.positional(0);
    m_ctx.config(); // a bad --config fails even for an empty text
    // A blank text has no statements: no Memory, plugin or LLM is needed to say so.
    const QStringList statements =
        text.trimmed().isEmpty() ? QStringList() : m_ctx.memoryWithoutStore().extractMemories(text);
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json(statements));
        return;
    }
    QString out;
    for (const QString &statement : statements)
        out += Console::oneLine(statement) + QLatin1Char('\n'); // one statement a line, whatever it holds
    if (!out.isEmpty())
        m_ctx.console().write(out);
}

} // namespace mneme::cli
