#pragma once

// Private to the memory library: Mem0-style conversation ingestion (Memory::addConversation).
//
// Extraction: the conversation's rolling summary, its last m messages and the new messages go to
// the LLM, which returns candidate facts about the user. Update: every fact is compared with the s
// most similar stored memories of the same source and privacy; the LLM sees them under small ids
// ("0", "1", ...) and answers ADD / UPDATE / DELETE / NOOP per fact, by a tool call when the provider
// has native tools, else as JSON. A later writer task folds the new messages into the summary.
// The readers are lenient (strings or objects, missing fields, numeric ids, Mem0's own field
// names) and never throw: what they cannot use is dropped.

#include <mneme/core/llm_provider.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/memory_options.h>

#include <QDate>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

class MemoryPrivate;

namespace ConversationIngest {

// The tool the update decision is asked for through.
inline constexpr const char *UpdateTool = "record_memory_changes";

// A conversation's state, stored as JSON under stateKey():
// {"conversation_id", "scope", "source", "private", "summary", "messages": [{role, content, name, at}],
//  "message_count", "summarized_through"}.
struct State
{
    QString conversationId; // whose state it is: the id and where its records go
    QString scope;
    QString source;
    bool isPrivate = false;
    QString summary;
    QList<ConversationMessage> messages; // the last m messages, oldest first
    qint64 messageCount = 0;             // messages ever added to the conversation
    qint64 summarizedThrough = 0;        // how many of them the summary covers
};

struct Job;
// The key of a conversation's state: one per conversation id *and* records' scope, source and
// privacy, so Memories with other roots, other sources or private and shared ingestion that reuse an
// id never see each other's summary or messages.
QString stateKey(const Job &job);
// Deletes the state of every conversation whose records go to `scope` or below; returns how many.
int removeStates(StorageBackend &storage, const QString &scope);
// Lenient: a missing or malformed document is an empty state.
State stateFromJson(const Json &json);
Json stateToJson(const State &state);

// A stored memory as the LLM sees it.
struct Candidate
{
    QString id; // the small id shown ("0", "1", ...)
    QString text;
};

ChatRequest factsRequest(const QString &summary, const QList<ConversationMessage> &recent,
                         const QList<ConversationMessage> &fresh, const QDate &today);
// nullopt when the reply has no "facts" list; blank and repeated facts are dropped.
std::optional<QStringList> readFacts(const Json &reply);

// One change the LLM asked for, as it wrote it.
struct Decision
{
    QString event; // upper-cased; Mem0's "NONE" reads as "NOOP"
    QString id;
    QString text;
    QString oldText;
};

ChatRequest updateRequest(const QStringList &facts, const QList<Candidate> &candidates, bool viaTool);
// nullopt when the reply holds no list of changes.
std::optional<QList<Decision>> readDecisions(const Json &reply);
// The changes of a reply to updateRequest(): the tool call's arguments (or, from a model that
// answered in text instead, the JSON in its text), or the structured reply.
std::optional<QList<Decision>> readDecisions(const ChatResponse &response, bool viaTool);

ChatRequest summaryRequest(const QString &previous, const QList<ConversationMessage> &messages);
// nullopt when the reply has no non-blank "summary".
std::optional<QString> readSummary(const Json &reply);

// What one addConversation() call resolved at the call, for the writer task.
struct Job
{
    QString conversationId;
    QList<ConversationMessage> messages; // checked and trimmed, roles lower-cased
    MemoryRecord base;                   // the defaults' fields (scope, source, ...) resolved
    int recent = 10;                     // m
    int similar = 10;                    // s
};

// Passes what the ingestion wrote to the summary task that follows it.
struct Ticket
{
    bool ingested = false;
    qint64 firstIndex = 0; // index of the job's first message in the conversation
};

// The ingestion itself; runs on the writer thread. Throws only for storage and embedder failures.
ConversationResult ingest(MemoryPrivate &d, const Job &job, Ticket &ticket);
// Folds the messages not yet summarised into the summary; runs on the writer thread after ingest().
// Never throws: without an LLM, or when the call fails, the old summary stays.
void refreshSummary(MemoryPrivate &d, const Job &job, const Ticket &ticket);

} // namespace ConversationIngest

} // namespace mneme
