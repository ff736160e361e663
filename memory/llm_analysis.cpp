#include "memory/llm_analysis_p.h"

#include "memory/analysis_call_p.h"
#include <mneme/core/scope_path.h>

#include <QSet>
#include <cmath>

namespace mneme::LlmAnalysis {

namespace {

Json stringArray() { return Json{{"type", "array"}, {"items", {{"type", "string"}}}}; }

QString listText(const QStringList &items)
{
    if (items.isEmpty())
        return QStringLiteral("(none)");
    QStringList quoted;
    for (const QString &i : items)
        quoted << QLatin1Char('"') + i + QLatin1Char('"');
    return quoted.join(QStringLiteral(", "));
}

QString str(const Json &j, const char *key)
{
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
        return {};
    return QString::fromStdString(j[key].get<std::string>()).trimmed();
}

// The strings of j[key] (strings only, trimmed, blank and repeated ones dropped); `present` tells
// whether the key held a list at all.
QStringList strings(const Json &j, const char *key, bool *present = nullptr)
{
    QStringList out;
    const bool ok = j.is_object() && j.contains(key) && j[key].is_array();
    if (present)
        *present = ok;
    if (!ok)
        return out;
    for (const Json &e : j[key]) {
        QString s;
        if (e.is_string())
            s = QString::fromStdString(e.get<std::string>());
        else if (e.is_object())
            s = str(e, "text").isEmpty() ? str(e, "fact") : str(e, "text"); // {"text": ...} items some models send
        s = s.trimmed();
        if (!s.isEmpty() && !out.contains(s))
            out << s;
    }
    return out;
}

Json stringsJson(const QStringList &list)
{
    Json a = Json::array();
    for (const QString &s : list)
        a.push_back(s.toStdString());
    return a;
}

} // namespace

QString relativeScope(const QString &root, const QString &scope)
{
    if (root.isEmpty() || root == QLatin1String("/"))
        return scope;
    if (scope == root)
        return QStringLiteral("/");
    if (ScopePath::contains(root, scope))
        return scope.mid(root.size());
    return scope;
}

QStringList scopesForPrompt(StorageBackend &storage, const QString &base, const QStringList &tops, const RecordFilter &visible,
                            int max)
{
    QStringList out;
    for (const QString &top : tops) {
        out << relativeScope(base, top);
        for (const QString &child : storage.childScopes(top, visible))
            out << relativeScope(base, child);
        if (out.size() >= max)
            break;
    }
    out.removeDuplicates();
    return out.mid(0, max);
}

QString clampScope(const QString &root, const QString &suggested)
{
    const QString base = root.isEmpty() ? QStringLiteral("/") : root;
    QStringList parts;
    for (QString seg : suggested.split(QLatin1Char('/'))) {
        seg = seg.trimmed();
        if (seg.isEmpty() || seg == QLatin1String(".") || seg == QLatin1String(".."))
            continue;
        bool bad = false;
        for (const QChar c : seg)
            bad = bad || c.category() == QChar::Other_Control || c == QLatin1Char('\\');
        if (!bad)
            parts << seg;
    }
    QString inner = QLatin1Char('/') + parts.join(QLatin1Char('/'));
    // A model that repeats the full path it was shown ("/crew/a/project" under root "/crew/a").
    if (base != QLatin1String("/") && ScopePath::isValid(inner) && ScopePath::contains(base, inner))
        inner = relativeScope(base, inner);
    // A path the caller could not give (too deep, too long once under the root) is none.
    const QString joined = base == QLatin1String("/") ? inner : (inner == QLatin1String("/") ? base : base + inner);
    if (!ScopePath::isValid(inner) || !ScopePath::isValid(joined))
        return base;
    return ScopePath::normalize(joined);
}

// ---------------------------------------------------------------------------------------------
// Save analysis

ChatRequest saveRequest(const QString &content, const QStringList &existingScopes, const QStringList &existingCategories)
{
    const QString system = QStringLiteral(
        "You file notes into a long-term memory organised as a tree of scopes (paths such as /project/backend). "
        "For the note you are given, decide:\n"
        "- scope: where it belongs. Prefer one of the existing scopes when it fits; otherwise propose a short new "
        "path of lowercase words joined by hyphens. Use / when the note is general.\n"
        "- categories: one to three short labels. Reuse existing category names, spelled exactly as listed, when "
        "they apply.\n"
        "- importance: a number from 0 to 1. Around 0.5 for an ordinary fact; higher for decisions, commitments, "
        "constraints, deadlines and facts that will matter later; lower for passing remarks.\n"
        "- metadata: the people, organisations, products and places named (entities), the dates and times "
        "mentioned as written (dates) and the subjects (topics).\n"
        "Answer with JSON only.");
    const QString user = QStringLiteral("Note:\n%1\n\nExisting scopes: %2\nExisting categories: %3")
                             .arg(content, listText(existingScopes), listText(existingCategories));
    const Json schema = {
        {"type", "object"},
        {"properties",
         {{"scope", {{"type", "string"}}},
          {"categories", stringArray()},
          {"importance", {{"type", "number"}}},
          {"metadata",
           {{"type", "object"},
            {"properties", {{"entities", stringArray()}, {"dates", stringArray()}, {"topics", stringArray()}}}}}}}};
    return structuredRequest(system, user, schema, QStringLiteral("memory_analysis"));
}

std::optional<SaveAnalysis> readSave(const Json &reply)
{
    if (!reply.is_object())
        return std::nullopt;
    SaveAnalysis a;
    a.suggestedScope = str(reply, "scope");
    if (a.suggestedScope.isEmpty())
        a.suggestedScope = str(reply, "suggested_scope");
    if (a.suggestedScope.isEmpty())
        return std::nullopt;
    a.categories = strings(reply, "categories");
    if (a.categories.size() > 8)
        a.categories = a.categories.mid(0, 8);
    if (reply.contains("importance") && reply["importance"].is_number()) {
        const double v = reply["importance"].get<double>();
        if (std::isfinite(v))
            a.importance = std::clamp(v > 1 && v <= 10 ? v / 10 : v, 0.0, 1.0); // "7" on a 0..10 scale
    }
    const Json meta = reply.contains("metadata") ? reply["metadata"]
                                                 : (reply.contains("extracted_metadata") ? reply["extracted_metadata"] : Json());
    for (const char *key : {"entities", "dates", "topics"})
        a.metadata[key] = stringsJson(strings(meta, key));
    return a;
}

// ---------------------------------------------------------------------------------------------
// Consolidation

ChatRequest consolidationRequest(const QString &newContent, const std::vector<MemoryRecord> &similar)
{
    const QString system = QStringLiteral(
        "You keep a long-term memory free of duplicates and stale facts. A new note is about to be stored, and "
        "these stored memories resemble it. For each stored memory choose one action:\n"
        "- keep: it is still right and says something the new note does not.\n"
        "- update: it should absorb the new note; give its full rewritten text in new_content.\n"
        "- delete: the new note makes it wrong or obsolete, or it says nothing the new note does not.\n"
        "Then set insert_new: true when the new note still adds information after those actions, false when it "
        "is already covered (for example because you updated a memory to include it).\n"
        "When in doubt, keep. Change or remove a memory only for a clear contradiction, a newer version of the "
        "same fact, or a plain repetition. Refer to memories by the id shown. Answer with JSON only.");
    QStringList blocks;
    for (const MemoryRecord &r : similar) {
        QString c = r.content;
        if (c.size() > 400)
            c = c.left(400) + QStringLiteral("...");
        blocks << QStringLiteral("id: %1\nscope: %2\nimportance: %3\nstored: %4\ncontent: %5")
                      .arg(r.id, r.scope)
                      .arg(r.importance, 0, 'f', 2)
                      .arg(r.createdAt.toString(Qt::ISODate), c);
    }
    const QString user = QStringLiteral("New note:\n%1\n\nStored memories:\n%2").arg(newContent, blocks.join(QStringLiteral("\n\n")));
    const Json schema = {
        {"type", "object"},
        {"properties",
         {{"actions",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"action", {{"type", "string"}, {"enum", {"keep", "update", "delete"}}}},
                {"id", {{"type", "string"}}},
                {"new_content", {{"type", {"string", "null"}}}},
                {"reason", {{"type", "string"}}}}},
              {"required", {"action", "id"}}}}}},
          {"insert_new", {{"type", "boolean"}}},
          {"insert_reason", {{"type", "string"}}}}}};
    return structuredRequest(system, user, schema, QStringLiteral("consolidation_plan"));
}

