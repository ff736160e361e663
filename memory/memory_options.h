#pragma once

#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/record_filter.h>
#include <mneme/core/record_order.h>
#include <mneme/memory/export.h>

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

// Who reads, and so which private records a read shows (docs/concepts.md#privacy-and-source). Every
// read of Memory, MemoryScope and MemorySlice takes one (recall through RecallOptions::reader), and so
// do update(), undo() and forget(), which act on what their caller can see. The default is the
// anonymous reader: shared records only. A server that serves the memory to others builds one per
// caller; the person who owns the store, reading it from a terminal or a window, is the curator.
struct MNEME_MEMORY_EXPORT ReadContext
{
    QString source;         // the reader's source ("user:alice"): its own private records are visible,
    bool ownPrivate = true; // unless this is false (then it sees what an anonymous reader sees)
    bool curator = false;   // the store's owner: every record, the private ones of every source too

    // Shared records only (the same as ReadContext()).
    static ReadContext anonymous();
    // The shared records and, with `ownPrivate`, the private records of `source`.
    static ReadContext of(const QString &source, bool ownPrivate = true);
    // Every record: for the person who owns the store.
    static ReadContext asCurator();

    // True when this reader may see `record`.
    bool sees(const MemoryRecord &record) const;
    // Narrows `filter` to the records this reader may see (its privacy fields).
    void restrict(RecordFilter &filter) const;
    bool operator==(const ReadContext &other) const = default;
};

// Fields of a save. Unset optionals are inferred by the LLM when one is configured, else take
// defaults: scope "/", no categories, default_importance.
struct MNEME_MEMORY_EXPORT RememberOptions
{
    std::optional<QString> scope;
    std::optional<QStringList> categories;
    std::optional<double> importance; // 0..1
    Json metadata = Json::object();
    QString source;                   // empty: none
    bool isPrivate = false;           // requires a source (decision 5)
    QDateTime createdAt;              // invalid: now
    QString agentRole;                // reported in events
    std::optional<QString> rootScope; // overrides the Memory's root_scope for this call
    // Mem0-style identities, stored as the metadata keys "user_id", "agent_id" and "run_id" (empty:
    // none). Recall, forget and the save pipeline (identical records, consolidation, the offline scope
    // vote) keep records of different identities apart.
    QString userId;
    QString agentId;
    QString runId;
};

// One item of a batch whose items carry their own fields.
struct MNEME_MEMORY_EXPORT MemoryInput
{
    QString content;
    RememberOptions options;
};

// One turn of a conversation: "<speaker>: <text>" is what is stored.
struct MNEME_MEMORY_EXPORT ConversationTurn
{
    QString speaker; // empty: the text alone
    QString text;
    QDateTime at;                   // invalid: now
    Json metadata = Json::object(); // merged over the defaults' metadata
};

// How rememberConversation() stores turns. Each turn is its own record, even when its words repeat
// an earlier turn (no duplicate lookup, no intra-batch dedup: a conversation is a log); its vector blends the
// turn's own embedding with those of the `contextWindow` turns before and after it (each weighted
// `contextWeight`), so a short reply ("Yes, last Tuesday!") is found by what it answers; and its
// keyword context (MemoryRecord::context) holds the text of those turns, which keyword search reads at
// keyword_context_weight.
struct MNEME_MEMORY_EXPORT ConversationOptions
{
    RememberOptions defaults;            // scope, categories, importance, source, ... of every turn
    std::optional<int> contextWindow;    // unset: conversation_context_window; 0: each turn alone
    std::optional<double> contextWeight; // unset: conversation_context_weight; 0..1
};

// One message of a conversation given to Memory::addConversation().
struct MNEME_MEMORY_EXPORT ConversationMessage
{
    QString role; // "user", "assistant" or "system"
    QString content;
    QString name; // optional speaker name, shown to the LLM
    QDateTime at; // invalid: unknown (records then take the time of the call)
};

// How Memory::addConversation() ingests messages (Mem0-style: facts are extracted, then each is
// added, merged into a similar memory, or used to delete one).
struct MNEME_MEMORY_EXPORT AddConversationOptions
{
    QString conversationId;             // required: keys the rolling summary and the recent messages
    RememberOptions defaults;           // scope, categories, importance, source, privacy, metadata and
                                        // root scope of the records it creates; also where it looks
                                        // for similar memories (same source and privacy only)
    std::optional<int> recentMessages;  // m, earlier messages shown for context; unset: conversation_recent_messages
    std::optional<int> similarMemories; // s, similar memories compared per fact; unset: conversation_similar_memories
};

