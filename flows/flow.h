#pragma once

#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>
#include <mneme/flows/export.h>
#include <mneme/flows/flow_condition.h>
#include <mneme/flows/flow_definition.h>
#include <mneme/flows/flow_options.h>
#include <mneme/flows/flow_state_model.h>
#include <mneme/flows/step_function.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>

#include <QFuture>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QMutex>
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <type_traits>
#include <typeinfo>

namespace mneme {

class FlowPrivate;
class ChatMemory;
class Memory;

// An event-driven pipeline authored in C++ (CrewAI's Flow): named steps that start the flow, listen
// to other steps or to router labels, or route; a state shared by the steps; built-in memory;
// persistence of the state after each step; signals for everything that happens.
//
//   class ResearchFlow : public mneme::Flow {
//   public:
//       ResearchFlow() : Flow(QStringLiteral("ResearchFlow")) {
//           start("gather_data", &ResearchFlow::gatherData);
//           listen("write_report", "gather_data", &ResearchFlow::writeReport);
//       }
//       QString gatherData() { ... remember(findings, ...); return findings; }
//       QString writeReport(const QString &findings) { ... recall("...") ...; return report; }
//   };
//   mneme::FlowInstance<ResearchFlow> flow;           // or: auto flow = mneme::makeFlow<ResearchFlow>();
//   QFuture<Json> result = flow.kickoff({{"topic", "databases"}});
//
// Definition. Steps are registered with start / listen / router, usually in the constructor; each
// registration is checked at once and validate() (called by kickoff, toDot and toJson) checks the
// rest. See FlowDefinition::addStep for what is refused.
//
// Execution (docs/flows.md has the full rules). kickoff() runs the unconditional starts (all
// starts when there is none) concurrently. After a step completes, the routers it triggers run
// first, one after the other and repeatedly (a router's label can trigger further routers), then the
// listeners of the step and of each label, concurrently. A synchronous step runs on the thread pool;
// one that returns a QFuture is called on the flow's thread and awaited without blocking it. The
// result is the output of the step that completed last. A step that fails fails the flow.
//
// Threads. A Flow lives on one thread, which must run an event loop; kickoff() is called there and
// every signal is emitted there. State accessors and the memory methods may be called from any
// thread (steps run on the pool).
//
// Destruction. A subclass of Flow is run as FlowInstance<Subclass> (below), whose destructor stops a
// run in progress before any member of the subclass is destroyed; kickoff() of a subclass object
// that is not a FlowInstance throws Error(InvalidArgument) naming FlowInstance. A plain Flow (or
// TypedFlow<State>) needs none: ~Flow stops its run, and its steps use nothing of a subclass.
class MNEME_FLOWS_EXPORT Flow : public QObject
{
    Q_OBJECT
public:
    // An unstructured flow: its state is a JSON object with an "id". Throws Error(InvalidArgument)
    // for an empty name or invalid options.
    explicit Flow(const QString &name, const FlowOptions &options = {}, QObject *parent = nullptr);
    // Stops a run in progress as stopAndWait() does.
    ~Flow() override;

    QString name() const;
    const FlowOptions &options() const;

    // ---- Definition ------------------------------------------------------------------------------
    // A start step: runs at kickoff with the kickoff's inputs (an unconditional start).
    template<typename F>
    Flow &start(const QString &name, F &&function, const StepOptions &options = {})
    {
        addStep({name, FlowDefinition::StepKind::Start, std::nullopt, {}, options.persist}, bind(std::forward<F>(function)));
        return *this;
    }
    // A conditional start: triggered like a listener, and also run at kickoff when the flow has no
    // unconditional start.
    template<typename F>
    Flow &start(const QString &name, const FlowCondition &condition, F &&function, const StepOptions &options = {})
    {
        addStep({name, FlowDefinition::StepKind::Start, condition, {}, options.persist}, bind(std::forward<F>(function)));
        return *this;
    }
    // A listener: runs with the output of what triggered it.
    template<typename F>
    Flow &listen(const QString &name, const FlowCondition &trigger, F &&function, const StepOptions &options = {})
    {
        addStep({name, FlowDefinition::StepKind::Listener, trigger, {}, options.persist}, bind(std::forward<F>(function)));
        return *this;
    }
    // A router: its output is a label (a string; a number or boolean as its JSON text, so 0 gives
    // "0") that triggers the listeners of that label; null emits nothing. It must return one of
    // `labels`.
    template<typename F>
    Flow &router(const QString &name, const FlowCondition &trigger, const QStringList &labels, F &&function,
                 const StepOptions &options = {})
    {
        addStep({name, FlowDefinition::StepKind::Router, trigger, labels, options.persist}, bind(std::forward<F>(function)));
        return *this;
    }

    // mneme::and_ / mneme::or_, also reachable unqualified inside a Flow subclass.
    template<typename... Conditions>
    static FlowCondition and_(const Conditions &...conditions)
    {
        return mneme::and_(conditions...);
    }
    template<typename... Conditions>
    static FlowCondition or_(const Conditions &...conditions)
    {
        return mneme::or_(conditions...);
    }

