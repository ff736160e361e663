#pragma once

#include <mneme/memory/export.h>
#include <mneme/memory/memory_block.h>

namespace mneme {

// A fixed text always offered to the model (a persona, facts about the user, instructions): the
// seed's StaticMemoryBlock. Its section is <static_memory>. Flushed messages do not change it.
class MNEME_MEMORY_EXPORT StaticMemoryBlock : public MemoryBlock
{
public:
    // Throws Error(InvalidArgument) for blank content.
    StaticMemoryBlock(const QString &name, const QString &staticContent, int priority = 0);

    QString staticContent() const { return m_content; }

    QString get(const std::vector<ChatMessage> &messages) override;
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override;
    QString section() const override;

private:
    QString m_content;
};

} // namespace mneme
