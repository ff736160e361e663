#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/memory/export.h>
#include <mneme/memory/session_message.h>

#include <QList>
#include <QPointer>
#include <QString>
#include <vector>

namespace mneme {

class ChatMemory;

// The flush a block receives messages of (see ChatMemory): its number, and the session incarnation
// it belongs to, from which recordId() makes ids that are the same each time the same flush is
// applied, so that a block storing them elsewhere can apply a flush again (after a crash) without
// storing it twice.
struct MNEME_MEMORY_EXPORT FlushContext
{
    QString sessionId;
    QString sessionUid; // SessionInfo::uid
    qint64 flush = 0;
    int tokens = 0; // the flushed messages' tokens

    // A UUID (version 5) of (session uid, block name, flush, index).
    QString recordId(const QString &blockName, int index = 0) const;
};

// Long-term memory of a chat session (LlamaIndex's memory block): it receives the messages flushed
// out of the session's history, and contributes content to what ChatMemory::get() returns, in a
// section of its own. Subclass it for a block of your own: get(), put() and, to shorten its content
// some other way than dropping it, truncate() (examples/chat_agent has one).
//
// `priority` decides what gives way when the blocks and the history together exceed the token limit:
// blocks are truncated from the largest priority number down; priority 0 is never truncated.
//
// A block belongs to one ChatMemory (one session), which calls it on its worker thread only, one
// call at a time. State that must survive a restart goes in state(): ChatMemory stores it in the same
// transaction that records the block's completion of a flush, and gives it back with restoreState()
// before the block's next call, so a process killed in the middle of a flush re-applies it to the
// block exactly once. A block that writes elsewhere (another store, a service) makes that write
// idempotent per flush instead: FlushContext::recordId() gives stable ids.
class MNEME_MEMORY_EXPORT MemoryBlock
{
public:
    // Throws Error(InvalidArgument) for a blank name or a negative priority.
    explicit MemoryBlock(const QString &name, int priority = 0);
    virtual ~MemoryBlock();
    MemoryBlock(const MemoryBlock &) = delete;
    MemoryBlock &operator=(const MemoryBlock &) = delete;

    QString name() const { return m_name; }
    int priority() const { return m_priority; }

    // The block's content for this request, as plain text; empty for none. `messages` are the history
    // get() returns with the caller's extra messages (the current conversation).
    virtual QString get(const std::vector<ChatMessage> &messages) = 0;
    // The messages flushed out of the history, oldest first (each with its time and metadata).
    virtual void put(const QList<SessionMessage> &messages, const FlushContext &flush) = 0;
    // `content` (from get()) shortened by at least `tokens` tokens, or empty to leave the block out
    // of this request. The default leaves it out.
    virtual QString truncate(const QString &content, int tokens);

    // The tag of the block's section (<static_memory>, ...); the default is the block's name made a
    // valid tag.
    virtual QString section() const;
    // The section's body for `content`: the default is the content XML-escaped. Blocks whose content
    // has items (facts, messages) render each as an element, escaping its text.
    virtual QString render(const QString &content) const;

    // What the block must find again after a restart (JSON); null for nothing (the default).
    virtual Json state() const;
    virtual void restoreState(const Json &state);
    // The session is being cleared: forget what was stored elsewhere for it (the default does nothing).
    virtual void clear(const QString &sessionId, const QString &sessionUid);

    // Escapes &, < and >, so that text never reads as markup.
    static QString escape(const QString &text);

protected:
    // The chat memory the block belongs to (null before one takes it): its token counter, its
    // session, its signals (llmCallStarted, analysisCompleted, ...).
    ChatMemory *chatMemory() const;
    // Tokens of a text by the chat memory's counter (TokenCounter::estimate() before one takes it).
    int countTokens(const QString &text) const;

private:
    friend class ChatMemory;
    QString m_name;
    int m_priority = 0;
    QPointer<ChatMemory> m_owner;
};

} // namespace mneme
