#include <mneme/memory/vector_memory_block.h>

#include "memory/chat_blocks_p.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>

namespace mneme {

namespace {

void checkOptions(const QString &name, const Memory *memory, const VectorMemoryBlock::Options &o)
{
    if (!memory)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("vector memory block %1 needs a Memory to keep its batches in").arg(name));
    if (o.similarityTopK < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("vector memory block %1: similarity_top_k must be at least 1 (got %2)").arg(name).arg(o.similarityTopK));
    if (o.retrievalContextWindow < 1)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("vector memory block %1: retrieval_context_window must be at least 1 (got %2)")
                                                    .arg(name)
                                                    .arg(o.retrievalContextWindow));
}

// The content of get(): a JSON array of batches, each an array of {"role", "content"}.
Json parseBatches(const QString &content)
{
    const Json j = Json::parse(content.toStdString(), nullptr, false);
    return j.is_array() ? j : Json::array();
}

QString dumpBatches(const Json &batches)
{
    return batches.empty() ? QString() : QString::fromStdString(batches.dump(-1, ' ', false, Json::error_handler_t::replace));
}

} // namespace

VectorMemoryBlock::VectorMemoryBlock(const QString &name, Memory *memory) : VectorMemoryBlock(name, memory, Options()) {}

VectorMemoryBlock::VectorMemoryBlock(const QString &name, Memory *memory, const Options &options)
    : MemoryBlock(name, options.priority), m_memory(memory), m_options(options)
{
    checkOptions(this->name(), memory, options);
    m_scope = ChatBlocks::blockScope(options.scope, this->name());
    m_options.scope = m_scope;
}

Memory &VectorMemoryBlock::memory() const
{
    if (!m_memory)
        throw Error(ErrorKind::Internal, QStringLiteral("the Memory of vector memory block %1 is gone; it must outlive the block").arg(name()));
    return *m_memory;
}

QString VectorMemoryBlock::sessionScope(const QString &sessionId, const QString &sessionUid) const
{
    return ScopePath::join(m_scope, ChatBlocks::sessionSegment(sessionId, sessionUid));
}

void VectorMemoryBlock::put(const QList<SessionMessage> &messages, const FlushContext &flush)
{
    Json batch = Json::array();
    for (const SessionMessage &m : messages)
        if (!m.message.content.trimmed().isEmpty())
            batch.push_back({{"role", ChatMessage::roleName(m.message.role)}, {"content", m.message.content}});
    if (batch.empty())
        return; // nothing with text: nothing to retrieve later

    Memory &mem = memory();
    MemoryRecord r;
    r.id = flush.recordId(name());
    r.content = ChatBlocks::transcript(messages);
    r.scope = mem.resolveScope(sessionScope(flush.sessionId, flush.sessionUid));
    r.categories = QStringList{QLatin1String(kCategory)};
    r.importance = mem.config().defaultImportance;
    r.metadata = Json{{"chat_session", flush.sessionId},
                      {"chat_block", name()},
                      {"chat_flush", flush.flush},
                      {"first_seq", messages.front().seq},
                      {"last_seq", messages.back().seq},
                      {"messages", batch}};
    r.createdAt = messages.back().at;
    // An id already stored (the flush applied before a crash) is skipped: stored once.
    mem.importRecords({r}, false);
}

QString VectorMemoryBlock::get(const std::vector<ChatMessage> &messages)
{
    const ChatMemory *owner = chatMemory();
    const QString query = ChatBlocks::retrievalQuery(messages, m_options.retrievalContextWindow);
    if (!owner || query.isEmpty())
        return {};
    RecallOptions o;
    o.scopes = QStringList{sessionScope(owner->sessionId(), owner->sessionUid())};
    o.limit = m_options.similarityTopK;
    o.depth = RecallDepth::Shallow;
    o.minRelevance = 0.0; // the last messages together: the top k, without the floor (as the long-term block)
    Json batches = Json::array();
    for (const MemoryMatch &m : memory().recall(query, o)) {
        const Json batch = m.record.metadata.value("messages", Json());
        if (batch.is_array() && !batch.empty())
            batches.push_back(batch);
    }
    return dumpBatches(batches);
}

QString VectorMemoryBlock::truncate(const QString &content, int tokens)
{
    QStringList batches;
    for (const Json &b : parseBatches(content))
        batches << QString::fromStdString(b.dump());
    const auto tokensOf = [this](const QStringList &items) {
        Json all = Json::array();
        for (const QString &i : items)
            all.push_back(Json::parse(i.toStdString()));
        return countTokens(render(dumpBatches(all)));
    };
    Json kept = Json::array();
    for (const QString &b : ChatBlocks::dropLast(batches, tokens, tokensOf))
        kept.push_back(Json::parse(b.toStdString()));
    return dumpBatches(kept);
}

QString VectorMemoryBlock::section() const
{
    return QStringLiteral("retrieval_based_memory");
}

QString VectorMemoryBlock::render(const QString &content) const
{
    QStringList batches;
    for (const Json &batch : parseBatches(content)) {
        QStringList lines;
        for (const Json &m : batch) {
            if (!m.is_object())
                continue;
            const QString role = QString::fromStdString(m.value("role", std::string("user")));
            const QString text = QString::fromStdString(m.value("content", std::string()));
            // The role is written by us, but read back from a store: only a known role is an attribute.
            const QString safeRole = SessionMessage::roleFromName(role) ? role : QStringLiteral("user");
            lines << QStringLiteral("<message role='%1'>%2</message>").arg(safeRole, escape(text));
        }
        if (!lines.isEmpty())
            batches << lines.join(QLatin1Char('\n'));
    }
    return batches.join(QStringLiteral("\n\n"));
}

void VectorMemoryBlock::clear(const QString &sessionId, const QString &sessionUid)
{
    ForgetOptions o;
    o.scope = sessionScope(sessionId, sessionUid);
    memory().forget(o);
}

} // namespace mneme
