// Mem0-style conversation ingestion: Memory::addConversation and its writer-thread stages.

#include "memory/conversation_ingest_p.h"

#include "memory/analysis_call_p.h"
#include "memory/memory_p.h"
#include "memory/statement_splitter_p.h"
#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>
#include <mneme/core/scope_path.h>

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QHash>
#include <QMap>
#include <QSet>
#include <algorithm>
#include <cmath>

namespace mneme {

namespace ConversationIngest {

namespace {

// Longest conversation id: the state key ("conversation:" + id) must stay within the storage's 200.
constexpr int kMaxConversationId = 180;
// Earlier messages and summaries are context, not the subject: long ones are cut in prompts.
constexpr int kContextChars = 2000;

QString str(const Json &j, std::initializer_list<const char *> keys)
{
    if (!j.is_object())
        return {};
    for (const char *key : keys) {
        const auto it = j.find(key);
        if (it != j.end() && it->is_string())
            return QString::fromStdString(it->get<std::string>()).trimmed();
    }
    return {};
}

// An id as models write it: "3", 3 or 3.0.
QString idOf(const Json &j)
{
    if (!j.is_object())
        return {};
    const auto it = j.find("id");
    if (it == j.end())
        return {};
    if (it->is_string())
        return QString::fromStdString(it->get<std::string>()).trimmed();
    if (it->is_number_integer())
        return QString::number(it->get<long long>());
    if (it->is_number_float()) {
        const double v = it->get<double>();
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
            return QString::number(qint64(v));
    }
    return {};
}

QString render(const ConversationMessage &m, int limit)
{
    QString who = m.role;
    if (!m.name.trimmed().isEmpty())
        who += QStringLiteral(" (%1)").arg(m.name.trimmed());
    QString text = m.content;
    if (limit > 0 && text.size() > limit)
        text = text.left(limit) + QStringLiteral("...");
    QString line = who + QStringLiteral(": ") + text;
    if (m.at.isValid())
        line = QStringLiteral("[%1] ").arg(m.at.toUTC().toString(QStringLiteral("yyyy-MM-dd"))) + line;
    return line;
}

QString renderAll(const QList<ConversationMessage> &messages, int limit)
{
    if (messages.isEmpty())
        return QStringLiteral("(none)");
    QStringList lines;
    for (const ConversationMessage &m : messages)
        lines << render(m, limit);
    return lines.join(QLatin1Char('\n'));
}

Json nullableString() { return Json{{"type", {"string", "null"}}}; }

Json changesSchema()
{
    // Only the list is required: a change missing a field is judged by the reader (an ADD without
    // text is skipped, a DELETE needs only its id), not refused as a whole reply.
    return Json{
        {"type", "object"},
        {"properties",
         {{"changes",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"event", {{"type", "string"}, {"description", "ADD, UPDATE, DELETE or NOOP"}}},
                {"id", {{"type", {"string", "integer", "null"}}, {"description", "the memory's id as shown; empty for ADD"}}},
                {"text", nullableString()},
                {"old_text", nullableString()}}}}}}}}},
        {"required", {"changes"}}};
}

QList<ConversationMessage> lastMessages(const QList<ConversationMessage> &all, int n)
{
    if (n <= 0)
        return {};
    return all.size() > n ? all.mid(all.size() - n) : all;
}

// The offline facts: the user messages' statements, each once.
QStringList offlineFacts(const QList<ConversationMessage> &messages)
{
    QStringList out;
    for (const ConversationMessage &m : messages) {
        if (m.role != QLatin1String("user"))
            continue;
        for (const QString &s : StatementSplitter::split(m.content))
            if (!out.contains(s))
                out << s;
    }
    return out;
}

bool toolsAvailable(Memory *q)
{
    try {
        const std::shared_ptr<LlmProvider> llm = q->llm();
        return llm && llm->supportsFunctionCalling();
    } catch (const std::exception &) {
        return false;
    }
}

