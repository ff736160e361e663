#pragma once

#include <mneme/core/json.h>
#include <mneme/flows/export.h>

#include <QString>
#include <memory>

namespace mneme {

// How a flow keeps its state: as a JSON object (Flow), or as a C++ struct (TypedFlow<State>). The
// flow always talks to it in JSON (inputs, persistence, events) and guards it with its own mutex.
class MNEME_FLOWS_EXPORT FlowStateModel
{
public:
    virtual ~FlowStateModel() = default;

    // The whole state as a JSON object, "id" included.
    virtual Json toJson() const = 0;
    // `state` as the model would hold it (a typed state: read into the struct and written back).
    // Throws Error(InvalidArgument) starting with `context` when it does not fit: not an object, no
    // non-empty string "id", or (typed) a field that is unknown or of the wrong type.
    virtual Json check(const Json &state, const QString &context) const = 0;
    // Replaces the state with `state`, checked as check() does; nothing changes when it throws.
    virtual void assign(const Json &state, const QString &context) = 0;
    // A state of the model's defaults (no id yet).
    virtual Json defaults() const = 0;
    // "unstructured" or "structured".
    virtual QString kind() const = 0;
};

} // namespace mneme