    const FlowDefinition &definition() const;
    // Throws Error(InvalidArgument) naming the step when the definition is incomplete or wrong.
    void validate() const;
    // The graph in Graphviz DOT (validated first).
    QString toDot() const;
    // The definition as JSON, what `mneme flow-graph` reads (validated first).
    Json toJson() const;
    // For a flow program's main(): when `arguments` hold --flow-graph (DOT) or --flow-graph=json
    // (the JSON description), prints it on standard output and returns true, so main() can return.
    bool printGraphIfAsked(const QStringList &arguments) const;

    // ---- State (any thread) ----------------------------------------------------------------------
    // The state's id (the flow id: what persistence saves under and kickoff({"id": ...}) resumes).
    QString stateId() const;
    // A copy of the state as a JSON object, whatever its kind.
    Json stateJson() const;
    // The unstructured state (a TypedFlow has its own state()).
    Json state() const;
    Json stateValue(const QString &key) const;
    // Changes the state under the flow's lock, all or nothing. The change may not remove or alter
    // the id, and a typed state must still fit its type: Error(InvalidArgument) otherwise. The
    // change reads and changes the state it is given: a state function of the flow called inside it
    // (stateValue(), state(), updateState(), ...) would wait for the lock the change holds, and
    // throws Error(InvalidArgument) instead (the change then does not happen).
    void updateState(const std::function<void(Json &)> &change);
    void setStateValue(const QString &key, const Json &value);
    // A fresh state (the model's defaults) under a new id. Not while running.
    void resetState();

    // ---- Running (the flow's thread) -------------------------------------------------------------
    // Starts a run and returns at once. The future gives the output of the step that completed last
    // (null when no step produced anything), or fails with the step's Error ("Flow "X" failed in step
    // "Y": ..."). Cancelling the future cancels the run.
    //
    // `inputs` (a JSON object) are merged into the state. With an "id" and persistence, the state
    // saved last under that id is loaded first (resume); KickoffOptions::restoreFrom forks a saved
    // state under a new id. Throws Error at the call, before anything runs, for: an invalid
    // definition; a run already in progress; inputs that are not an object or do not fit a typed
    // state ("Invalid inputs for structured state: ..."); a fork without persistence, of an unknown
    // id, or together with an "id" input; a persistence that cannot be read; a call from another
    // thread than the flow's; an object of a Flow subclass that is not a FlowInstance.
    //
    // Waiting on the future on the flow's own thread (future.result(), waitForFinished()) would
    // stop the event loop the run needs: the wait fails at once instead, with the run stopped and
    // an Error(InvalidArgument) that names kickoffAndWait(). Wait with kickoffAndWait(), or attach a
    // continuation (future.then(context, ...)), or connect to flowFinished.
    QFuture<Json> kickoff(const Json &inputs = Json::object(), const KickoffOptions &options = {});
    // kickoff() and wait for the result, running a local event loop meanwhile. For scripts, tests
    // and command-line tools only: never on a GUI thread. Throws what the run failed with.
    Json kickoffAndWait(const Json &inputs = Json::object(), const KickoffOptions &options = {});
    // Stops the run in progress: no step starts any more, asynchronous steps in flight are
    // cancelled, synchronous ones still queued in the pool never start and those running are waited
    // for (their outputs dropped); the run then fails with Error(Cancelled). Returns at once.
    void cancel();
    // Stops the run in progress and returns when nothing of it is left running on the flow's behalf:
    // no step starts any more, asynchronous steps are cancelled, synchronous steps still queued in
    // the pool never start and those running are waited for (blocking this thread), as is the
    // memory's drain. The run is reported at once: stepCancelled for each step in flight,
    // flowFailed, the future failed with Error(Cancelled) "the run of flow "F" was stopped by
    // stopAndWait() while it ran" (or with the run's failure if it was failing already), and its
    // events closed. What its cancelled steps produce later is ignored, and the flow can be kicked
    // off again. Nothing happens when no run is in progress. Never throws.
    //
    // FlowInstance's destructor calls it (so does ~Flow). Call it on the flow's thread (elsewhere it only warns); a synchronous step must not be waiting for the
    // flow's thread then. The producer of an asynchronous step's future (a crew, a QtConcurrent job)
    // is cancelled, not waited for: it must not use the flow after its future is cancelled.
    void stopAndWait() noexcept;
    bool isRunning() const;
    // The outputs of the current or last run, in completion order (routers' outputs included).
    QList<FlowStepOutput> stepOutputs() const;

