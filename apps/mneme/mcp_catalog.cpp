#include "mcp_catalog.h"

#include "source_view.h"

#include "runtime/json_rpc_p.h"
#include "runtime/mcp_protocol_p.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QUrl>

namespace mneme::cli {

namespace {

constexpr int kResourcePage = 100;
constexpr int kRecordsInScopeResource = 100;

// The JSON shapes the tools return (the CLI's --json shapes), as JSON Schema.
const char kSchemas[] = R"({
  "record": {
    "type": "object",
    "properties": {
      "id": {"type": "string"},
      "content": {"type": "string"},
      "scope": {"type": "string"},
      "categories": {"type": "array", "items": {"type": "string"}},
      "importance": {"type": "number"},
      "source": {"type": ["string", "null"]},
      "private": {"type": "boolean"},
      "metadata": {"type": "object"},
      "created_at": {"type": "string"},
      "updated_at": {"type": "string"},
      "last_accessed": {"type": "string"},
      "access_count": {"type": "integer"}
    },
    "required": ["id", "content", "scope", "categories", "importance", "source", "private", "metadata", "created_at", "updated_at"]
  },
  "match_extra": {
    "score": {"type": "number"},
    "signals": {"type": "object", "properties": {"semantic": {"type": "number"}, "keyword": {"type": "number"}, "recency": {"type": "number"}, "importance": {"type": "number"}}},
    "match_reasons": {"type": "array", "items": {"type": "string"}},
    "evidence_gaps": {"type": "array", "items": {"type": "string"}}
  },
  "history_entry": {
    "type": "object",
    "properties": {
      "event": {"enum": ["ADD", "UPDATE", "DELETE"]},
      "old_content": {"type": ["string", "null"]},
      "new_content": {"type": ["string", "null"]},
      "at": {"type": "string"}
    },
    "required": ["event", "old_content", "new_content", "at"]
  },
  "node": {
    "type": "object",
    "properties": {
      "path": {"type": "string"},
      "record_count": {"type": "integer"},
      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
    },
    "required": ["path", "record_count", "children"]
  },
  "info": {
    "type": "object",
    "properties": {
      "path": {"type": "string"},
      "record_count": {"type": "integer"},
      "categories": {"type": "array", "items": {"type": "string"}},
      "oldest_record": {"type": ["string", "null"]},
      "newest_record": {"type": ["string", "null"]},
      "child_scopes": {"type": "array", "items": {"type": "string"}}
    },
    "required": ["path", "record_count", "categories", "oldest_record", "newest_record", "child_scopes"]
  }
})";

const Json &schemas()
{
    static const Json s = Json::parse(kSchemas);
    return s;
}

Json stringOrList(const char *description)
{
    return Json{{"description", description},
                {"anyOf", Json::array({Json{{"type", "string"}}, Json{{"type", "array"}, {"items", {{"type", "string"}}}}})}};
}

