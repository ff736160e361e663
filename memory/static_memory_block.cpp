#include <mneme/memory/static_memory_block.h>

#include <mneme/core/error.h>

namespace mneme {

StaticMemoryBlock::StaticMemoryBlock(const QString &name, const QString &staticContent, int priority)
    : MemoryBlock(name, priority), m_content(staticContent.trimmed())
{
    if (m_content.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("static memory block %1 needs content (static_content); leave the block out instead").arg(name));
}

QString StaticMemoryBlock::get(const std::vector<ChatMessage> &messages)
{
    Q_UNUSED(messages)
    return m_content;
}

void StaticMemoryBlock::put(const QList<SessionMessage> &messages, const FlushContext &flush)
{
    Q_UNUSED(messages)
    Q_UNUSED(flush)
}

QString StaticMemoryBlock::section() const
{
    return QStringLiteral("static_memory");
}

} // namespace mneme
