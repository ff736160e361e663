#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/memory/chat_memory_config.h>
#include <mneme/memory/chat_store.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_block.h>
#include <mneme/memory/session_message.h>
#include <mneme/memory/token_counter.h>

#include <QFuture>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

namespace mneme {

class Memory;
class ChatMemoryPrivate;

// What ChatMemory::getContext() assembled, with its accounting.
struct MNEME_MEMORY_EXPORT ChatContext
{
    std::vector<ChatMessage> messages; // what an LlmProvider takes
    int tokens = 0;                    // their total (never above token_limit)
    int historyTokens = 0;             // of the history messages included
    int memoryTokens = 0;              // of the <memory> text
    int historyMessages = 0;           // history messages included
    int omittedMessages = 0;           // the oldest active messages left out to fit
    QStringList blocks;                // blocks whose content is included, in section order
    QStringList truncatedBlocks;       // blocks shortened or left out to fit
    QStringList failedBlocks;          // blocks whose get() failed (left out; see ChatMemory::blockFailed)
};

// The short-term memory of one chat session, with long-term memory blocks (LlamaIndex's Memory): the
// session's messages in a token-limited FIFO whose oldest messages are flushed into memory blocks,
// merged back with the history under one token budget when the session is read.
//
// - put() / putMessages() store messages (persisted in a ChatStore: a session survives a restart).
//   When the history's tokens exceed token_limit x chat_history_token_ratio, the oldest messages,
//   about token_flush_size tokens of them, are moved out of the history and given to every block, in
//   order, in as many flushes as it takes. A flush is recorded before any block gets it, and each
//   block's completion is recorded with its state: a process killed in the middle of a flush
//   neither loses its messages nor applies them to a block twice (the next ChatMemory of the session
//   finishes it).
// - get() returns the message list a model takes: your extra system messages, the history that fits,
//   your other extra messages, and the blocks' content in a <memory> section in the system message or
//   the latest user message. The whole never exceeds token_limit: blocks are truncated by priority,
//   then the oldest history is left out. A history never starts with a tool result and never separates
//   an assistant's tool calls from their results.
//
// Threads. One worker thread per ChatMemory runs every call, in the order of submission; signals are
// emitted from it. The *Async calls return at once; the blocking ones (put, get, ...) are for scripts,
// tests and worker threads, never a GUI thread, and are refused on the worker thread itself (a slot
// connected directly, a block). Several ChatMemory objects (in one process or several) may share a
// session: writes are transactions, and a flush is begun by whoever moves first.
//
// Errors. Bad configuration and bad messages throw Error(InvalidArgument) at the call, and nothing is
// stored; storage failures throw Error(Storage) and kinds of its family. A block that fails during a
// flush does not fail the put: flushFailed() reports it, the flush stays recorded, and the next put
// applies it again.
class MNEME_MEMORY_EXPORT ChatMemory : public QObject
{
    Q_OBJECT
public:
    // Opens session `sessionId` of `store` (creating it) with these blocks, whose states are restored.
    // Throws Error(InvalidArgument) for an invalid configuration or session id, a null store or block,
    // two blocks of one name, or a block that already belongs to another ChatMemory.
    ChatMemory(const QString &sessionId, const ChatMemoryConfig &config, std::shared_ptr<ChatStore> store,
               std::vector<std::shared_ptr<MemoryBlock>> blocks = {}, QObject *parent = nullptr);
    // Waits for the calls submitted so far.
    ~ChatMemory() override;

    // The seed's Memory.from_defaults(session_id=...): the sessions in config.storage (default: the
    // file of `memory`'s store, else MemoryConfig::defaultStoragePath()), the blocks of
    // config.memoryBlocks (vector and long_term blocks keep their content in `memory`; fact_extraction
    // blocks use their own llm, else config.llm, else `memory`'s LLM). `memory` may be null when no
    // block needs it, and must outlive the chat memory.
    static std::unique_ptr<ChatMemory> fromDefaults(const QString &sessionId, const ChatMemoryConfig &config = {},
                                                    Memory *memory = nullptr, QObject *parent = nullptr);
    // The store fromDefaults() opens for `config` and `memory`.
    static std::shared_ptr<ChatStore> defaultStore(const ChatMemoryConfig &config, Memory *memory = nullptr);
    // The blocks of a JSON array of block specs (ChatMemoryConfig::memoryBlocks), as fromDefaults()
    // builds them.
    static std::vector<std::shared_ptr<MemoryBlock>> buildBlocks(const Json &specs, Memory *memory = nullptr, const Json &llm = Json());

