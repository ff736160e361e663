#pragma once

#include <mneme/memory/export.h>
#include <mneme/memory/memory_block.h>

#include <QPointer>

namespace mneme {

class Memory;

// Batches of flushed messages, stored in a Mneme Memory and retrieved by similarity: the seed's
// VectorMemoryBlock. Each flush becomes one record (its messages as "role: text" lines, the messages
// themselves in its metadata) under <scope>/<session>-<uid>, with an id FlushContext::recordId()
// makes, so applying a flush again stores nothing twice. get() recalls (shallow) the similarityTopK
// batches of this session incarnation closest to the text of the last retrievalContextWindow
// messages. Section <retrieval_based_memory>, one <message role='...'> per message, batches apart by
// a blank line; truncation drops the least similar batches. clear() forgets the session's batches.
class MNEME_MEMORY_EXPORT VectorMemoryBlock : public MemoryBlock
{
public:
    struct Options
    {
        QString scope = QStringLiteral("/chat/history"); // under the Memory's root scope
        int similarityTopK = 2;
        int retrievalContextWindow = 5;
        int priority = 0;
    };

    // The category of the records it stores (a long-term block's recall leaves them out).
    static constexpr const char *kCategory = "chat_history";

    // The Memory must outlive the block. Throws Error(InvalidArgument) for a null Memory, a bad scope
    // or a similarityTopK or retrievalContextWindow below 1.
    VectorMemoryBlock(const QString &name, Memory *memory);
    VectorMemoryBlock(const QString &name, Memory *memory, const Options &options);

    const Options &options() const { return m_options; }
    // Where this session incarnation's batches go.
    QString sessionScope(const QString &sessionId, const QString &sessionUid) const;

    QString get(const std::vector<ChatMessage> &messages) override;
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override;
    QString truncate(const QString &content, int tokens) override;
    QString section() const override;
    QString render(const QString &content) const override;
    void clear(const QString &sessionId, const QString &sessionUid) override;

private:
    Memory &memory() const;

    QPointer<Memory> m_memory;
    Options m_options;
    QString m_scope; // options.scope resolved under the Memory's root
};

} // namespace mneme
