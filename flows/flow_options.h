#pragma once

#include <mneme/core/json.h>
#include <mneme/flows/export.h>
#include <mneme/memory/chat_memory_config.h>
#include <mneme/memory/memory_config.h>

#include <QString>
#include <memory>
#include <optional>

class QThreadPool;

namespace mneme {

class EventBus;
class FlowPersistence;
class Memory;

// Everything a Flow can be told at construction. Every field has a working default: no persistence,
// a built-in memory under /flow/<sanitised flow name>, no event bus, the global thread pool.
struct MNEME_FLOWS_EXPORT FlowOptions
{
    // How often one step may run in one kickoff before the run fails as an endless loop (CrewAI's
    // max_method_calls). At least 1.
    int maxStepCalls = 100;

    // Built-in memory. On: the flow builds a Memory from `memoryConfig` on first use, with its root
    // scope set to /flow/<ScopePath::sanitizeName(name)> unless memoryConfig.rootScope is given. Off:
    // remember / recall / extractMemories throw. A Memory given with Flow::setMemory() wins over both.
    bool memory = true;
    MemoryConfig memoryConfig;
    // The chat sessions of Flow::chatMemory(): their settings and blocks (vector and long_term blocks
    // over the flow's memory), and their store (chatMemoryConfig.storage, else the flow memory's file).
    ChatMemoryConfig chatMemoryConfig;

    // Where the state is saved; null: nowhere. See SqliteFlowPersistence for the embedded default.
    std::shared_ptr<FlowPersistence> persistence;
    // With persistence: save after every step (CrewAI's class-level @persist), or, when false, only
    // after the steps registered with StepOptions::persist (the method-level @persist).
    bool persistEveryStep = true;

    // Where flow and step events are published as well as emitted as signals; null: signals only.
    // The built-in memory is attached to it too (its memory_* events). The bus must outlive the flow.
    EventBus *eventBus = nullptr;

    // Where synchronous steps run; null: QThreadPool::globalInstance(). Must outlive the flow.
    QThreadPool *threadPool = nullptr;
};

// Per step, given when the step is registered.
struct MNEME_FLOWS_EXPORT StepOptions
{
    // Save the state after this step (with FlowOptions::persistEveryStep false; with it true every
    // step is saved anyway). Needs FlowOptions::persistence.
    bool persist = false;
};

// Per kickoff.
struct MNEME_FLOWS_EXPORT KickoffOptions
{
    // Fork: start from the latest saved state of this flow id, under a new id; the saved flow is not
    // changed. Needs persistence; cannot be combined with an "id" in the inputs (which resumes).
    QString restoreFrom;
};

// One output of a run, in completion order.
struct MNEME_FLOWS_EXPORT FlowStepOutput
{
    QString step;
    Json output;
};

} // namespace mneme