QList<Decision> addEach(const QStringList &facts)
{
    QList<Decision> out;
    for (const QString &f : facts)
        out << Decision{QStringLiteral("ADD"), QString(), f, QString()};
    return out;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// State

QString stateKey(const Job &job)
{
    const QByteArray owner = QStringList{job.base.scope, job.base.source, job.base.isPrivate ? QStringLiteral("private") : QString(),
                                         job.conversationId}
                                 .join(QLatin1Char('\n'))
                                 .toUtf8();
    return QStringLiteral("conversation:")
         + QString::fromLatin1(QCryptographicHash::hash(owner, QCryptographicHash::Sha256).toHex().left(40));
}

int removeStates(StorageBackend &storage, const QString &scope)
{
    int removed = 0;
    for (const QString &key : storage.stateKeys(QStringLiteral("conversation:"))) {
        const State s = stateFromJson(storage.readState(key).value_or(Json()));
        if (s.scope.isEmpty() || ScopePath::contains(scope, s.scope)) {
            storage.writeState(key, Json());
            ++removed;
        }
    }
    return removed;
}

State stateFromJson(const Json &json)
{
    State s;
    if (!json.is_object())
        return s;
    s.conversationId = str(json, {"conversation_id"});
    s.scope = str(json, {"scope"});
    s.source = str(json, {"source"});
    s.isPrivate = json.value("private", false) == true;
    s.summary = str(json, {"summary"});
    const auto count = [&](const char *key) -> qint64 {
        const auto it = json.find(key);
        return it != json.end() && it->is_number_integer() ? std::max<qint64>(0, it->get<qint64>()) : 0;
    };
    if (const auto it = json.find("messages"); it != json.end() && it->is_array()) {
        for (const Json &m : *it) {
            ConversationMessage msg;
            msg.role = str(m, {"role"});
            msg.content = str(m, {"content"});
            msg.name = str(m, {"name"});
            msg.at = fromIso(str(m, {"at"}));
            if (!msg.role.isEmpty() && !msg.content.isEmpty())
                s.messages << msg;
        }
    }
    s.messageCount = std::max<qint64>(count("message_count"), s.messages.size());
    s.summarizedThrough = std::min(count("summarized_through"), s.messageCount);
    return s;
}

Json stateToJson(const State &state)
{
    Json messages = Json::array();
    for (const ConversationMessage &m : state.messages) {
        Json j = {{"role", m.role}, {"content", m.content}};
        if (!m.name.isEmpty())
            j["name"] = m.name;
        j["at"] = m.at.isValid() ? Json(toIso(m.at)) : Json(nullptr);
        messages.push_back(std::move(j));
    }
    return Json{{"conversation_id", state.conversationId},
                {"scope", state.scope},
                {"source", state.source},
                {"private", state.isPrivate},
                {"summary", state.summary},
                {"messages", std::move(messages)},
                {"message_count", state.messageCount},
                {"summarized_through", state.summarizedThrough}};
}

// ---------------------------------------------------------------------------------------------
// Prompts and readers

ChatRequest factsRequest(const QString &summary, const QList<ConversationMessage> &recent,
                         const QList<ConversationMessage> &fresh, const QDate &today)
{
    const QString system = QStringLiteral(
                               "You read a conversation between a user and an assistant and note the facts about the user that are "
                               "worth remembering in later conversations: likes, dislikes and preferences; personal details such as "
                               "names, relationships and important dates; plans and intentions; habits and routines; health; work and "
                               "studies; and the books, films, food, places and brands they mention caring about.\n"
                               "Rules:\n"
                               "- Facts come only from what the user says. Assistant and system messages help you understand the "
                               "user; they are never a source of facts.\n"
                               "- Take facts from the new messages only. The summary and the earlier messages are there to resolve "
                               "references such as \"it\" or \"that place\".\n"
                               "- Write each fact as one short sentence that makes sense on its own, naming what it is about.\n"
                               "- Write the facts in the language the user writes in.\n"
                               "- Today is %1; turn relative dates (\"tomorrow\", \"last week\") into dates.\n"
                               "- Greetings, small talk and general knowledge that says nothing about the user give an empty list.\n"
                               "Answer with JSON only, in the form {\"facts\": [\"...\"]}.")
                               .arg(today.toString(Qt::ISODate));
    QString context = summary.trimmed();
    if (context.isEmpty())
        context = QStringLiteral("(none)");
    else if (context.size() > kContextChars * 2)
        context = context.left(kContextChars * 2) + QStringLiteral("...");
    const QString user = QStringLiteral("Summary of the conversation so far:\n%1\n\nEarlier messages:\n%2\n\nNew messages:\n%3")
                             .arg(context, renderAll(recent, kContextChars), renderAll(fresh, 0));
    const Json schema = {{"type", "object"},
                         {"properties", {{"facts", {{"type", "array"}, {"items", {{"type", {"string", "object"}}}}}}}},
                         {"required", {"facts"}}};
    return structuredRequest(system, user, schema, QStringLiteral("conversation_facts"));
}

std::optional<QStringList> readFacts(const Json &reply)
{
    if (!reply.is_object())
        return std::nullopt;
    auto list = reply.find("facts");
    if (list == reply.end() || !list->is_array())
        list = reply.find("memories");
    if (list == reply.end() || !list->is_array())
        return std::nullopt;
    QStringList out;
    for (const Json &e : *list) {
        QString f;
        if (e.is_string())
            f = QString::fromStdString(e.get<std::string>()).trimmed();
        else
            f = str(e, {"fact", "text"}); // {"fact": ...} / {"text": ...} items some models send
        if (!f.isEmpty() && !out.contains(f))
            out << f;
    }
    return out;
}

ChatRequest updateRequest(const QStringList &facts, const QList<Candidate> &candidates, bool viaTool)
{
    const QString system = QStringLiteral(
        "You keep a long-term memory about a user complete, current and free of repeats. You are given the "
        "stored memories that resemble some new facts, each under a short id, and the new facts from a "
        "conversation. For each new fact choose one event:\n"
        "- ADD: no stored memory holds this information. Give the fact as text and no id.\n"
        "- UPDATE: a stored memory is about the same thing and the fact adds to it or changes it. Give that "
        "memory's id, its complete new text in text (keep every detail of the old memory that still holds, so "
        "the new text says at least as much as before) and its current text in old_text. A changed preference "
        "or a changed plan is an UPDATE of the old memory (\"Likes tea\" becomes \"Used to like tea, now prefers "
        "coffee\"), never a DELETE and an ADD.\n"
        "- DELETE: the new information shows a stored memory is no longer true and nothing should take its "
        "place (a cancelled plan, a statement taken back). Give its id.\n"
        "- NOOP: a stored memory already says this, with the same meaning or more. Give its id.\n"
        "Refer to stored memories only by the ids shown, and use each id at most once. Write new text in the "
        "language of the facts.");
    Json stored = Json::array();
    for (const Candidate &c : candidates)
        stored.push_back(Json{{"id", c.id}, {"text", c.text}});
    QStringList factLines;
    for (const QString &f : facts)
        factLines << QStringLiteral("- ") + f;
    QString user = QStringLiteral("Stored memories:\n%1\n\nNew facts:\n%2\n\n")
                       .arg(candidates.isEmpty() ? QStringLiteral("(none)") : QString::fromStdString(stored.dump(2)),
                            factLines.join(QLatin1Char('\n')));
    ChatRequest r;
    if (viaTool) {
        user += QStringLiteral("Record the changes by calling %1.").arg(QLatin1String(UpdateTool));
        r.messages = {ChatMessage::system(system), ChatMessage::user(user)};
        r.tools = {ToolSpec{QLatin1String(UpdateTool),
                            QStringLiteral("Records what to do with the memory for each new fact: ADD, UPDATE, DELETE or NOOP."),
                            changesSchema()}};
        r.toolChoice = QLatin1String(UpdateTool);
        r.parallelToolCalls = false;
        return r;
    }
    user += QStringLiteral("Answer with JSON only, in the form {\"changes\": [{\"event\": \"ADD\", \"id\": \"\", "
                           "\"text\": \"...\", \"old_text\": \"\"}]}.");
    return structuredRequest(system, user, changesSchema(), QStringLiteral("conversation_update"));
}

std::optional<QList<Decision>> readDecisions(const Json &reply)
{
    const Json *list = nullptr;
    if (reply.is_array()) {
        list = &reply;
    } else if (reply.is_object()) {
        for (const char *key : {"changes", "memory", "memories"}) { // "memory": Mem0's own shape
            const auto it = reply.find(key);
            if (it != reply.end() && it->is_array()) {
                list = &*it;
                break;
            }
        }
    }
    if (!list)
        return std::nullopt;
    QList<Decision> out;
    for (const Json &e : *list) {
        if (!e.is_object())
            continue;
        Decision d;
        d.event = str(e, {"event", "action", "operation"}).toUpper();
        if (d.event == QLatin1String("NONE") || d.event == QLatin1String("NO-OP") || d.event == QLatin1String("NO_OP"))
            d.event = QStringLiteral("NOOP");
        d.id = idOf(e);
        d.text = str(e, {"text", "memory", "content"});
        d.oldText = str(e, {"old_text", "old_memory"});
        if (!d.event.isEmpty())
            out << d;
    }
    return out;
}

std::optional<QList<Decision>> readDecisions(const ChatResponse &response, bool viaTool)
{
    if (!viaTool)
        return readDecisions(response.structured);
    std::optional<QList<Decision>> all;
    for (const ToolCall &call : response.toolCalls) {
        Json args = call.arguments;
        if (args.is_object() && args.contains("_raw") && args["_raw"].is_string()) {
            try {
                args = JsonReply::extract(QString::fromStdString(args["_raw"].get<std::string>()));
            } catch (const std::exception &) {
                continue;
            }
        }
        if (auto got = readDecisions(args)) {
            if (!all)
                all.emplace();
            *all += *got;
        }
    }
    if (all || response.text.trimmed().isEmpty())
        return all;
    // A model that answered in text instead of calling the tool.
    try {
        return readDecisions(JsonReply::extract(response.text));
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

ChatRequest summaryRequest(const QString &previous, const QList<ConversationMessage> &messages)
{
    const QString system = QStringLiteral(
        "You keep a short running summary of a conversation, so that later messages can be understood "
        "without the whole conversation. Merge the previous summary and the new messages into one updated "
        "summary: the topics, what the user said about themselves, decisions, plans and open questions. Keep "
        "what still matters from the previous summary, drop what the new messages made obsolete, stay under "
        "200 words and write in the language of the conversation. Answer with JSON only, in the form "
        "{\"summary\": \"...\"}.");
    const QString user = QStringLiteral("Previous summary:\n%1\n\nNew messages:\n%2")
                             .arg(previous.trimmed().isEmpty() ? QStringLiteral("(none)") : previous.trimmed(),
                                  renderAll(messages, kContextChars));
    const Json schema = {{"type", "object"}, {"properties", {{"summary", {{"type", "string"}}}}}, {"required", {"summary"}}};
    return structuredRequest(system, user, schema, QStringLiteral("conversation_summary"));
}

std::optional<QString> readSummary(const Json &reply)
{
    const QString s = str(reply, {"summary"});
    if (s.isEmpty())
        return std::nullopt;
    return s;
}

// ---------------------------------------------------------------------------------------------
// The writer-thread stages

ConversationResult ingest(MemoryPrivate &d, const Job &job, Ticket &ticket)
{
    Memory *q = d.q;
    const MemoryRecord &base = job.base;
    ConversationResult result;
    const QString key = stateKey(job);
    State state = stateFromJson(d.storage->readState(key).value_or(Json()));

    // 1. Candidate facts: from the LLM, or the user's statements split offline.
    const bool llmConfigured = d.llmConfigured();
    std::optional<QStringList> facts;
    QString why;
    if (llmConfigured) {
        AnalysisCall call(q, AnalysisStep::Facts);
        call.start(factsRequest(state.summary, lastMessages(state.messages, job.recent), job.messages, QDateTime::currentDateTimeUtc().date()));
        facts = call.read(readFacts, QStringLiteral("the facts reply has no list of facts"), &why);
    } else {
        why = QStringLiteral("no LLM is configured");
    }
    const bool llmFacts = facts.has_value();
    if (llmFacts) {
        reportAnalysis(q, AnalysisStep::Facts, AnalysisPath::Llm);
    } else {
        facts = offlineFacts(job.messages);
        reportAnalysis(q, AnalysisStep::Facts, AnalysisPath::Offline, why, llmConfigured);
    }
    result.facts = *facts;
    result.path = QLatin1String(llmFacts ? AnalysisPath::Llm : AnalysisPath::Offline);

    if (!result.facts.isEmpty()) {
        // 2. One embedding call for every fact.
        const std::vector<Embedding> factVectors = d.embedAll(result.facts);

        // 3. The decision: the LLM's, over the s most similar memories of the same source and
        //    privacy (decision 6) under small ids; or, offline, every fact added.
        QList<Decision> decisions;
        QHash<QString, MemoryRecord> byShortId;
        if (!llmFacts) {
            decisions = addEach(result.facts);
            reportAnalysis(q, AnalysisStep::Update, AnalysisPath::Offline, why);
        } else {
            RecordFilter filter;
            if (base.scope != QLatin1String("/"))
                filter.scopes << base.scope;
            filter.onlySource = base.source;
            filter.metadata = MemoryPrivate::sameIdentity(base.metadata); // another user's memories are not candidates
            // Oversampled: records of another source or privacy are skipped after the search.
            const int searchLimit = int(std::min<qint64>(qint64(job.similar) * 4, 10000));
            QList<Candidate> shown;
            QSet<QString> seen;
            for (size_t k = 0; k < factVectors.size(); ++k) {
                int taken = 0;
                for (ScoredRecord &s : d.storage->search(factVectors[k], filter, searchLimit)) {
                    if (taken >= job.similar)
                        break;
                    if (s.record.source != base.source || s.record.isPrivate != base.isPrivate || !(s.score > 0))
                        continue;
                    ++taken;
                    if (seen.contains(s.record.id))
                        continue; // one entry per memory across facts
                    seen.insert(s.record.id);
                    const QString shortId = QString::number(shown.size());
                    shown << Candidate{shortId, s.record.content};
                    s.record.embedding.clear();
                    byShortId.insert(shortId, std::move(s.record));
                }
            }
            if (shown.isEmpty()) {
                // Nothing to compare with: every fact is new, no call needed.
                decisions = addEach(result.facts);
                reportAnalysis(q, AnalysisStep::Update, AnalysisPath::Skipped, QStringLiteral("no similar memory is stored"));
            } else {
                const bool viaTool = toolsAvailable(q);
                AnalysisCall call(q, AnalysisStep::Update);
                call.start(updateRequest(result.facts, shown, viaTool));
                std::optional<QList<Decision>> got;
                QString updateWhy;
                if (call.wait()) {
                    got = readDecisions(call.response(), viaTool);
                    if (!got)
                        updateWhy = QStringLiteral("the update reply has no list of changes");
                } else {
                    updateWhy = call.failure();
                }
                if (got) {
                    decisions = *got;
                    reportAnalysis(q, AnalysisStep::Update, AnalysisPath::Llm);
                } else {
                    // The offline rule: add every fact unless an identical record exists.
                    decisions = addEach(result.facts);
                    byShortId.clear();
                    result.path = QLatin1String(AnalysisPath::Offline);
                    reportAnalysis(q, AnalysisStep::Update, AnalysisPath::Offline, updateWhy, true);
                }
            }
        }

        // 4. Resolve the decisions. The first change of a memory wins; unknown ids are ignored, so the
        //    LLM can only touch the memories it was shown.
        const QDateTime now = nowUtc();
        QDateTime createdAt = base.createdAt;
        for (const ConversationMessage &m : job.messages)
            if (!base.createdAt.isValid() && m.at.isValid() && (!createdAt.isValid() || m.at > createdAt))
                createdAt = m.at.toUTC();
        if (!createdAt.isValid())
            createdAt = now;
        // Only an update or a delete claims a record: the first one wins. A NOOP claims nothing, so a
        // later change of the same record from another fact still applies; an update pre-empted by an
        // earlier one is stored as a new memory instead of being lost.
        QSet<QString> claimed;
        QSet<QString> noted; // records already reported as NOOP
        QSet<QString> addedTexts;
        std::vector<MemoryRecord> adds, updates;
        QStringList deletes;
        const auto noop = [&](const MemoryRecord &r) {
            if (!noted.contains(r.id)) {
                noted.insert(r.id);
                result.changes << ConversationChange{QStringLiteral("NOOP"), r.id, r.content, QString()};
            }
        };
        const auto add = [&](const QString &text) {
            if (text.isEmpty() || addedTexts.contains(text))
                return;
            if (text.size() > d.config.maxContentChars) {
                qCWarning(lcMemory) << "conversation ingestion skipped a fact over max_content_chars";
                return;
            }
            addedTexts.insert(text);
            if (auto same = d.storage->findExact(text, base.scope, base.source, base.isPrivate)) {
                noop(*same);
                return;
            }
            MemoryRecord r = base;
            r.id = MemoryRecord::create(QString()).id;
            r.content = text;
            r.createdAt = createdAt;
            r.updatedAt = now;
            r.lastAccessed = now;
            r.accessCount = 0;
            r.embedding.clear();
            result.changes << ConversationChange{QStringLiteral("ADD"), r.id, text, QString()};
            adds.push_back(std::move(r));
        };
        for (const Decision &dec : std::as_const(decisions)) {
            const QString text = dec.text.trimmed();
            if (dec.event == QLatin1String("ADD")) {
                add(text);
                continue;
            }
            const bool update = dec.event == QLatin1String("UPDATE");
            const bool remove = dec.event == QLatin1String("DELETE");
            if (!update && !remove && dec.event != QLatin1String("NOOP")) {
                qCInfo(lcMemory).noquote() << QStringLiteral("conversation ingestion ignored an unknown event \"%1\"").arg(dec.event);
                continue;
            }
            const auto target = byShortId.constFind(dec.id);
            if (target == byShortId.constEnd()) {
                qCInfo(lcMemory).noquote()
                    << QStringLiteral("conversation ingestion ignored a %1 of unknown memory id \"%2\"").arg(dec.event, dec.id);
                continue;
            }
            const MemoryRecord &old = *target;
            if (!update && !remove) {
                if (!claimed.contains(old.id))
                    noop(old);
                continue;
            }
            if (claimed.contains(old.id)) {
                if (update)
                    add(text);
                continue;
            }
            if (update) {
                if (text.isEmpty() || text.size() > d.config.maxContentChars)
                    continue;
                // Keep the richer content: a rewrite that only drops words is no update.
                if (text == old.content || (text.size() < old.content.size() && old.content.contains(text, Qt::CaseInsensitive))) {
                    noop(old);
                    continue;
                }
                claimed.insert(old.id);
                MemoryRecord r = old; // same id, scope, source, privacy and created_at
                r.content = text;
                r.updatedAt = now;
                r.lastAccessed = now;
                result.changes << ConversationChange{QStringLiteral("UPDATE"), r.id, text, old.content};
                updates.push_back(std::move(r));
            } else {
                claimed.insert(old.id);
                deletes << old.id;
                result.changes << ConversationChange{QStringLiteral("DELETE"), old.id, old.content, QString()};
            }
        }

        // 5. Vectors for new texts (a fact's own is reused), in one call; then the writes.
        QStringList texts;
        std::vector<MemoryRecord *> needing;
        for (auto *list : {&adds, &updates}) {
            for (MemoryRecord &r : *list) {
                const qsizetype fact = result.facts.indexOf(r.content);
                if (fact >= 0) {
                    r.embedding = factVectors[size_t(fact)];
                } else {
                    texts << r.content;
                    needing.push_back(&r);
                }
            }
        }
        if (!texts.isEmpty()) {
            std::vector<Embedding> vectors = d.embedAll(texts);
            for (size_t k = 0; k < needing.size(); ++k)
                needing[k]->embedding = std::move(vectors[k]);
        }
        if (!deletes.isEmpty()) {
            RecordFilter f;
            f.ids = deletes;
            d.storage->remove(f);
            if (d.graph)
                d.graph->remove(deletes);
        }
        if (!updates.empty() || !adds.empty())
            d.ensureBound();
        for (const MemoryRecord &r : updates)
            d.storage->update(r);
        if (!adds.empty())
            d.storage->save(adds);
        if (d.graph) {
            d.graph->replace(updates);
            d.graph->add(adds);
        }
    } else {
        reportAnalysis(q, AnalysisStep::Update, AnalysisPath::Skipped, QStringLiteral("no facts were found"));
    }

    // 6. The new messages join the window of recent messages; the summary follows in its own task.
    ticket.firstIndex = state.messageCount;
    state.conversationId = job.conversationId;
    state.scope = base.scope;
    state.source = base.source;
    state.isPrivate = base.isPrivate;
    state.messages += job.messages;
    state.messages = lastMessages(state.messages, job.recent);
    state.messageCount += job.messages.size();
    d.storage->writeState(key, stateToJson(state));
    ticket.ingested = true;
    return result;
}

void refreshSummary(MemoryPrivate &d, const Job &job, const Ticket &ticket)
{
    if (!ticket.ingested)
        return; // the ingestion failed: it reported that already
    Memory *q = d.q;
    try {
        if (!d.llmConfigured()) {
            reportAnalysis(q, AnalysisStep::Summary, AnalysisPath::Skipped, QStringLiteral("no LLM is configured"));
            return;
        }
        const QString key = stateKey(job);
        const State state = stateFromJson(d.storage->readState(key).value_or(Json()));
        // The messages the summary does not cover yet that are still known: the stored window, and
        // this call's own (the window may be shorter than the call).
        QMap<qint64, ConversationMessage> pending;
        const qint64 windowStart = state.messageCount - state.messages.size();
        for (qsizetype i = 0; i < state.messages.size(); ++i)
            if (windowStart + i >= state.summarizedThrough)
                pending.insert(windowStart + i, state.messages[i]);
        for (qsizetype i = 0; i < job.messages.size(); ++i) {
            const qint64 index = ticket.firstIndex + i;
            if (index >= state.summarizedThrough && index < state.messageCount)
                pending.insert(index, job.messages[i]);
        }
        if (pending.isEmpty())
            return;
        AnalysisCall call(q, AnalysisStep::Summary);
        call.start(summaryRequest(state.summary, pending.values()));
        QString why;
        std::optional<QString> summary = call.read(
            readSummary,
            QStringLiteral("the summary reply has no summary"), &why);
        if (!summary) {
            reportAnalysis(q, AnalysisStep::Summary, AnalysisPath::Defaults, why + QStringLiteral("; the previous summary is kept"), true);
            return;
        }
        // Read again: another process sharing the store may have added messages meanwhile.
        State updated = stateFromJson(d.storage->readState(key).value_or(Json()));
        updated.summary = *summary;
        updated.summarizedThrough = std::min(updated.messageCount, std::max(updated.summarizedThrough, state.messageCount));
        d.storage->writeState(key, stateToJson(updated));
        reportAnalysis(q, AnalysisStep::Summary, AnalysisPath::Llm);
    } catch (const std::exception &e) {
        qCWarning(lcMemory).noquote() << QStringLiteral("the summary of conversation \"%1\" was not refreshed: %2")
                                             .arg(job.conversationId, QString::fromUtf8(e.what()));
    }
}

} // namespace ConversationIngest

// ---------------------------------------------------------------------------------------------
// Memory::addConversation

QFuture<ConversationResult> Memory::addConversation(const QList<ConversationMessage> &messages,
                                                    const AddConversationOptions &options)
{
    using namespace ConversationIngest;
    d->checkWritable("addConversation");
    Job job;
    job.conversationId = options.conversationId.trimmed();
    if (job.conversationId.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("addConversation needs a conversation id (AddConversationOptions::conversationId): "
                                   "it keys the conversation's summary and recent messages; use one id per conversation"));
    bool printable = job.conversationId.size() <= kMaxConversationId;
    for (const QChar c : std::as_const(job.conversationId))
        printable = printable && c.category() != QChar::Other_Control;
    if (!printable)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the conversation id must be at most %1 printable characters; use a shorter id such "
                                   "as a UUID")
                        .arg(kMaxConversationId));
    if (messages.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("addConversation needs at least one message, for example the user's message and "
                                   "the assistant's reply"));
    for (qsizetype i = 0; i < messages.size(); ++i) {
        ConversationMessage m = messages[i];
        m.role = m.role.trimmed().toLower();
        if (m.role != QLatin1String("user") && m.role != QLatin1String("assistant") && m.role != QLatin1String("system"))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("message %1 has the role \"%2\"; use \"user\", \"assistant\" or \"system\"")
                            .arg(i + 1)
                            .arg(messages[i].role));
        m.content = m.content.trimmed();
        if (m.content.isEmpty())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("message %1 (%2) is blank; give its text or leave it out").arg(i + 1).arg(m.role));
        m.name = m.name.trimmed();
        if (m.at.isValid())
            m.at = m.at.toUTC();
        job.messages << m;
    }
    job.recent = options.recentMessages.value_or(d->config.conversationRecentMessages);
    job.similar = options.similarMemories.value_or(d->config.conversationSimilarMemories);
    if (job.recent < 0 || job.similar < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("recent messages must be 0 or more and similar memories at least 1 (got %1 and %2)")
                        .arg(job.recent)
                        .arg(job.similar));
    // The defaults' checks (importance, categories, metadata, a private record without a source) at the call.
    job.base = d->resolve(MemoryInput{QStringLiteral("conversation"), options.defaults}).record;
    job.base.content.clear();

    const QString value = QStringLiteral("conversation %1: %2 messages").arg(job.conversationId).arg(job.messages.size());
    const QJsonObject meta = toQJson(options.defaults.metadata.is_object() ? options.defaults.metadata : Json::object());
    auto ticket = std::make_shared<Ticket>();
    d->checkNotOnWriter("addConversation()");
    // Held across both submissions, so the summary task directly follows its ingestion.
    const MemoryLocks::Guard order = d->locks.submit();
    QFuture<ConversationResult> future = d->submit<ConversationResult>([this, job, ticket, value, meta]() {
        QElapsedTimer timer;
        timer.start();
        Q_EMIT saveStarted(value, meta);
        try {
            ConversationResult r = ingest(*d, job, *ticket);
            Q_EMIT saveCompleted(value, meta, timer.nsecsElapsed() / 1e6);
            return r;
        } catch (const std::exception &e) {
            Q_EMIT saveFailed(value, QString::fromUtf8(e.what()));
            throw;
        }
    });
    d->submit<void>([this, job, ticket]() { refreshSummary(*d, job, *ticket); }, false);
    return future;
}

} // namespace mneme