Json objectSchema(Json properties, Json required = Json::array())
{
    Json s{{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
    if (!required.empty())
        s["required"] = std::move(required);
    return s;
}

struct ToolDefinition
{
    const char *name;
    const char *title;
    const char *description;
    Json input;
    Json output;
    bool readOnly;
    bool destructive;
    bool idempotent;
};

const std::vector<ToolDefinition> &definitions()
{
    static const std::vector<ToolDefinition> tools = [] {
        const Json &s = schemas();
        const Json id{{"type", "string"}, {"description", "The id of a record (from remember, recall or a resource)"}};
        const Json scope{{"type", "string"}, {"description", "A scope path such as /project/alpha (default /)"}};
        const Json where{{"type", "object"},
                         {"description", "Conditions on the records' metadata, all of which must hold: {\"key\": value} (equal), or "
                                         "{\"key\": {\"$ne\" | \"$gt\" | \"$gte\" | \"$lt\" | \"$lte\": value}}, "
                                         "{\"key\": {\"$in\" | \"$nin\": [values]}}, {\"key\": {\"$exists\": true}}"}};
        const auto identity = [](const char *who) {
            return Json{{"type", "string"},
                        {"description", QStringLiteral("Only records saved for this %1 (metadata %1_id)").arg(QLatin1String(who)).toStdString()}};
        };
        Json match = s["record"];
        for (auto it = s["match_extra"].begin(); it != s["match_extra"].end(); ++it)
            match["properties"][it.key()] = it.value();
        match["required"].push_back("score");
        Json node = s["node"];
        node["$defs"] = Json{{"node", s["node"]}};
        return std::vector<ToolDefinition>{
            {"remember", "Remember a fact",
             "Store one fact in long-term memory and return the stored record (or the identical one already stored). "
             "Give a self-contained statement: who, what, when. A field left out is inferred (by the LLM when the "
             "server has one configured).",
             objectSchema({{"content", {{"type", "string"}, {"description", "The fact, as one self-contained statement"}}},
                           {"scope", scope},
                           {"categories", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "Categories such as decision or preference"}}},
                           {"importance", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}, {"description", "0 (trivia) to 1 (critical)"}}},
                           {"private", {{"type", "boolean"}, {"description", "Visible only to this server's source"}}},
                           {"metadata", {{"type", "object"}, {"description", "Any JSON object stored with the record"}}},
                           {"created_at", {{"type", "string"}, {"description", "When it happened, ISO 8601 (default now)"}}}},
                          Json::array({"content"})),
             s["record"], false, false, false},
            {"recall", "Recall memories",
             "Search long-term memory: the records that best match the query, ranked by meaning, keywords, recency and "
             "importance, best first, each with its score and why it matched.",
             objectSchema({{"query", {{"type", "string"}, {"description", "What to look for, in plain words"}}},
                           {"scope", stringOrList("Only this scope and below; several scopes search them all (default: everything)")},
                           {"categories", stringOrList("Only records with one of these categories")},
                           {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10000}, {"description", "At most this many matches (default 10)"}}},
                           {"depth", {{"enum", Json::array({"shallow", "deep"})}, {"description", "shallow: one search; deep (default): also reads time phrases and, with an LLM, explores further"}}},
                           {"now", {{"type", "string"}, {"description", "Measure recency as of this ISO 8601 time (default now)"}}},
                           {"where", where},
                           {"min_relevance", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}, {"description", "The relevance floor of this recall (default: the configuration's min_relevance); 0 returns anything related at all"}}},
                           {"min_score", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}, {"description", "Only matches whose score is at least this"}}},
                           {"only_source", {{"type", "string"}, {"description", "Only records saved with this source"}}},
                           {"user_id", identity("user")},
                           {"agent_id", identity("agent")},
                           {"run_id", identity("run")}},
                          Json::array({"query"})),
             objectSchema({{"matches", {{"type", "array"}, {"items", match}}}}, Json::array({"matches"})), true, false, false},
            {"forget", "Forget records",
             "Delete every record that all the given conditions select (at least one): a scope and below, ids, "
             "categories, created before a time, metadata conditions, identities. Returns how many were deleted; they stay in their history.",
             objectSchema({{"scope", scope},
                           {"ids", stringOrList("Record ids")},
                           {"categories", stringOrList("Records with one of these categories")},
                           {"older_than", {{"type", "string"}, {"description", "Records created before this ISO 8601 time"}}},
                           {"where", where},
                           {"user_id", identity("user")},
                           {"agent_id", identity("agent")},
                           {"run_id", identity("run")}}),
             objectSchema({{"deleted", {{"type", "integer"}}}}, Json::array({"deleted"})), false, true, true},
            {"update", "Update a record",
             "Change one record: its content (embedded again), scope, categories (they replace the old ones), "
             "importance or metadata. The change is kept in its history. Returns the record.",
             objectSchema({{"id", id},
                           {"content", {{"type", "string"}}},
                           {"scope", scope},
                           {"categories", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                           {"importance", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}},
                           {"metadata", {{"type", "object"}}}},
                          Json::array({"id"})),
             s["record"], false, false, true},
            {"get", "Get a record", "Read one record by its id.", objectSchema({{"id", id}}, Json::array({"id"})), s["record"],
             true, false, true},
            {"history", "Record history",
             "Every change of one record, oldest first: ADD, UPDATE or DELETE with the content before and after.",
             objectSchema({{"id", id}}, Json::array({"id"})),
             objectSchema({{"entries", {{"type", "array"}, {"items", s["history_entry"]}}}}, Json::array({"entries"})), true, false, true},
            {"tree", "Scope tree",
             "The tree of scopes below a scope with how many records each holds (itself and below), max_depth levels "
             "deep (default 3), at most 20 children a scope.",
             objectSchema({{"scope", scope},
                           {"max_depth", {{"type", "integer"}, {"minimum", 0}, {"maximum", 100}, {"description", "Levels below the scope (default 3)"}}}}),
             node, true, false, true},
            {"info", "Scope statistics",
             "Statistics of one scope and everything below it: record count, categories, oldest and newest record, "
             "child scopes.",
             objectSchema({{"scope", scope}}), s["info"], true, false, true},
        };
    }();
    return tools;
}

