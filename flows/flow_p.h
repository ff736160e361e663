#pragma once

// Private parts of Flow: its data (FlowPrivate), the unstructured state model, and one run of the
// flow (FlowRun), which carries out the execution rules of docs/flows.md.

#include <mneme/flows/flow.h>

#include <QElapsedTimer>
#include <QHash>
#include <QPromise>
#include <QSet>
#include <atomic>
#include <exception>
#include <optional>

namespace mneme {

class ChatMemory;
class ChatStore;
class EventBus;
class FlowRun;
class SerialExecutor;

// The unstructured state: any JSON object with a non-empty string "id".
class JsonStateModel : public FlowStateModel
{
public:
    Json toJson() const override { return m_state; }
    Json check(const Json &state, const QString &context) const override;
    void assign(const Json &state, const QString &context) override { m_state = check(state, context); }
    Json defaults() const override { return Json::object(); }
    QString kind() const override { return QStringLiteral("unstructured"); }

private:
    Json m_state = Json::object();
};

class FlowPrivate
{
public:
    FlowPrivate(Flow *flow, const QString &name, std::unique_ptr<FlowStateModel> model, const FlowOptions &options);
    ~FlowPrivate();

    // The memory if one is given or was built already; never builds one.
    std::shared_ptr<Memory> existingMemory() const;
    // The memory, building the built-in one when needed; throws "No memory configured ..." when off.
    // A call holds on to it, so a setMemory() meanwhile cannot destroy it under the call.
    std::shared_ptr<Memory> requireMemory(const char *call);
    // The chat memories built so far.
    QList<std::shared_ptr<ChatMemory>> existingChatMemories() const;
    QThreadPool *pool() const;
    // The serial thread saves run on, started on first use.
    SerialExecutor &persistenceWriter();

    // The state after merging `inputs` (and loading a saved state to resume or fork), checked
    // against the model; throws as kickoff() documents. Does not change the flow's state.
    Json prepareState(const Json &inputs, const KickoffOptions &options);
    // Called by the run when it is over, before its signal.
    void runEnded(const QList<FlowStepOutput> &outputs);
    // Flow::stopAndWait(), with the error the run fails with. Never throws.
    void stopAndWait(const Error &why) noexcept;
    void refuseWhileRunning(const QString &what) const;
    // Throws unless `actual` (the object's most-derived class) is Flow or stops the run on destruction.
    void refuseUnguardedSubclass(const std::type_info &actual) const;
    // Signals carry Qt's JSON types.
    static QJsonValue toQJsonValue(const Json &value);

    Flow *q;
    QString name;
    FlowOptions options;
    FlowDefinition definition;
    QHash<QString, StepFunction> functions;
    // Continuations of the steps are delivered through watchers parented to this child of the flow,
    // deleted first when the flow is destroyed so that none arrives afterwards.
    QObject *context = nullptr;

    std::unique_ptr<FlowStateModel> state;
    mutable QMutex stateMutex;
    // The thread running a change of the state (inside updateState()), or null.
    std::atomic<Qt::HANDLE> changingThread{nullptr};

    mutable QMutex memoryMutex;
    std::shared_ptr<Memory> givenMemory;
    std::shared_ptr<Memory> builtInMemory;
    // Chat sessions of chatMemory(), by id, and their store (declared after the memories: destroyed first).
    std::shared_ptr<ChatStore> chatStore;
    QHash<QString, std::shared_ptr<ChatMemory>> chatMemories;

    std::unique_ptr<SerialExecutor> writer;
    std::shared_ptr<FlowRun> run;
    bool destroying = false; // ~Flow has begun: no kickoff any more
    // The most-derived class that stops the run in its destructor (FlowInstance<T>, TypedFlow<S>).
    const std::type_info *stopsOnDestruction = nullptr;
    QList<FlowStepOutput> lastOutputs;
};

// One kickoff, from flowStarted to flowFinished / flowFailed. Lives on the flow's thread; kept alive
// by FlowPrivate::run and by the continuations in flight.
class FlowRun : public std::enable_shared_from_this<FlowRun>
{
public:
    FlowRun(FlowPrivate &d, const Json &inputs);

