#include "memory/chat_blocks_p.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

namespace mneme::ChatBlocks {

QString retrievalQuery(const std::vector<ChatMessage> &messages, int window)
{
    QStringList lines;
    for (auto it = messages.rbegin(); it != messages.rend() && lines.size() < window; ++it)
        if (!it->content.trimmed().isEmpty())
            lines.prepend(it->content.trimmed());
    return lines.join(QLatin1Char('\n'));
}

QString transcript(const QList<SessionMessage> &messages)
{
    QStringList lines;
    for (const SessionMessage &m : messages)
        if (!m.message.content.trimmed().isEmpty())
            lines << QStringLiteral("%1: %2").arg(ChatMessage::roleName(m.message.role), m.message.content.trimmed());
    return lines.join(QLatin1Char('\n'));
}

QString sessionSegment(const QString &sessionId, const QString &sessionUid)
{
    return ScopePath::sanitizeName(sessionId).left(100) + QLatin1Char('-') + sessionUid.left(8);
}

QStringList dropLast(QStringList items, int tokens, const std::function<int(const QStringList &)> &renderedTokens)
{
    const int before = renderedTokens(items);
    while (!items.isEmpty() && before - renderedTokens(items) < tokens)
        items.removeLast();
    return items;
}

QString blockScope(const QString &scope, const QString &block)
{
    try {
        return ScopePath::normalize(scope);
    } catch (const Error &e) {
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("memory block %1: scope %2").arg(block, e.message()));
    }
}

} // namespace mneme::ChatBlocks