std::optional<ConsolidationPlan> readConsolidation(const Json &reply, const std::vector<MemoryRecord> &similar)
{
    if (!reply.is_object())
        return std::nullopt;
    QSet<QString> known;
    for (const MemoryRecord &r : similar)
        known.insert(r.id);
    ConsolidationPlan plan;
    if (reply.contains("insert_new") && reply["insert_new"].is_boolean())
        plan.insertNew = reply["insert_new"].get<bool>();
    plan.insertReason = str(reply, "insert_reason");
    if (reply.contains("actions") && reply["actions"].is_array()) {
        for (const Json &a : reply["actions"]) {
            ConsolidationAction act;
            const QString kind = str(a, "action").toLower();
            act.recordId = str(a, "id").isEmpty() ? str(a, "record_id") : str(a, "id");
            act.newContent = str(a, "new_content");
            act.reason = str(a, "reason");
            if (!known.contains(act.recordId))
                continue; // an id the model made up touches nothing
            if (kind == QLatin1String("update") && !act.newContent.isEmpty())
                act.kind = ConsolidationAction::Kind::Update;
            else if (kind == QLatin1String("delete"))
                act.kind = ConsolidationAction::Kind::Delete;
            else
                act.kind = ConsolidationAction::Kind::Keep;
            plan.actions << act;
        }
    }
    return plan;
}

