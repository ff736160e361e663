#pragma once

// Private to the memory library: the prompts, schemas and reply readers of memory analysis.
// Every reader is lenient about what it can repair (missing optional fields, out-of-range numbers,
// stray entries) and never throws: what it cannot use is dropped.

#include <mneme/core/llm_provider.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/scope_info.h>
#include <mneme/core/storage_backend.h>

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace mneme {

// Fields proposed for a record that was saved without them.
struct SaveAnalysis
{
    QString suggestedScope = QStringLiteral("/"); // relative to the root; clamped by the caller
    QStringList categories;
    double importance = 0.5;
    Json metadata = Json{{"entities", Json::array()}, {"dates", Json::array()}, {"topics", Json::array()}};
};

struct ConsolidationAction
{
    enum class Kind {
        Keep,
        Update,
        Delete
    };
    Kind kind = Kind::Keep;
    QString recordId;
    QString newContent; // Update only
    QString reason;
};

// What to do with the stored records similar to a new one, and whether to store the new one too.
struct ConsolidationPlan
{
    QList<ConsolidationAction> actions;
    bool insertNew = true;
    QString insertReason;
};

struct QueryAnalysis
{
    QStringList keywords;
    QStringList suggestedScopes;                   // relative to the searched prefix; clamped by the caller
    QString complexity = QStringLiteral("simple"); // "simple" or "complex"
    QStringList recallQueries;                     // at most 3
    QString timeFilter;                            // ISO 8601 earliest date, or empty
};

namespace LlmAnalysis {

// Scopes are shown to the model relative to `root` ("/" is the root itself).
QString relativeScope(const QString &root, const QString &scope);
// The scopes a prompt offers a model, relative to `base`: each of `tops` and the scopes just below
// it, without repeats, at most `max`.
QStringList scopesForPrompt(StorageBackend &storage, const QString &base, const QStringList &tops, const RecordFilter &visible,
                            int max = 50);
// A scope a model suggested, made safe: ".", "..", empty and control-character segments dropped,
// the root's own prefix removed when the model repeated it, then joined under `root`. The result is
// always `root` or a path below it (Mneme decision 4).
QString clampScope(const QString &root, const QString &suggested);

ChatRequest saveRequest(const QString &content, const QStringList &existingScopes, const QStringList &existingCategories);
// nullopt when the reply has no usable scope.
std::optional<SaveAnalysis> readSave(const Json &reply);

ChatRequest consolidationRequest(const QString &newContent, const std::vector<MemoryRecord> &similar);
// Actions on ids not in `similar` are dropped; an update without content is dropped; nullopt when the
// reply is not an object.
std::optional<ConsolidationPlan> readConsolidation(const Json &reply, const std::vector<MemoryRecord> &similar);

ChatRequest extractionRequest(const QString &content);
// nullopt when the reply has no "memories" list; blank and repeated entries are dropped.
std::optional<QStringList> readExtraction(const Json &reply);

// `now`: the recall's time, whose UTC date the prompt gives as today (invalid: the current time).
ChatRequest queryRequest(const QString &query, const QStringList &availableScopes, const std::optional<ScopeInfo> &info,
                         const QDateTime &now = QDateTime());
std::optional<QueryAnalysis> readQuery(const Json &reply);

// What the excerpts found so far say about the query, what is still missing, and better queries
// for a second search (Mneme decision 8).
struct Exploration
{
    QString findings;
    QString missing;            // empty when nothing is missing
    QStringList refinedQueries; // at most 3
};
ChatRequest explorationRequest(const QString &query, const QStringList &excerpts);
std::optional<Exploration> readExploration(const Json &reply);

} // namespace LlmAnalysis

} // namespace mneme
