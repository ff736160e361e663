#include <mneme/memory/long_term_memory_block.h>

#include "memory/chat_blocks_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/vector_memory_block.h>

namespace mneme {

namespace {

// Recalled beyond similarityTopK, for the chat batches of vector blocks that the recall then leaves out.
constexpr int kRecallHeadroom = 10;

QString oneLine(const QString &text)
{
    return text.simplified();
}

} // namespace

LongTermMemoryBlock::LongTermMemoryBlock(const QString &name, Memory *memory) : LongTermMemoryBlock(name, memory, Options()) {}

LongTermMemoryBlock::LongTermMemoryBlock(const QString &name, Memory *memory, const Options &options)
    : MemoryBlock(name, options.priority), m_memory(memory), m_options(options)
{
    if (!memory)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("long-term memory block %1 needs a Memory").arg(this->name()));
    if (options.similarityTopK < 1)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("long-term memory block %1: similarity_top_k must be at least 1 (got %2)")
                                                    .arg(this->name())
                                                    .arg(options.similarityTopK));
    if (options.retrievalContextWindow < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("long-term memory block %1: retrieval_context_window must be at least 1 (got %2)")
                        .arg(this->name())
                        .arg(options.retrievalContextWindow));
    m_scope = ChatBlocks::blockScope(options.scope, this->name());
    m_options.scope = m_scope;
    m_options.source = options.source.trimmed();
}

Memory &LongTermMemoryBlock::memory() const
{
    if (!m_memory)
        throw Error(ErrorKind::Internal, QStringLiteral("the Memory of long-term memory block %1 is gone; it must outlive the block").arg(name()));
    return *m_memory;
}

void LongTermMemoryBlock::put(const QList<SessionMessage> &messages, const FlushContext &flush)
{
    Memory &mem = memory();
    StorageBackend &storage = mem.storage();
    // A flush applied before a crash stored its facts in one transaction, the first under index 0.
    if (storage.get(flush.recordId(name(), 0)))
        return;

    // An LLM reads the exchange; the offline splitter, which keeps every sentence, only what the user said.
    bool hasLlm = false;
    try {
        hasLlm = mem.llm() != nullptr;
    } catch (const Error &) {
        hasLlm = false; // a provider that cannot be built: extraction reports it and splits offline
    }
    QList<SessionMessage> said;
    QStringList userText;
    for (const SessionMessage &m : messages) {
        if (m.message.role == ChatMessage::Role::User || m.message.role == ChatMessage::Role::Assistant)
            said << m;
        if (m.message.role == ChatMessage::Role::User && !m.message.content.trimmed().isEmpty())
            userText << m.message.content.trimmed();
    }
    const QString text = hasLlm ? ChatBlocks::transcript(said) : userText.join(QStringLiteral("\n\n"));
    if (text.isEmpty())
        return;
    const QStringList facts = mem.extractMemories(text);

    const QString scope = mem.resolveScope(m_scope);
    QList<MemoryRecord> records;
    QStringList seen;
    for (const QString &f : facts) {
        const QString fact = oneLine(f);
        if (fact.isEmpty() || seen.contains(fact) || storage.findExact(fact, scope, m_options.source, false))
            continue;
        seen << fact;
        MemoryRecord r;
        r.id = flush.recordId(name(), int(records.size()));
        r.content = fact;
        r.scope = scope;
        r.categories = QStringList{QLatin1String(kCategory)};
        r.importance = mem.config().defaultImportance;
        r.source = m_options.source;
        r.metadata = Json{{"chat_session", flush.sessionId}, {"chat_block", name()}, {"chat_flush", flush.flush}};
        r.createdAt = messages.back().at;
        records << r;
    }
    if (!records.isEmpty())
        mem.importRecords(records, false); // one transaction; ids already stored are skipped
}

QString LongTermMemoryBlock::get(const std::vector<ChatMessage> &messages)
{
    const QString query = ChatBlocks::retrievalQuery(messages, m_options.retrievalContextWindow);
    if (query.isEmpty())
        return {};
    RecallOptions o;
    o.scopes = QStringList{m_scope};
    o.limit = m_options.similarityTopK + kRecallHeadroom;
    o.depth = RecallDepth::Shallow;
    o.source = m_options.source;
    // The query is the last messages together, which no single fact covers much of: the block takes
    // its top k, as LlamaIndex's does, without the relevance floor meant for one question.
    o.minRelevance = 0.0;
    QStringList facts;
    for (const MemoryMatch &m : memory().recall(query, o)) {
        if (m.record.categories.contains(QLatin1String(VectorMemoryBlock::kCategory)))
            continue; // a vector block's message batch, not a fact
        const QString fact = oneLine(m.record.content);
        if (!fact.isEmpty() && !facts.contains(fact))
            facts << fact;
        if (facts.size() == m_options.similarityTopK)
            break;
    }
    return facts.join(QLatin1Char('\n'));
}

QString LongTermMemoryBlock::truncate(const QString &content, int tokens)
{
    const auto tokensOf = [this](const QStringList &items) { return countTokens(render(items.join(QLatin1Char('\n')))); };
    return ChatBlocks::dropLast(content.split(QLatin1Char('\n'), Qt::SkipEmptyParts), tokens, tokensOf).join(QLatin1Char('\n'));
}

QString LongTermMemoryBlock::section() const
{
    return QStringLiteral("long_term_memory");
}

QString LongTermMemoryBlock::render(const QString &content) const
{
    QStringList lines;
    for (const QString &fact : content.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
        lines << QStringLiteral("<fact>%1</fact>").arg(escape(fact));
    return lines.join(QLatin1Char('\n'));
}

} // namespace mneme
