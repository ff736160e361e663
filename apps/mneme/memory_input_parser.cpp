#include "memory_input_parser.h"

#include "cli_arguments.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QSet>

namespace mneme::cli {

namespace {

const QStringList &knownFields()
{
    static const QStringList fields = {
        QStringLiteral("content"),
        QStringLiteral("scope"),
        QStringLiteral("categories"),
        QStringLiteral("importance"),
        QStringLiteral("source"),
        QStringLiteral("private"),
        QStringLiteral("created_at"),
        QStringLiteral("metadata"),
        QStringLiteral("user_id"),
        QStringLiteral("agent_id"),
        QStringLiteral("run_id"),
    };
    return fields;
}

QString text(const Json &value)
{
    return QString::fromStdString(value.get<std::string>());
}

} // namespace

MemoryInputParser::MemoryInputParser(RememberOptions defaults, MemoryConfig config)
    : m_defaults(std::move(defaults)), m_config(std::move(config))
{
}

bool MemoryInputParser::isJsonLines(const InputLines &input)
{
    for (const InputLines::Line &line : input.lines()) {
        const QString t = line.text.trimmed();
        if (!t.isEmpty())
            return t.startsWith(QLatin1Char('{'));
    }
    return false;
}

QList<MemoryInput> MemoryInputParser::parse(const InputLines &input) const
{
    const bool jsonLines = isJsonLines(input);
    QList<MemoryInput> items;
    items.reserve(input.lines().size());
    for (const InputLines::Line &line : input.lines()) {
        if (line.text.trimmed().isEmpty())
            continue;
        MemoryInput item = jsonLines ? parseJsonLine(input, line) : plainLine(input, line);
        check(input, line, item);
        items.append(std::move(item));
    }
    return items;
}

MemoryInput MemoryInputParser::plainLine(const InputLines &, const InputLines::Line &line) const
{
    MemoryInput item;
    item.content = line.text.trimmed();
    item.options = m_defaults;
    return item;
}

MemoryInput MemoryInputParser::parseJsonLine(const InputLines &input, const InputLines::Line &line) const
{
    auto fail = [&](const QString &what) -> void {
        throw Error(ErrorKind::InvalidArgument, input.where(line, what) + QStringLiteral(" (nothing was stored)"));
    };

    Json j;
    const QString problem = readJson(line.text.toStdString(), &j);
    if (!problem.isEmpty())
        fail(QStringLiteral("not valid JSON (%1); every line of JSON Lines input must be one JSON object").arg(problem));
    if (!j.is_object())
        fail(QStringLiteral("expected a JSON object such as {\"content\": \"...\"}"));
    for (auto it = j.begin(); it != j.end(); ++it) {
        const QString key = QString::fromStdString(it.key());
        if (!knownFields().contains(key))
            fail(QStringLiteral("unknown field %1; the fields are %2").arg(Error::quoted(key), knownFields().join(QStringLiteral(", "))));
    }

    MemoryInput item;
    item.options = m_defaults;
    if (!j.contains("content") || !j["content"].is_string())
        fail(QStringLiteral("\"content\" is missing or not a string"));
    item.content = text(j["content"]).trimmed();

    auto present = [&](const char *field) { return j.contains(field) && !j[field].is_null(); };
    if (present("scope")) {
        if (!j["scope"].is_string())
            fail(QStringLiteral("\"scope\" must be a string such as \"/project/alpha\""));
        try {
            item.options.scope = CliArguments::normalizedScope(text(j["scope"]), QStringLiteral("\"scope\""));
        } catch (const Error &e) {
            fail(e.message());
        }
    }
    if (present("categories")) {
        if (!j["categories"].is_array())
            fail(QStringLiteral("\"categories\" must be an array of strings"));
        QStringList categories;
        for (const Json &c : j["categories"]) {
            if (!c.is_string() || text(c).trimmed().isEmpty())
                fail(QStringLiteral("\"categories\" must be an array of non-empty strings"));
            categories.append(text(c).trimmed());
        }
        item.options.categories = categories;
    }
    if (present("importance")) {
        const Json &v = j["importance"];
        if (!v.is_number())
            fail(QStringLiteral("\"importance\" must be a number between 0 and 1"));
        item.options.importance = v.get<double>();
    }
    if (j.contains("source")) {
        if (j["source"].is_null())
            item.options.source.clear();
        else if (j["source"].is_string())
            item.options.source = text(j["source"]).trimmed();
        else
            fail(QStringLiteral("\"source\" must be a string"));
    }
    if (present("private")) {
        if (!j["private"].is_boolean())
            fail(QStringLiteral("\"private\" must be true or false"));
        item.options.isPrivate = j["private"].get<bool>();
    }
    if (present("created_at")) {
        const QDateTime t = j["created_at"].is_string() ? fromIso(text(j["created_at"])) : QDateTime();
        if (!t.isValid())
            fail(QStringLiteral("\"created_at\" must be an ISO 8601 date or time such as \"2024-05-01T12:00:00Z\""));
        item.options.createdAt = t;
    }
    for (auto [key, field] : {std::pair{"user_id", &RememberOptions::userId}, std::pair{"agent_id", &RememberOptions::agentId},
                              std::pair{"run_id", &RememberOptions::runId}}) {
        if (!present(key))
            continue;
        if (!j[key].is_string())
            fail(QStringLiteral("\"%1\" must be a string").arg(QLatin1String(key)));
        item.options.*field = text(j[key]);
    }
    if (present("metadata")) {
        if (!j["metadata"].is_object())
            fail(QStringLiteral("\"metadata\" must be a JSON object"));
        Json merged = item.options.metadata.is_object() ? item.options.metadata : Json::object();
        merged.update(j["metadata"]);
        item.options.metadata = merged;
    }
    return item;
}

void MemoryInputParser::check(const InputLines &input, const InputLines::Line &line, const MemoryInput &item) const
{
    try {
        Memory::checkInput(item, m_config);
    } catch (const Error &e) {
        throw Error(e.kind(), input.where(line, e.message() + QStringLiteral(" (nothing was stored)")));
    }
}

} // namespace mneme::cli
