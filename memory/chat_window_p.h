#pragma once

// Private to the memory library: the pure parts of ChatMemory's token window (which messages a flush
// moves out, where a history may start, how the blocks' content is written and inserted).

#include <mneme/core/llm_provider.h>
#include <mneme/memory/chat_memory_config.h>

#include <QString>
#include <vector>

namespace mneme::ChatWindow {

struct FlushSelection
{
    int count = 0;  // how many of the oldest messages to move out; 0: none
    int tokens = 0; // their tokens
};

// One flush of a history whose messages have these roles and token counts, oldest first, when their
// total exceeds `budget`; nothing otherwise. It takes the oldest messages until `flushSize` tokens are
// taken, never the last message, and then moves on to the next user message so that what stays
// starts with one. When no user message follows, what stays starts with the last user message of the
// messages taken (they stay too), or, in a history without one, with the first message that is not a
// tool result: a tool result is never separated from the call it answers.
FlushSelection selectFlush(const std::vector<ChatMessage::Role> &roles, const std::vector<int> &tokens, int budget, int flushSize);

// Whether a history may start at message `index`: anything but a tool result (which needs the
// assistant message with its call before it).
bool canStartAt(const std::vector<ChatMessage::Role> &roles, size_t index);

struct Section
{
    QString tag;
    QString name; // written as an attribute when several sections share a tag
    QString body; // already rendered (escaped) by its block
};

// <memory>, one element per section, </memory>; empty for no section.
QString renderMemory(const std::vector<Section> &sections);

// Puts the memory text first in the first system message (System; a new system message at the front
// when there is none) or in the latest user message (User; a new user message at the end when there
// is none), separated from the message's own content by a blank line. Returns the index of the
// message that holds it.
size_t insertMemory(std::vector<ChatMessage> &messages, const QString &memory, InsertMethod method);

} // namespace mneme::ChatWindow