// One change addConversation() made (or chose not to make).
struct MNEME_MEMORY_EXPORT ConversationChange
{
    QString event;           // "ADD", "UPDATE", "DELETE" or "NOOP"
    QString recordId;        // the record added, updated, deleted or left as it was
    QString content;         // its content now (DELETE: the content it had)
    QString previousContent; // UPDATE: the content it had
};

struct MNEME_MEMORY_EXPORT ConversationResult
{
    QStringList facts; // the candidate facts extracted from the new messages
    QList<ConversationChange> changes;
    QString path; // "llm", or "offline" when the LLM was missing or failed
};

enum class RecallDepth {
    Shallow,
    Deep
};

struct RecallStats;

struct MNEME_MEMORY_EXPORT RecallOptions
{
    QStringList scopes;     // empty: the root scope (or everything); several: a slice
    QStringList categories; // any-of
    int limit = 10;
    RecallDepth depth = RecallDepth::Deep;
    ReadContext reader;          // who recalls: which private records may be found (default: none)
    QString source;              // the same as reader.source when that is empty (the older spelling)
    bool includePrivate = false; // the same as reader.curator (the older spelling)
    QString onlySource;          // only records with this source
    QDateTime now;               // invalid: the current time (recency is measured to it)
    // Time travel: only records created before this, and (graph memory) only the relations valid at
    // this time. Invalid: now.
    QDateTime asOf;
    // The relevance floor of this recall (0..1); unset: the configuration's min_relevance.
    std::optional<double> minRelevance;
    // Mem0's `threshold`: only matches whose score is at least this (0..1); unset: no threshold.
    std::optional<double> threshold;
    // Conditions on the records' metadata (MetadataFilter: {"key": value}, {"key": {"$gte": 2}}, $in,
    // $nin, $ne, $exists, $and); an empty object: none.
    Json metadata = Json::object();
    // Only records with these identities (RememberOptions::userId ...); empty: any.
    QString userId;
    QString agentId;
    QString runId;
    // When set, filled with how the recall was answered (memory_match.h): whether an approximate index
    // answered, or the store scanned exactly because its index was being built. It must outlive the
    // recall (for recallAsync(), until the future finishes).
    RecallStats *stats = nullptr;

    // `reader` with the older fields folded in: the context this recall reads with.
    ReadContext effectiveReader() const;
};

struct MNEME_MEMORY_EXPORT ForgetOptions
{
    std::optional<QString> scope; // unset: the root scope, or everything
    QStringList ids;
    QStringList categories;
    QDateTime olderThan;            // created before this
    Json metadata = Json::object(); // conditions on the metadata, as RecallOptions::metadata
    // Only records with these identities; each counts as a condition.
    QString userId;
    QString agentId;
    QString runId;
};

struct MNEME_MEMORY_EXPORT UpdateOptions
{
    std::optional<QString> content;
    std::optional<QString> scope;
    std::optional<QStringList> categories;
    std::optional<double> importance;
    std::optional<Json> metadata; // replaces the metadata, or with mergeMetadata patches it
    // Apply `metadata` as a JSON merge patch (RFC 7386): its keys are set, a key set to null is
    // removed, the others are kept.
    bool mergeMetadata = false;
};

// Which records Memory::searchRecords() and countRecords() select, and in which order: for browsing
// a store of any size a page at a time (a records table, a search box).
struct MNEME_MEMORY_EXPORT RecordQuery
{
    QStringList scopes;     // relative to the root scope; empty: the root scope (or everything); several: any of them
    QStringList categories; // records with any of these
    QString source;         // only records of this source; empty: any
    QString text;           // only records whose content contains this text, ignoring case
    RecordOrder order;      // newest first unless asked otherwise
    int limit = 200;        // a page: at most this many records (1..10,000)
    int offset = 0;         // records skipped before the page
};

// What a batch save did.
struct MNEME_MEMORY_EXPORT SaveResult
{
    QList<QString> ids; // ids of the records stored (or found identical), in input order
    int stored = 0;     // new records written
    int dropped = 0;    // items dropped: near-duplicates within the batch, blank texts
    int existing = 0;   // items identical to (or merged by consolidation into) a stored record
    int updated = 0;    // stored records consolidation rewrote
    int deleted = 0;    // stored records consolidation deleted
};

// One node of the scope tree.
struct MNEME_MEMORY_EXPORT ScopeNode
{
    QString path;
    int recordCount = 0;
    QList<ScopeNode> children;
};

MNEME_MEMORY_EXPORT void to_json(Json &j, const ScopeNode &node);

} // namespace mneme