// ---------------------------------------------------------------------------------------------
// Extraction

ChatRequest extractionRequest(const QString &content)
{
    const QString system = QStringLiteral(
        "You turn a text into separate memories for later use. Write each memory as one sentence that makes "
        "sense on its own, without the text around it: name the people, things and places instead of using "
        "pronouns, and keep names, numbers, amounts and full dates (with the day) exactly as written.\n"
        "Capture decisions, facts, results, preferences, plans, lessons and observations, including personal "
        "details and life events mentioned in passing, and facts a question takes for granted. In a "
        "conversation, favour what people say about themselves.\n"
        "Leave out greetings, vague summaries, restatements of the task and repeats. Answer with JSON only: "
        "{\"memories\": [...]}, an empty list when nothing is worth keeping.");
    const Json schema = {{"type", "object"}, {"properties", {{"memories", stringArray()}}}, {"required", {"memories"}}};
    return structuredRequest(system, QStringLiteral("Text:\n%1").arg(content), schema, QStringLiteral("extracted_memories"));
}

std::optional<QStringList> readExtraction(const Json &reply)
{
    bool present = false;
    QStringList m = strings(reply, "memories", &present);
    if (!present && reply.is_array()) // a bare list
        m = strings(Json{{"memories", reply}}, "memories", &present);
    if (!present)
        return std::nullopt;
    return m;
}

// ---------------------------------------------------------------------------------------------
// Query analysis