const ToolDefinition *definition(const QString &name)
{
    for (const ToolDefinition &d : definitions())
        if (name == QLatin1String(d.name))
            return &d;
    return nullptr;
}

QStringList toolNames()
{
    QStringList names;
    for (const ToolDefinition &d : definitions())
        names << QLatin1String(d.name);
    return names;
}

[[noreturn]] void notFound(const QString &uri)
{
    throw McpProtocolError{JsonRpc::ResourceNotFound,
                           QStringLiteral("Resource not found: %1; resources/list shows the scopes, and "
                                          "mneme://record/ID reads a record whose id recall returned")
                               .arg(uri),
                           Json{{"uri", uri.toStdString()}}};
}

QString cursorOf(int offset)
{
    return QString::fromLatin1(QByteArray("scopes:" + QByteArray::number(offset)).toBase64(QByteArray::Base64UrlEncoding));
}

int offsetOf(const Json &params)
{
    if (!params.is_object() || !params.contains("cursor") || params["cursor"].is_null())
        return 0;
    bool ok = false;
    int offset = -1;
    if (params["cursor"].is_string()) {
        const QByteArray raw = QByteArray::fromBase64(QByteArray::fromStdString(params["cursor"].get<std::string>()),
                                                      QByteArray::Base64UrlEncoding);
        if (raw.startsWith("scopes:"))
            offset = raw.mid(7).toInt(&ok);
    }
    if (!ok || offset < 0)
        throw McpProtocolError{JsonRpc::InvalidParams, QStringLiteral("Invalid cursor: pass the nextCursor of the previous page as it was"), Json()};
    return offset;
}

} // namespace

McpCatalog::McpCatalog(SourceView &view) : m_view(view), m_operations(view) {}

QString McpCatalog::instructions()
{
    return QStringLiteral("Mneme is a long-term memory. Call recall before you answer anything the user or earlier "
                          "work may have told you, and remember to store each new fact, decision or preference as one "
                          "self-contained statement; scopes such as /project/alpha keep related memories together.");
}

QString McpCatalog::scopeUri(const QString &path)
{
    QStringList encoded;
    for (const QString &segment : ScopePath::segments(path))
        encoded << QString::fromLatin1(QUrl::toPercentEncoding(segment));
    return QStringLiteral("mneme://scope/") + encoded.join(QLatin1Char('/'));
}

Json McpCatalog::tools(const QString &protocolVersion) const
{
    const bool structured = Mcp::hasStructuredContent(protocolVersion);
    Json list = Json::array();
    for (const ToolDefinition &d : definitions()) {
        Json tool{{"name", d.name},
                  {"title", d.title},
                  {"description", d.description},
                  {"inputSchema", d.input},
                  {"annotations",
                   {{"title", d.title}, {"readOnlyHint", d.readOnly}, {"destructiveHint", d.destructive}, {"idempotentHint", d.idempotent}, {"openWorldHint", false}}}};
        if (structured)
            tool["outputSchema"] = d.output;
        list.push_back(std::move(tool));
    }
    return Json{{"tools", list}};
}

Json McpCatalog::runTool(const QString &name, const Json &arguments)
{
    if (name == QLatin1String("remember"))
        return m_operations.remember(arguments);
    if (name == QLatin1String("recall"))
        return Json{{"matches", m_operations.recall(arguments)}};
    if (name == QLatin1String("forget"))
        return m_operations.forget(arguments);
    if (name == QLatin1String("update"))
        return m_operations.update(arguments);
    if (name == QLatin1String("get"))
        return m_operations.get(arguments);
    if (name == QLatin1String("history"))
        return Json{{"entries", m_operations.history(arguments)}};
    if (name == QLatin1String("tree"))
        return m_operations.tree(arguments);
    return m_operations.info(arguments);
}

