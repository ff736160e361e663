#include "record_commands.h"

#include "command_context.h"
#include "input_lines.h"
#include "table_printer.h"

#include <mneme/core/error.h>

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

// The options of remember that set a record's fields.
RememberOptions rememberOptions(const CliArguments &a)
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
    return o;
}

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
    if (const std::optional<QDateTime> now = a.time(QStringLiteral("now")))
        o.now = *now;

    const QList<MemoryMatch> matches = m_ctx.memory().recall(query, o);
    if (m_ctx.json()) {
        Json out = Json::array();
        for (const MemoryMatch &m : matches)
            out.push_back(m);
        m_ctx.console().writeJson(out);
        return;
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
    if (!o.scope && o.ids.isEmpty() && o.categories.isEmpty() && !o.olderThan.isValid())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("forget needs at least one of --scope, --id, --category or --older-than; "
                                   "to delete everything run \"mneme reset --yes\""));
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
    if (a.has(QStringLiteral("category")))
        o.categories = a.nonBlankValues(QStringLiteral("category"));
    o.importance = a.unitInterval(QStringLiteral("importance"));
    if (!o.content && !o.scope && !o.categories && !o.importance)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("update needs at least one of --content, --scope, --category or --importance"));
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
