#include <mneme/memory/fact_extraction_memory_block.h>

#include "memory/chat_memory_p.h"
#include "memory/statement_splitter_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>

#include <QElapsedTimer>

namespace mneme {

namespace {

const Json kFactsSchema = {{"type", "object"},
                           {"properties", {{"facts", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
                           {"required", {"facts"}}};

QString factList(const QStringList &facts)
{
    QStringList lines;
    for (const QString &f : facts)
        lines << QStringLiteral("<fact>%1</fact>").arg(MemoryBlock::escape(f));
    return lines.join(QLatin1Char('\n'));
}

// The conversation as provider-neutral text: each message an element named after its role, tool calls
// left out (a provider that refuses tool history still reads it).
QString conversationText(const QList<SessionMessage> &messages)
{
    QStringList lines;
    for (const SessionMessage &m : messages) {
        const ChatMessage &c = m.message;
        if (c.content.trimmed().isEmpty())
            continue;
        const QString role = ChatMessage::roleName(c.role);
        if (c.role == ChatMessage::Role::Tool && !c.name.isEmpty())
            lines << QStringLiteral("<tool name='%1'>%2</tool>").arg(MemoryBlock::escape(c.name), MemoryBlock::escape(c.content));
        else
            lines << QStringLiteral("<%1>%2</%1>").arg(role, MemoryBlock::escape(c.content));
    }
    return QStringLiteral("<conversation>\n%1\n</conversation>").arg(lines.join(QLatin1Char('\n')));
}

ChatRequest extractionRequest(const QStringList &existing, const QList<SessionMessage> &messages)
{
    const QString system = QStringLiteral(
        "You keep the facts an assistant should remember about a conversation. Read the conversation and list "
        "the specific, concrete facts it adds: what the user says about themselves, their preferences, plans, "
        "requirements and constraints, names, dates and numbers, and decisions or results reached. Write each "
        "fact as one short sentence that makes sense on its own. Leave out greetings, the assistant's opinions, "
        "summaries and anything the existing facts already say. Answer with JSON only: {\"facts\": [...]}, an "
        "empty list when there is nothing new.");
    const QString user = QStringLiteral("<existing_facts>\n%1\n</existing_facts>\n\n%2").arg(factList(existing), conversationText(messages));
    ChatRequest r;
    r.messages = {ChatMessage::system(system), ChatMessage::user(user)};
    r.responseSchema = kFactsSchema;
    r.responseSchemaName = QStringLiteral("chat_facts");
    return r;
}

ChatRequest condensationRequest(const QStringList &facts, int maxFacts)
{
    const QString system = QStringLiteral(
                               "You condense a list of facts about a conversation to at most %1 facts. Merge facts that say "
                               "the same thing, drop facts that later ones make obsolete, and keep names, dates and numbers "
                               "exactly. Your list replaces the old one entirely. Answer with JSON only: {\"facts\": [...]}.")
                               .arg(maxFacts);
    ChatRequest r;
    r.messages = {ChatMessage::system(system), ChatMessage::user(QStringLiteral("<facts>\n%1\n</facts>").arg(factList(facts)))};
    r.responseSchema = kFactsSchema;
    r.responseSchemaName = QStringLiteral("chat_facts");
    return r;
}

// A fact as kept: one line, single spaces.
QString normalFact(const QString &text)
{
    return text.simplified();
}

bool containsFact(const QStringList &facts, const QString &fact)
{
    for (const QString &f : facts)
        if (f.compare(fact, Qt::CaseInsensitive) == 0)
            return true;
    return false;
}

// `facts` with `more` appended, without repeats.
QStringList merged(QStringList facts, const QStringList &more)
{
    for (const QString &f : more) {
        const QString fact = normalFact(f);
        if (!fact.isEmpty() && !containsFact(facts, fact))
            facts << fact;
    }
    return facts;
}

} // namespace

FactExtractionMemoryBlock::FactExtractionMemoryBlock(const QString &name, std::shared_ptr<LlmProvider> llm, int maxFacts, int priority)
    : MemoryBlock(name, priority), m_llm(std::move(llm)), m_maxFacts(maxFacts)
{
    if (m_maxFacts < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("fact extraction block %1: max_facts must be at least 1 (got %2)").arg(name).arg(maxFacts));
}

QString FactExtractionMemoryBlock::get(const std::vector<ChatMessage> &messages)
{
    Q_UNUSED(messages)
    return m_facts.join(QLatin1Char('\n'));
}

std::optional<QStringList> FactExtractionMemoryBlock::readFacts(const Json &reply)
{
    const Json *list = nullptr;
    if (reply.is_object() && reply.contains("facts") && reply["facts"].is_array())
        list = &reply["facts"];
    else if (reply.is_array())
        list = &reply;
    if (!list)
        return std::nullopt;
    QStringList facts;
    for (const Json &f : *list)
        if (f.is_string())
            facts = merged(facts, {QString::fromStdString(f.get<std::string>())});
    return facts;
}

void FactExtractionMemoryBlock::report(const char *step, const char *path, const QString &reason, bool llmFailed)
{
    if (llmFailed)
        qCWarning(lcChat).noquote() << QStringLiteral("chat memory block %1: %2 fell back to the %3 path: %4")
                                           .arg(name(), QLatin1String(step), QLatin1String(path), reason);
    if (ChatMemory *owner = chatMemory())
        Q_EMIT owner->analysisCompleted(QLatin1String(step), QLatin1String(path), reason);
}

std::optional<QStringList> FactExtractionMemoryBlock::ask(const char *step, const ChatRequest &request, QString *why)
{
    ChatMemory *owner = chatMemory();
    const QString model = m_llm->id();
    if (owner)
        Q_EMIT owner->llmCallStarted(QLatin1String(step), model);
    QElapsedTimer clock;
    clock.start();
    try {
        QFuture<ChatResponse> f = m_llm->chat(request);
        f.waitForFinished();
        if (f.isCanceled() || f.resultCount() < 1)
            throw Error(ErrorKind::Cancelled, QStringLiteral("the request was cancelled"));
        const ChatResponse reply = f.result();
        if (owner)
            Q_EMIT owner->llmCallCompleted(QLatin1String(step), model, clock.nsecsElapsed() / 1e6, reply.usage.promptTokens,
                                           reply.usage.completionTokens);
        std::optional<QStringList> facts = readFacts(reply.structured);
        if (!facts)
            *why = QStringLiteral("the reply has no list of facts");
        return facts;
    } catch (const std::exception &e) {
        *why = QString::fromUtf8(e.what());
        if (owner)
            Q_EMIT owner->llmCallFailed(QLatin1String(step), model, *why, clock.nsecsElapsed() / 1e6);
        return std::nullopt;
    }
}

void FactExtractionMemoryBlock::put(const QList<SessionMessage> &messages, const FlushContext &flush)
{
    Q_UNUSED(flush)
    bool hasText = false;
    for (const SessionMessage &m : messages)
        hasText = hasText || !m.message.content.trimmed().isEmpty();
    if (!hasText) {
        report(kExtractionStep, "skipped", QStringLiteral("the flushed messages hold no text"), false);
        return;
    }

    QString why = QStringLiteral("no LLM is configured");
    std::optional<QStringList> extracted;
    if (m_llm)
        extracted = ask(kExtractionStep, extractionRequest(m_facts, messages), &why);
    if (extracted) {
        report(kExtractionStep, "llm", QString(), false);
    } else {
        // The offline analyzer: what the user said, statement by statement.
        QStringList statements;
        for (const SessionMessage &m : messages)
            if (m.message.role == ChatMessage::Role::User)
                statements << StatementSplitter::split(m.message.content);
        extracted = statements;
        report(kExtractionStep, "offline", why, bool(m_llm));
    }
    m_facts = merged(m_facts, *extracted);
    if (m_facts.size() <= m_maxFacts)
        return;

    why = QStringLiteral("no LLM is configured");
    std::optional<QStringList> condensed;
    if (m_llm) {
        condensed = ask(kCondensationStep, condensationRequest(m_facts, m_maxFacts), &why);
        if (condensed && condensed->isEmpty()) {
            why = QStringLiteral("the condensed list is empty");
            condensed.reset();
        } else if (condensed && condensed->size() > m_maxFacts) {
            why = QStringLiteral("the condensed list still has %1 facts").arg(condensed->size());
            condensed.reset();
        }
    }
    if (condensed) {
        m_facts = *condensed;
        report(kCondensationStep, "llm", QString(), false);
        return;
    }
    // Offline: the newest facts are kept.
    m_facts = m_facts.mid(m_facts.size() - m_maxFacts);
    report(kCondensationStep, "offline", why + QStringLiteral("; the oldest facts were dropped"), bool(m_llm));
}

QString FactExtractionMemoryBlock::truncate(const QString &content, int tokens)
{
    QStringList lines = content.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    const int before = countTokens(render(content));
    while (!lines.isEmpty() && before - countTokens(render(lines.join(QLatin1Char('\n')))) < tokens)
        lines.removeFirst();
    return lines.join(QLatin1Char('\n'));
}

QString FactExtractionMemoryBlock::section() const
{
    return QStringLiteral("fact_extraction_memory");
}

QString FactExtractionMemoryBlock::render(const QString &content) const
{
    return factList(content.split(QLatin1Char('\n'), Qt::SkipEmptyParts));
}

Json FactExtractionMemoryBlock::state() const
{
    return Json{{"facts", m_facts}};
}

void FactExtractionMemoryBlock::restoreState(const Json &state)
{
    m_facts.clear();
    if (const std::optional<QStringList> facts = readFacts(state))
        m_facts = *facts;
}

} // namespace mneme