    QFuture<Json> future() { return m_promise.future(); }
    // Emits flowStarted and runs the starts.
    void begin();
    // Stops the run: no step starts any more, every step in flight is cancelled (asynchronous ones
    // settle at once, synchronous ones still queued never start, those running are waited for); the
    // run fails with `why` once they have settled. The first reason wins. While only the memory's
    // drain is left, the run still waits for it and then fails with `why`.
    void stop(const Error &why);
    // Flow::stopAndWait(): stops at once, without the event loop. Keeps the synchronous steps still
    // queued in the pool from starting, waits for those running (they may use the flow) and for the
    // memory's drain, reports every step in flight cancelled and the run failed with `why` (unless
    // it failed already), and ignores whatever of it arrives later. Never throws.
    void abandon(const Error &why) noexcept;
    QList<FlowStepOutput> outputs() const { return m_outputs; }

private:
    using Done = std::function<void()>;
    using Then = std::function<void(const Json &output)>;

    // The routers and listeners run after one step (CrewAI's _execute_listeners).
    struct Dispatch;
    // Steps of one wave that race for one or_ listener: the first to finish wins.
    struct Race;
    // One step in flight.
    struct Call
    {
        quint64 id = 0;
        QString step;
        Json input;
        QString eventId;
        QElapsedTimer timer;
        StepCall call;
        bool async = false; // returned a future (else: runs on the pool)
        std::shared_ptr<Race> race;
        Then then;
    };

    void dispatch(const QString &trigger, const Json &output, Done done);
    void routeNext(const std::shared_ptr<Dispatch> &c);
    void runRouters(const std::shared_ptr<Dispatch> &c, const QStringList &routers, int index, const Json &input);
    void listenersFrom(const std::shared_ptr<Dispatch> &c, int index);
    void wave(const QStringList &steps, const Json &input, Done done);
    // Runs one step and then what it triggers; `then` gets its output once all of that is done.
    void single(const QString &step, const Json &input, Then then, const std::shared_ptr<Race> &race = {});
    // Runs one step's code; `then` gets its output once it is recorded and saved.
    void runStep(const QString &step, const Json &input, Then then, const std::shared_ptr<Race> &race);
    void stepDone(const std::shared_ptr<Call> &call, const std::optional<Json> &output, std::exception_ptr error);
    void recordAndSave(const std::shared_ptr<Call> &call, const Json &output, const std::optional<QString> &label);
    void stepSucceeded(const std::shared_ptr<Call> &call, const Json &output, const std::optional<QString> &label);
    // Reports the step's failure; fails the run with `runError` when given.
    void stepFailedWith(const std::shared_ptr<Call> &call, const Error &error, const std::optional<Error> &runError);
    void stepCancelledWith(const std::shared_ptr<Call> &call, const QString &reason);

    // The steps a trigger fires (CrewAI's _find_triggered_methods): routers or the others.
    QStringList triggered(const QString &trigger, bool routers);
    void rearm(const QString &trigger, QSet<QString> &rearmable);
    // The steps of `steps` that race each other, or none.
    QStringList racingSteps(const QStringList &steps) const;

    void maybeFinish();
    void finish();
    void complete();
    Error stepError(const QString &step, const Error &error) const;
    QString publish(const QString &type, Json properties, const QString &parentId);
    Json withFlow(Json properties) const;

    FlowPrivate &d;
    const Json m_inputs;
    QPromise<Json> m_promise;
    QElapsedTimer m_timer;
    QString m_flowId;
    QString m_flowEventId;
    EventBus *m_bus;

    QSet<QString> m_completed;
    QSet<QString> m_firedOr;
    QHash<QString, QSet<QString>> m_seen;
    QHash<QString, int> m_calls;
    QList<FlowStepOutput> m_outputs;
    QHash<quint64, std::shared_ptr<Call>> m_open;     // steps started and not yet reported, by id
    QHash<quint64, std::shared_ptr<Call>> m_inFlight; // of those, the ones whose code or future runs
    quint64 m_nextCall = 0;
    int m_openStarts = 0; // start chains not done yet
    bool m_stopping = false;
    bool m_finishing = false;
    bool m_abandoned = false; // stopAndWait() ended it: nothing that arrives later counts
    bool m_reported = false;  // the future has its result or error
    QFuture<void> m_drained;  // the memory's drain, once finishing
    std::optional<Error> m_failure;
};

} // namespace mneme