ChatRequest queryRequest(const QString &query, const QStringList &availableScopes, const std::optional<ScopeInfo> &info,
                         const QDateTime &now)
{
    const QString system = QStringLiteral(
                               "You prepare a search of a long-term memory organised in scopes. For the request you are given, answer:\n"
                               "- keywords: the distinctive words and names to look for.\n"
                               "- scopes: which of the available scopes are worth searching; an empty list to search them all.\n"
                               "- complexity: \"simple\" when one lookup answers it, \"complex\" when it combines several facts or needs "
                               "reasoning across them.\n"
                               "- queries: one to three short search phrases suited to semantic search. For a short question, the "
                               "question itself; for a long request, one phrase per distinct thing worth looking up.\n"
                               "- time_filter: when the request limits itself to a period (\"last week\", \"since March\"), the earliest "
                               "date of that period in ISO 8601 (YYYY-MM-DD); otherwise null.\n"
                               "Today is %1. Answer with JSON only.")
                               .arg((now.isValid() ? now : QDateTime::currentDateTimeUtc()).toUTC().date().toString(Qt::ISODate));
    QString user = QStringLiteral("Request:\n%1\n\nAvailable scopes: %2").arg(query, listText(availableScopes));
    if (info)
        user += QStringLiteral("\nThe scope searched holds %1 memories; categories: %2")
                    .arg(info->recordCount)
                    .arg(listText(info->categories));
    const Json schema = {{"type", "object"},
                         {"properties",
                          {{"keywords", stringArray()},
                           {"scopes", stringArray()},
                           {"complexity", {{"type", "string"}}},
                           {"queries", stringArray()},
                           {"time_filter", {{"type", {"string", "null"}}}}}}};
    return structuredRequest(system, user, schema, QStringLiteral("query_analysis"));
}

std::optional<QueryAnalysis> readQuery(const Json &reply)
{
    if (!reply.is_object())
        return std::nullopt;
    QueryAnalysis a;
    a.keywords = strings(reply, "keywords");
    bool present = false;
    a.suggestedScopes = strings(reply, "scopes", &present);
    if (!present)
        a.suggestedScopes = strings(reply, "suggested_scopes");
    a.recallQueries = strings(reply, "queries", &present);
    if (!present)
        a.recallQueries = strings(reply, "recall_queries");
    if (a.recallQueries.size() > 3)
        a.recallQueries = a.recallQueries.mid(0, 3);
    a.complexity = str(reply, "complexity").toLower() == QLatin1String("complex") ? QStringLiteral("complex")
                                                                                  : QStringLiteral("simple");
    a.timeFilter = str(reply, "time_filter");
    return a;
}

// ---------------------------------------------------------------------------------------------
// Exploration

ChatRequest explorationRequest(const QString &query, const QStringList &excerpts)
{
    const QString system = QStringLiteral(
        "You help answer a request from a long-term memory. Given the request and the memories found so far, "
        "answer:\n"
        "- findings: in one or two sentences, what the memories say that bears on the request.\n"
        "- missing: in one short line, what the request needs that these memories do not say; an empty string "
        "when nothing is missing.\n"
        "- queries: up to three new search phrases that could find what is missing (other words, names, "
        "related facts); an empty list when nothing is missing.\n"
        "Answer with JSON only.");
    const QString found = excerpts.isEmpty() ? QStringLiteral("(none)") : excerpts.join(QStringLiteral("\n---\n"));
    const QString user = QStringLiteral("Request:\n%1\n\nMemories found:\n%2").arg(query, found);
    const Json schema = {
        {"type", "object"},
        {"properties", {{"findings", {{"type", "string"}}}, {"missing", {{"type", "string"}}}, {"queries", stringArray()}}}};
    return structuredRequest(system, user, schema, QStringLiteral("exploration"));
}

std::optional<Exploration> readExploration(const Json &reply)
{
    if (!reply.is_object())
        return std::nullopt;
    Exploration e;
    e.findings = str(reply, "findings");
    e.missing = str(reply, "missing");
    const QString lower = e.missing.toLower();
    if (lower == QLatin1String("none") || lower == QLatin1String("nothing") || lower == QLatin1String("n/a"))
        e.missing.clear();
    if (e.missing.size() > 200)
        e.missing = e.missing.left(200);
    e.refinedQueries = strings(reply, "queries");
    if (e.refinedQueries.size() > 3)
        e.refinedQueries = e.refinedQueries.mid(0, 3);
    return e;
}

} // namespace mneme::LlmAnalysis