Json McpCatalog::callTool(const Json &params, const QString &protocolVersion)
{
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
        throw McpProtocolError{JsonRpc::InvalidParams, QStringLiteral("tools/call needs params {\"name\": TOOL, \"arguments\": {...}}"), Json()};
    const QString name = QString::fromStdString(params["name"].get<std::string>());
    if (!definition(name))
        throw McpProtocolError{JsonRpc::InvalidParams,
                               QStringLiteral("Unknown tool: %1; the tools are %2").arg(name, toolNames().join(QStringLiteral(", "))), Json()};
    const Json arguments = params.contains("arguments") ? params["arguments"] : Json::object();
    if (!arguments.is_object() && !arguments.is_null())
        throw McpProtocolError{JsonRpc::InvalidParams, QStringLiteral("the arguments of %1 must be a JSON object").arg(name), Json()};
    try {
        const Json value = runTool(name, arguments);
        Json result{{"content", Json::array({Json{{"type", "text"}, {"text", value.dump(-1, ' ', false, Json::error_handler_t::replace)}}})},
                    {"isError", false}};
        if (Mcp::hasStructuredContent(protocolVersion))
            result["structuredContent"] = value;
        return result;
    } catch (const std::exception &e) {
        // A failure of the operation is the tool's: the model reads it and can correct its call.
        return Json{{"content", Json::array({Json{{"type", "text"}, {"text", e.what()}}})}, {"isError", true}};
    }
}

Json McpCatalog::resources(const Json &params)
{
    const int offset = offsetOf(params);
    const QMap<QString, int> counts = m_view.scopeCounts(QStringLiteral("/"));
    QStringList scopes = counts.keys();
    if (!scopes.contains(QStringLiteral("/")))
        scopes.prepend(QStringLiteral("/"));
    Json list = Json::array();
    for (int i = offset; i < scopes.size() && i < offset + kResourcePage; ++i) {
        const QString &path = scopes[i];
        const int n = counts.value(path);
        list.push_back(Json{{"uri", scopeUri(path).toStdString()},
                            {"name", path.toStdString()},
                            {"title", QStringLiteral("Scope %1").arg(path).toStdString()},
                            {"description", QStringLiteral("%1 record%2 in %3 and below").arg(n).arg(n == 1 ? "" : "s").arg(path).toStdString()},
                            {"mimeType", "application/json"}});
    }
    Json result{{"resources", list}};
    if (offset + kResourcePage < scopes.size())
        result["nextCursor"] = cursorOf(offset + kResourcePage).toStdString();
    return result;
}

Json McpCatalog::resourceTemplates() const
{
    return Json{{"resourceTemplates",
                 Json::array({Json{{"uriTemplate", "mneme://scope/{+path}"},
                                   {"name", "scope"},
                                   {"title", "A scope of the memory"},
                                   {"description", "A scope's statistics and its newest 100 records, e.g. mneme://scope/project/alpha"},
                                   {"mimeType", "application/json"}},
                              Json{{"uriTemplate", "mneme://record/{id}"},
                                   {"name", "record"},
                                   {"title", "A record of the memory"},
                                   {"description", "One record by its id"},
                                   {"mimeType", "application/json"}}})}};
}

Json McpCatalog::readResource(const Json &params)
{
    if (!params.is_object() || !params.contains("uri") || !params["uri"].is_string())
        throw McpProtocolError{JsonRpc::InvalidParams, QStringLiteral("resources/read needs params {\"uri\": URI}"), Json()};
    const QString uri = QString::fromStdString(params["uri"].get<std::string>());
    const QUrl url(uri, QUrl::StrictMode);
    if (!url.isValid() || url.scheme() != QLatin1String("mneme"))
        notFound(uri);
    Json content;
    if (url.host() == QLatin1String("scope")) {
        QString problem;
        const QString raw = url.path(QUrl::FullyDecoded);
        if (!ScopePath::isValid(raw, &problem))
            notFound(uri);
        const QString path = ScopePath::normalize(raw);
        try {
            const ScopeInfo info = m_view.info(path);
            if (info.recordCount == 0 && path != QLatin1String("/"))
                notFound(uri); // a scope only other sources' private records use is not named either
            Json records = Json::array();
            for (const MemoryRecord &r : m_view.list(path, kRecordsInScopeResource, 0))
                records.push_back(r);
            content = Json{{"scope", info}, {"records", records}};
        } catch (const Error &e) {
            if (e.kind() != ErrorKind::InvalidArgument)
                throw;
            notFound(uri); // a path outside the memory's root scope
        }
    } else if (url.host() == QLatin1String("record")) {
        const QString id = url.path(QUrl::FullyDecoded).mid(1);
        const std::optional<MemoryRecord> r = id.isEmpty() ? std::nullopt : m_view.get(id);
        if (!r)
            notFound(uri);
        content = *r;
    } else {
        notFound(uri);
    }
    return Json{{"contents",
                 Json::array({Json{{"uri", uri.toStdString()},
                                   {"mimeType", "application/json"},
                                   {"text", content.dump(-1, ' ', false, Json::error_handler_t::replace)}}})}};
}

} // namespace mneme::cli
