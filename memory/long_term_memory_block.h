#pragma once

#include <mneme/memory/export.h>
#include <mneme/memory/memory_block.h>

#include <QPointer>

namespace mneme {

class Memory;

// The bridge to Mneme's unified long-term memory. Each batch of flushed messages is turned into facts
// by the Memory's extraction (Memory::extractMemories: its LLM, or the offline splitter without one)
// and stored as records under `scope`, skipping facts an identical record already holds, in one
// transaction with ids FlushContext::recordId() makes (a flush applied again stores nothing twice).
// get() recalls (shallow) the similarityTopK records of the Memory under `scope` closest to the text of
// the last retrievalContextWindow messages: what this chat learned, and what crews, flows and other
// sessions stored there. Section <long_term_memory>, one <fact> per record; truncation drops the
// least relevant. Its facts outlive the session (clear() leaves them).
class MNEME_MEMORY_EXPORT LongTermMemoryBlock : public MemoryBlock
{
public:
    struct Options
    {
        QString scope = QStringLiteral("/"); // under the Memory's root scope
        int similarityTopK = 5;
        int retrievalContextWindow = 5;
        int priority = 0;
        QString source; // the stored facts' source (empty: none); recall sees that source's private records
    };

    static constexpr const char *kCategory = "chat_fact";

    // The Memory must outlive the block. Throws Error(InvalidArgument) for a null Memory, a bad scope
    // or a similarityTopK or retrievalContextWindow below 1.
    LongTermMemoryBlock(const QString &name, Memory *memory);
    LongTermMemoryBlock(const QString &name, Memory *memory, const Options &options);

    const Options &options() const { return m_options; }

    QString get(const std::vector<ChatMessage> &messages) override;
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override;
    QString truncate(const QString &content, int tokens) override;
    QString section() const override;
    QString render(const QString &content) const override;

private:
    Memory &memory() const;

    QPointer<Memory> m_memory;
    Options m_options;
    QString m_scope;
};

} // namespace mneme
