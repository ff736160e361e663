#include <mneme/memory/memory_block.h>

#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/token_counter.h>

#include <QUuid>

namespace mneme {

namespace {

// The namespace of the ids FlushContext::recordId() makes.
const QUuid kFlushIdNamespace(QStringLiteral("{6d6e656d-652d-4368-6174-466c75736830}"));

} // namespace

QString FlushContext::recordId(const QString &blockName, int index) const
{
    const QString key = QStringLiteral("%1\n%2\n%3\n%4").arg(sessionUid, blockName).arg(flush).arg(index);
    return QUuid::createUuidV5(kFlushIdNamespace, key).toString(QUuid::WithoutBraces);
}

MemoryBlock::MemoryBlock(const QString &name, int priority) : m_name(name.trimmed()), m_priority(priority)
{
    if (m_name.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a memory block needs a name, such as \"core_info\""));
    if (m_priority < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("memory block %1: priority must be 0 (never truncated) or more (got %2)").arg(m_name).arg(m_priority));
}

MemoryBlock::~MemoryBlock() = default;

QString MemoryBlock::truncate(const QString &content, int tokens)
{
    Q_UNUSED(content)
    Q_UNUSED(tokens)
    return {};
}

QString MemoryBlock::section() const
{
    // A tag name: letters, digits, '_', '-' and '.', starting with a letter or '_'.
    QString tag;
    for (const QChar c : m_name)
        tag += (c.isLetterOrNumber() || c == QLatin1Char('_') || c == QLatin1Char('-') || c == QLatin1Char('.')) ? c : QLatin1Char('_');
    if (tag.isEmpty() || !(tag.front().isLetter() || tag.front() == QLatin1Char('_')))
        tag.prepend(QLatin1Char('_'));
    return tag;
}

QString MemoryBlock::render(const QString &content) const
{
    return escape(content);
}

Json MemoryBlock::state() const
{
    return Json();
}

void MemoryBlock::restoreState(const Json &state)
{
    Q_UNUSED(state)
}

void MemoryBlock::clear(const QString &sessionId, const QString &sessionUid)
{
    Q_UNUSED(sessionId)
    Q_UNUSED(sessionUid)
}

QString MemoryBlock::escape(const QString &text)
{
    QString out;
    out.reserve(text.size());
    for (const QChar c : text) {
        switch (c.unicode()) {
        case '&': out += QLatin1String("&amp;"); break;
        case '<': out += QLatin1String("&lt;"); break;
        case '>': out += QLatin1String("&gt;"); break;
        default: out += c;
        }
    }
    return out;
}

ChatMemory *MemoryBlock::chatMemory() const
{
    return m_owner.data();
}

int MemoryBlock::countTokens(const QString &text) const
{
    if (const ChatMemory *owner = m_owner.data())
        return owner->countTokens(text);
    return TokenCounter().count(text);
}

} // namespace mneme
