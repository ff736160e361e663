#pragma once

#include "core/json.h"

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

// Fields of a save. Unset optionals are inferred by the LLM when one is configured, else take
// defaults: scope "/", no categories, default_importance.
struct RememberOptions
{
    std::optional<QString> scope;
    std::optional<QStringList> categories;
    std::optional<double> importance;       // 0..1
    Json metadata = Json::object();
    QString source;                         // empty: none
    bool isPrivate = false;                 // requires a source (decision 5)
    QDateTime createdAt;                    // invalid: now
    QString agentRole;                      // reported in events
    std::optional<QString> rootScope;       // overrides the Memory's root_scope for this call
};

// One item of a batch whose items carry their own fields.
struct MemoryInput
{
    QString content;
    RememberOptions options;
};

// One turn of a conversation: "<speaker>: <text>" is what is stored.
struct ConversationTurn
{
    QString speaker;                        // empty: the text alone
    QString text;
    QDateTime at;                           // invalid: now
    Json metadata = Json::object();         // merged over the defaults' metadata
};

// How rememberConversation() stores turns. Each turn is its own record, even when its words repeat
// an earlier turn (no duplicate lookup, no intra-batch dedup: a conversation is a log); its vector blends the
// turn's own embedding with those of the `contextWindow` turns before and after it (each weighted
// `contextWeight`), so a short reply ("Yes, last Tuesday!") is found by what it answers.
struct ConversationOptions
{
    RememberOptions defaults;               // scope, categories, importance, source, ... of every turn
    std::optional<int> contextWindow;       // unset: conversation_context_window; 0: each turn alone
    std::optional<double> contextWeight;    // unset: conversation_context_weight; 0..1
};

enum class RecallDepth { Shallow, Deep };

struct RecallOptions
{
    QStringList scopes;                     // empty: the root scope (or everything); several: a slice
    QStringList categories;                 // any-of
    int limit = 10;
    RecallDepth depth = RecallDepth::Deep;
    QString source;                         // sees private records of this source
    bool includePrivate = false;            // sees every private record
    QString onlySource;                     // only records with this source
    QDateTime now;                          // invalid: the current time (recency is measured to it)
};

struct ForgetOptions
{
    std::optional<QString> scope;           // unset: the root scope, or everything
    QStringList ids;
    QStringList categories;
    QDateTime olderThan;                    // created before this
    Json metadata = Json::object();         // key == value for every key
};

struct UpdateOptions
{
    std::optional<QString> content;
    std::optional<QString> scope;
    std::optional<QStringList> categories;
    std::optional<double> importance;
    std::optional<Json> metadata;
};

// What a batch save did.
struct SaveResult
{
    QList<QString> ids;                     // ids of the records stored (or found identical), in input order
    int stored = 0;                         // new records written
    int dropped = 0;                        // items dropped: near-duplicates within the batch, blank texts
    int existing = 0;                       // items identical to (or merged by consolidation into) a stored record
    int updated = 0;                        // stored records consolidation rewrote
    int deleted = 0;                        // stored records consolidation deleted
};

// One node of the scope tree.
struct ScopeNode
{
    QString path;
    int recordCount = 0;
    QList<ScopeNode> children;
};

void to_json(Json &j, const ScopeNode &node);

} // namespace mneme
