#pragma once

// Private to the memory library: what the blocks that keep their content in a Memory share.

#include <mneme/core/llm_provider.h>
#include <mneme/memory/session_message.h>

#include <QList>
#include <QString>
#include <QStringList>
#include <functional>
#include <vector>

namespace mneme::ChatBlocks {

// The text a block recalls with: the content of the last `window` messages that have text, oldest
// first, one per line.
QString retrievalQuery(const std::vector<ChatMessage> &messages, int window);

// "role: text" lines of the messages that have text.
QString transcript(const QList<SessionMessage> &messages);

// The scope segment of a session incarnation: the session id made a scope name, and the first eight
// characters of its uid (two ids that read the same as scope names stay apart).
QString sessionSegment(const QString &sessionId, const QString &sessionUid);

// `items` without their last ones, until the rendered content is at least `tokens` tokens shorter.
QStringList dropLast(QStringList items, int tokens, const std::function<int(const QStringList &)> &renderedTokens);

// A scope option of a block, normalised; throws Error(InvalidArgument) naming the block.
QString blockScope(const QString &scope, const QString &block);

} // namespace mneme::ChatBlocks
