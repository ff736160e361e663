#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/memory/export.h>

#include <QDateTime>
#include <QList>
#include <QMetaType>
#include <QString>
#include <optional>

namespace mneme {

// One message of a chat session as ChatMemory keeps it: the message an LlmProvider takes (role,
// content, tool calls or the call it answers, name) with when it was said, metadata of the caller's,
// and where it stands in the session.
struct MNEME_MEMORY_EXPORT SessionMessage
{
    ChatMessage message;
    QDateTime at;                   // UTC; invalid when put: the time of the put
    Json metadata = Json::object(); // any JSON object, kept as given
    // The provider's count of the message's tokens (an assistant reply's completion tokens); unset:
    // counted by the chat memory's token counter.
    std::optional<int> tokens;

    // Set by the store.
    qint64 seq = 0;   // position in the session, 1, 2, 3, ...; never reused
    qint64 flush = 0; // 0: in the active history; else the flush that moved it to the memory blocks

    bool isArchived() const { return flush != 0; }

    SessionMessage() = default;
    SessionMessage(ChatMessage m, Json meta = Json::object()) : message(std::move(m)), metadata(std::move(meta)) {}

    // {"seq", "role", "content", "name", "tool_call_id", "tool_calls", "metadata", "at", "tokens",
    // "flush"}: the fields a message has (empty ones left out).
    Json toJson() const;
    // Reads toJson()'s form (or just {"role", "content", ...} for a message to put). Throws
    // Error(InvalidArgument) naming the field for an unknown role, a wrong type, a bad time.
    static SessionMessage fromJson(const Json &json);

    // Throws Error(InvalidArgument) with what to fix when the message cannot be stored: an empty
    // message (no content, no tool calls; a tool's result may be empty), a tool result without the
    // id of the call it answers,
    // tool calls on a message that is not the assistant's, a tool call without a name, metadata that
    // is not an object, a negative token count.
    static void check(const SessionMessage &message);

    // "system", "user", "assistant", "tool" -> the role; nullopt for anything else.
    static std::optional<ChatMessage::Role> roleFromName(const QString &name);
};

} // namespace mneme

Q_DECLARE_METATYPE(mneme::SessionMessage)
