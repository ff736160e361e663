#pragma once

#include <mneme/core/json.h>
#include <mneme/flows/export.h>

#include <QString>
#include <optional>

namespace mneme {

// Where a flow's state goes after its steps, so that a later kickoff with the same id resumes from
// it (CrewAI's FlowPersistence). Implement it to keep flow states anywhere; SqliteFlowPersistence is
// the embedded default.
//
// Threads. A flow calls saveState() on its own persistence thread, one save after the other, and
// loadState() on the thread that calls kickoff(). One backend may serve several flows at once, so
// an implementation must be thread-safe. Both may block; both throw mneme::Error on failure (a
// failed save fails the step that was being saved).
class MNEME_FLOWS_EXPORT FlowPersistence
{
public:
    virtual ~FlowPersistence() = default;

    // Stores `state` (a JSON object whose "id" is `flowId`) as saved after step `stepName`.
    virtual void saveState(const QString &flowId, const QString &stepName, const Json &state) = 0;
    // The state saved last for `flowId`, or nothing when none was saved.
    virtual std::optional<Json> loadState(const QString &flowId) = 0;
    // Where the states are, for messages ("/home/me/.mneme/flows.db").
    virtual QString location() const = 0;
};

} // namespace mneme