    QString sessionId() const;
    // The session's current incarnation (SessionInfo::uid; a new one after clear()).
    QString sessionUid() const;
    const ChatMemoryConfig &config() const;
    std::shared_ptr<ChatStore> store() const;
    const std::vector<std::shared_ptr<MemoryBlock>> &blocks() const;
    std::shared_ptr<MemoryBlock> block(const QString &name) const;
    const TokenCounter &tokenCounter() const;
    int countTokens(const QString &text) const;

    // Stores messages at the end of the session, then flushes what exceeds the history's share. The
    // future holds them as stored (seq, time) as soon as they are; the flushes they cause run right
    // after, before any later call of this ChatMemory (drain() waits for them). Throws
    // Error(InvalidArgument) at the call for a bad message (SessionMessage::check) or one longer than
    // token_limit on its own; the future fails with Error(InvalidArgument) when the messages would
    // break a tool call from its results (a tool result that answers no open call of the assistant
    // message before it, or another message while calls are open). Nothing is stored then.
    QFuture<QList<SessionMessage>> putMessagesAsync(const QList<SessionMessage> &messages);
    QList<SessionMessage> putMessages(const QList<SessionMessage> &messages);              // blocking
    SessionMessage put(const ChatMessage &message, const Json &metadata = Json::object()); // blocking

    // The messages for the model (see the class comment). Extra messages are sent along, not stored:
    // system ones before the history, the others after it (the new user message, the turn in
    // progress). Throws Error(ContextLength) when even the priority-0 blocks, the extra messages and
    // the latest message cannot fit token_limit.
    QFuture<std::vector<ChatMessage>> getAsync(const std::vector<ChatMessage> &extraMessages = {});
    std::vector<ChatMessage> get(const std::vector<ChatMessage> &extraMessages = {}); // blocking
    QFuture<ChatContext> getContextAsync(const std::vector<ChatMessage> &extraMessages = {});
    ChatContext getContext(const std::vector<ChatMessage> &extraMessages = {}); // blocking

    // The session's messages, oldest first: the active history, or with the archived ones too.
    QFuture<QList<SessionMessage>> messagesAsync(bool includeArchived = false);
    QList<SessionMessage> messages(bool includeArchived = false); // blocking
    SessionInfo info();                                           // blocking

    // Deletes the session's messages and block states, lets each block forget what it stored
    // elsewhere for it (a vector block's batches; a long-term block's facts stay), and starts a new
    // incarnation. Returns how many messages were deleted.
    QFuture<int> clearAsync();
    int clear(); // blocking

    // Waits for every call submitted so far (their flushes included).
    void drain();

Q_SIGNALS:
    void messagesStored(const QString &sessionId, const QList<mneme::SessionMessage> &messages);
    // A flush was recorded (its messages left the history) and is about to reach the blocks; or a
    // pending flush (left by a crash, a failure, a writer gone) is taken up again for the blocks
    // still pending.
    void flushStarted(const QString &sessionId, qint64 flush, int messages, int tokens, const QStringList &blocks);
    // One block applied the flush (and its state was stored).
    void blockFlushed(const QString &sessionId, qint64 flush, const QString &block, double durationMs);
    void flushCompleted(const QString &sessionId, qint64 flush, int messages, int tokens, const QStringList &blocks,
                        double durationMs);
    // A block failed on a flush (the flush stays recorded and is applied again by the next put); `block`
    // is empty for a storage failure of the flush itself. (A block the flush was recorded for and the
    // chat memory no longer has is dropped from it with a warning.)
    void flushFailed(const QString &sessionId, qint64 flush, const QString &block, const QString &error);
    // A block's get() failed (its Memory's embedder, a block of yours): get() leaves it out and goes on.
    void blockFailed(const QString &sessionId, const QString &block, const QString &error);
    // get() shortened a block (tokensAfter > 0) or left it out (0) to fit token_limit.
    void blockTruncated(const QString &sessionId, const QString &block, int tokensBefore, int tokensAfter);
    // Around every LLM call of a block (steps chat_fact_extraction, chat_fact_condensation).
    void llmCallStarted(const QString &step, const QString &model);
    void llmCallCompleted(const QString &step, const QString &model, double durationMs, int promptTokens, int completionTokens);
    void llmCallFailed(const QString &step, const QString &model, const QString &error, double durationMs);
    // Which path an analysis step of a block took: "llm", "offline" or "skipped", and why not the LLM.
    void analysisCompleted(const QString &step, const QString &path, const QString &reason);

private:
    friend class ChatMemoryPrivate;
    std::unique_ptr<ChatMemoryPrivate> d;
};

} // namespace mneme

Q_DECLARE_METATYPE(QList<mneme::SessionMessage>)