    // ---- Memory (any thread) ---------------------------------------------------------------------
    // The flow's memory: the one given with setMemory(), else the built-in one (built on first use,
    // root scope /flow/<sanitised name>), else null when memory is off. Throws what building it throws.
    Memory *memory();
    // Uses `memory` (as it is: no root scope is added) instead of the built-in one; null goes back to
    // the options' choice. Not while running.
    void setMemory(std::shared_ptr<Memory> memory);
    // Memory::remember / rememberMany / recall / recallAsync / extractMemories on the flow's memory.
    // With memory off they throw Error(InvalidArgument) "No memory configured for this flow ...".
    MemoryRecord remember(const QString &content, const RememberOptions &options = {});
    QFuture<SaveResult> rememberMany(const QStringList &contents, const RememberOptions &options = {});
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {});
    QFuture<QList<MemoryMatch>> recallAsync(const QString &query, const RecallOptions &options = {});
    QStringList extractMemories(const QString &content);
    // A chat session for the flow's agents (AgentConfig::chatMemory, an AgentChat) or its own use:
    // built on first use from FlowOptions::chatMemoryConfig, in the flow memory's file (or the config's
    // storage), its vector and long_term blocks over the flow's memory; the same object for the same
    // id afterwards. A run ends after the flushes of the chat memories built are done. setMemory()
    // drops the chat memories built over the previous memory. Throws Error(InvalidArgument) for an
    // invalid configuration or session id, and what building the memory throws.
    std::shared_ptr<ChatMemory> chatMemory(const QString &sessionId);

Q_SIGNALS:
    void flowStarted(const QString &flowId, const QJsonObject &inputs);
    // After the memory's pending saves are drained.
    void flowFinished(const QString &flowId, const QJsonValue &result, double durationMs);
    void flowFailed(const QString &flowId, const QString &error, double durationMs);
    void stepStarted(const QString &step, const QJsonValue &input);
    void stepFinished(const QString &step, const QJsonValue &input, const QJsonValue &output, double durationMs);
    void stepFailed(const QString &step, const QJsonValue &input, const QString &error, double durationMs);
    // A step that was started but whose output was dropped: it lost an or_ race, or the run stopped
    // (failed or cancelled) while it ran.
    void stepCancelled(const QString &step, const QString &reason, double durationMs);
    void routerLabelEmitted(const QString &router, const QString &label);

protected:
    // For TypedFlow: a flow whose state is kept by `model`.
    Flow(const QString &name, std::unique_ptr<FlowStateModel> model, const FlowOptions &options, QObject *parent);
    // The state model and the lock that guards it.
    FlowStateModel &stateModel() const;
    QMutex &stateMutex() const;
    // Throws Error(InvalidArgument) naming `call` when this thread is running a change of the state
    // (inside updateState()), whose lock it would wait for for ever. Call it before locking.
    void refuseInsideChange(const char *call) const;
    // Marks this thread as running a change of the state while it lives (the lock held).
    class ChangeScope
    {
    public:
        explicit ChangeScope(const Flow &flow);
        ~ChangeScope();
        ChangeScope(const ChangeScope &) = delete;
        ChangeScope &operator=(const ChangeScope &) = delete;

    private:
        const Flow &m_flow;
    };
    // Declares that objects whose most-derived class is `type` stop their run before anything of
    // that class is destroyed (FlowInstance, TypedFlow): kickoff() accepts them.
    void stopsRunOnDestruction(const std::type_info &type);

private:
    friend class FlowPrivate;
    void addStep(const FlowDefinition::Step &step, StepFunction function);

    template<typename M>
    struct MemberClass;
    template<typename C, typename R, typename... A>
    struct MemberClass<R (C::*)(A...)>
    {
        using Type = C;
    };
    template<typename C, typename R, typename... A>
    struct MemberClass<R (C::*)(A...) const>
    {
        using Type = C;
    };

    template<typename F>
    StepFunction bind(F &&function)
    {
        using Fn = std::decay_t<F>;
        if constexpr (std::is_member_function_pointer_v<Fn>) {
            using C = typename MemberClass<Fn>::Type;
            static_assert(std::is_base_of_v<Flow, C>, "a member function step must belong to the flow's own class");
            return StepFunction::fromMember(static_cast<C *>(this), function);
        } else {
            return StepFunction::from(std::forward<F>(function));
        }
    }

    std::unique_ptr<FlowPrivate> d;
};

// A flow of the Flow subclass T, ready to run: its destructor stops a run in progress before any
// member of T is destroyed (the destructor of the most-derived class runs first), so the steps of
// T, which use its members, never outlive them. The constructor takes T's arguments.
//
//   mneme::FlowInstance<ResearchFlow> flow;                      // on the stack
//   auto flow = mneme::makeFlow<ResearchFlow>(options);          // on the heap
//
// Call stopAndWait() yourself only to stop a run earlier. T may not be final.
template<typename T>
class FlowInstance final : public T
{
    static_assert(std::is_base_of_v<Flow, T>, "FlowInstance<T> needs a subclass of mneme::Flow");

public:
    template<typename... Args>
    explicit FlowInstance(Args &&...args)
        : T(std::forward<Args>(args)...)
    {
        this->stopsRunOnDestruction(typeid(FlowInstance));
    }
    ~FlowInstance() override { this->stopAndWait(); }
};

// A FlowInstance<T> on the heap.
template<typename T, typename... Args>
std::unique_ptr<FlowInstance<T>> makeFlow(Args &&...args)
{
    return std::make_unique<FlowInstance<T>>(std::forward<Args>(args)...);
}

} // namespace mneme
