// One run of a flow: the execution rules of docs/flows.md ("Running"), after CrewAI's
// Flow. Everything here runs on the flow's thread; steps report back
// through QFutureWatchers parented to FlowPrivate::context.

#include "flows/flow_p.h"

#include "memory/serial_executor_p.h"
#include "runtime/future_util_p.h"
#include <mneme/flows/flow_persistence.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/event_bus.h>

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

namespace mneme {

namespace {

QString quoted(const QString &s)
{
    return QLatin1Char('"') + s + QLatin1Char('"');
}

// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, ..., 101st, 111th.
QString ordinal(int n)
{
    const int lastTwo = n % 100;
    const int last = n % 10;
    const char *suffix = "th";
    if (lastTwo < 11 || lastTwo > 13) {
        if (last == 1)
            suffix = "st";
        else if (last == 2)
            suffix = "nd";
        else if (last == 3)
            suffix = "rd";
    }
    return QString::number(n) + QLatin1String(suffix);
}

// A router's output as the label it emits: strings as they are, numbers and booleans as their JSON
// text (0 emits "0"); null emits nothing. Anything else is a mistake of the router.
std::optional<QString> labelOf(const QString &router, const Json &output)
{
    if (output.is_null())
        return std::nullopt;
    if (output.is_string())
        return QString::fromStdString(output.get<std::string>());
    if (output.is_number() || output.is_boolean())
        return QString::fromStdString(output.dump());
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("the router %1 returned %2; a router returns one of its labels (a string, number or "
                               "boolean), or null to emit nothing")
                    .arg(quoted(router), QString::fromStdString(output.dump()).left(200)));
}

} // namespace

struct FlowRun::Dispatch
{
    QString trigger;
    Json output;
    QStringList routerQueue;       // triggers whose routers have not been looked up yet
    QStringList labels;            // labels the routers emitted, in order
    QHash<QString, Json> payloads; // label -> the output of the router that emitted it
    QSet<QString> rearmable;
    Done done;

    Json inputFor(const QString &t) const { return t == trigger ? output : payloads.value(t); }
};

struct FlowRun::Race
{
    QStringList steps;
    bool decided = false;
    QString winner;
    int failed = 0;
    std::optional<Error> firstError; // the run's error when every step of the race fails
};

FlowRun::FlowRun(FlowPrivate &d, const Json &inputs)
    : d(d), m_inputs(inputs), m_bus(d.options.eventBus)
{
}

QString FlowRun::publish(const QString &type, Json properties, const QString &parentId)
{
    if (!m_bus)
        return {};
    Event e;
    e.type = type;
    e.parentId = parentId;
    e.sourceType = QStringLiteral("flow");
    e.properties = withFlow(std::move(properties));
    return m_bus->publish(e);
}

Json FlowRun::withFlow(Json properties) const
{
    properties["flow_name"] = d.name;
    properties["flow_id"] = m_flowId;
    return properties;
}

// ---- Start and end ----------------------------------------------------------------------------

void FlowRun::begin()
{
    m_timer.start();
    m_promise.start();
    m_flowId = d.q->stateId();

    // Cancelling the returned future stops the run.
    auto *watcher = new QFutureWatcher<Json>(d.context);
    QObject::connect(watcher, &QFutureWatcherBase::canceled, d.context, [self = shared_from_this()]() {
        self->stop(Error(ErrorKind::Cancelled, QStringLiteral("the run of flow %1 was cancelled").arg(quoted(self->d.name))));
    });
    QObject::connect(watcher, &QFutureWatcherBase::finished, watcher, &QObject::deleteLater);
    watcher->setFuture(m_promise.future());

    if (m_bus)
        m_flowEventId = m_bus->open(Event::make(QLatin1String(events::kFlowStarted), withFlow({{"inputs", m_inputs}}), QStringLiteral("flow")));
    Q_EMIT d.q->flowStarted(m_flowId, FlowPrivate::toQJsonValue(m_inputs).toObject());

    QStringList starts;
    for (const FlowDefinition::Step &s : d.definition.steps()) {
        if (s.kind == FlowDefinition::StepKind::Start && !s.trigger)
            starts << s.name;
    }
    if (starts.isEmpty()) { // no unconditional start: every start runs
        for (const FlowDefinition::Step &s : d.definition.steps()) {
            if (s.kind == FlowDefinition::StepKind::Start)
                starts << s.name;
        }
    }
    m_openStarts = int(starts.size());
    auto self = shared_from_this();
    for (const QString &s : starts) {
        single(s, m_inputs, [self](const Json &) {
            --self->m_openStarts;
            self->maybeFinish();
        });
    }
}

void FlowRun::stop(const Error &why)
{
    if (m_reported || m_abandoned)
        return;
    if (m_finishing) {
        // Only the memory's drain is left: it is waited for, and the run then fails with `why` (the
        // future may be cancelled already: it cannot be given a result any more).
        if (!m_failure)
            m_failure = why;
        return;
    }
    if (m_stopping)
        return;
    m_stopping = true;
    m_failure = why;
    for (const std::shared_ptr<Call> &c : std::as_const(m_inFlight)) {
        if (c->call.cancel)
            c->call.cancel();
    }
    maybeFinish();
}

void FlowRun::abandon(const Error &why) noexcept
{
    if (m_reported || m_abandoned)
        return;
    // complete() drops the flow's reference to this run.
    const std::shared_ptr<FlowRun> keep = shared_from_this();
    m_abandoned = true;
    m_stopping = true;
    try {
        if (!m_failure)
            m_failure = why;
        // Every call is cancelled before any is waited for: a synchronous step still queued in the
        // pool is then skipped when its turn comes (or when waitForFinished() takes it to run it here).
        const QList<std::shared_ptr<Call>> inFlight = m_inFlight.values();
        for (const std::shared_ptr<Call> &c : inFlight) {
            if (c->call.cancel)
                c->call.cancel();
        }
        for (const std::shared_ptr<Call> &c : inFlight) {
            if (c->async)
                continue; // settled by its cancel(); its producer is its own
            try {
                c->call.output.waitForFinished();
            } catch (...) {
                // What the step threw is of no use any more, and a destructor must not throw it.
            }
        }
        m_inFlight.clear();
        if (m_finishing) {
            try {
                m_drained.waitForFinished();
            } catch (...) {
            }
        }
        // The steps not reported yet (running, or their state being saved) end cancelled, in the
        // order they started.
        QList<quint64> open = m_open.keys();
        std::sort(open.begin(), open.end());
        const QString reason = QStringLiteral("the run stopped: %1").arg(m_failure->message());
        for (quint64 id : std::as_const(open)) {
            if (const std::shared_ptr<Call> c = m_open.value(id))
                stepCancelledWith(c, reason);
        }
        complete();
    } catch (...) {
        qWarning("mneme: stopping flow \"%s\" threw; its run is failed as it is", qPrintable(d.name));
    }
    if (!m_reported) {
        m_reported = true;
        d.runEnded(m_outputs);
        m_promise.setException(std::make_exception_ptr(*m_failure));
        m_promise.finish();
    }
}

void FlowRun::maybeFinish()
{
    if (m_finishing || m_abandoned || !m_open.isEmpty())
        return;
    if (m_stopping || m_openStarts == 0)
        finish();
}

void FlowRun::finish()
{
    m_finishing = true;
    // Saves still queued on the memory's writer, and the flushes of its chat memories, belong to this
    // run: they are done before it is.
    const std::shared_ptr<Memory> memory = d.existingMemory();
    const QList<std::shared_ptr<ChatMemory>> chats = d.existingChatMemories();
    if (memory || !chats.isEmpty()) {
        m_drained = QtConcurrent::run(d.pool(), [memory, chats]() {
            for (const std::shared_ptr<ChatMemory> &chat : chats)
                chat->drain();
            if (memory)
                memory->drainWrites();
        });
        whenFinished(d.context, m_drained, [self = shared_from_this()](const QFuture<void> &) {
            if (!self->m_abandoned)
                self->complete();
        });
        return;
    }
    complete();
}

void FlowRun::complete()
{
    if (m_reported)
        return;
    // runEnded() drops the flow's reference to this run.
    const std::shared_ptr<FlowRun> keep = shared_from_this();
    m_reported = true;
    const double ms = double(m_timer.nsecsElapsed()) / 1e6;
    d.runEnded(m_outputs);
    if (m_failure) {
        if (m_bus)
            m_bus->close(m_flowEventId, Event::make(QLatin1String(events::kFlowFailed),
                                                    withFlow({{"error", m_failure->message()}, {"duration_ms", ms}})));
        Q_EMIT d.q->flowFailed(m_flowId, m_failure->message(), ms);
        m_promise.setException(std::make_exception_ptr(*m_failure));
    } else {
        const Json result = m_outputs.isEmpty() ? Json() : m_outputs.last().output;
        if (m_bus)
            m_bus->close(m_flowEventId, Event::make(QLatin1String(events::kFlowFinished),
                                                    withFlow({{"result", result}, {"duration_ms", ms}, {"state", d.q->stateJson()}})));
        Q_EMIT d.q->flowFinished(m_flowId, FlowPrivate::toQJsonValue(result), ms);
        m_promise.addResult(result);
    }
    m_promise.finish();
}

Error FlowRun::stepError(const QString &step, const Error &error) const
{
    return Error(error.kind(), QStringLiteral("Flow %1 failed in step %2: %3").arg(quoted(d.name), quoted(step), error.message()),
                 error.httpStatus());
}

// ---- What a completed step triggers -------------------------------------------------------------

QStringList FlowRun::triggered(const QString &trigger, bool routers)
{
    QStringList out;
    for (const FlowDefinition::Step &s : d.definition.steps()) {
        if (!s.trigger || (s.kind == FlowDefinition::StepKind::Router) != routers)
            continue;
        // A multi-event or_ listener fires once per cycle (routers are decision points: every time).
        const bool firesOnce = s.trigger->isMultiEventOr() && !routers;
        if (firesOnce && m_firedOr.contains(s.name))
            continue;
        if (!s.trigger->mentions(trigger))
            continue;
        // and_ needs every name seen since it last fired; the seen set is then cleared.
        QSet<QString> &seen = m_seen[s.name];
        seen.insert(trigger);
        if (!s.trigger->isSatisfiedBy(seen))
            continue;
        m_seen.remove(s.name);
        out << s.name;
        if (firesOnce)
            m_firedOr.insert(s.name);
    }
    return out;
}

void FlowRun::rearm(const QString &trigger, QSet<QString> &rearmable)
{
    // A fresh router emission re-arms the fired or_ listeners that mention it, so loops can fire them
    // again; only those fired before this dispatch, so chained routers of one dispatch do not.
    for (auto it = rearmable.begin(); it != rearmable.end();) {
        const FlowDefinition::Step *s = d.definition.step(*it);
        if (m_firedOr.contains(*it) && s && s->trigger && s->trigger->mentions(trigger)) {
            m_firedOr.remove(*it);
            it = rearmable.erase(it);
        } else {
            ++it;
        }
    }
}

QStringList FlowRun::racingSteps(const QStringList &steps) const
{
    // The names that are alternatives of one multi-event or_ listener and feed nothing else (no other
    // listener, no router: CrewAI counts every step whose trigger mentions the name) race each other;
    // nothing under an and_ does (cancelling one would make the and_ unsatisfiable).
    QHash<QString, int> listenersOf;
    for (const FlowDefinition::Step &s : d.definition.steps()) {
        if (s.trigger) {
            for (const QString &n : s.trigger->names())
                ++listenersOf[n];
        }
    }
    for (const FlowDefinition::Step &s : d.definition.steps()) {
        if (!s.trigger || s.kind == FlowDefinition::StepKind::Router || !s.trigger->isMultiEventOr())
            continue;
        QStringList racing;
        for (const QString &n : s.trigger->orAlternatives()) {
            if (listenersOf.value(n) == 1 && steps.contains(n))
                racing << n;
        }
        if (racing.size() > 1)
            return racing;
    }
    return {};
}

void FlowRun::dispatch(const QString &trigger, const Json &output, Done done)
{
    auto c = std::make_shared<Dispatch>();
    c->trigger = trigger;
    c->output = output;
    c->routerQueue << trigger;
    c->done = std::move(done);
    routeNext(c);
}

// Routers first, one after the other: those of the trigger, then those of each label they emit.
void FlowRun::routeNext(const std::shared_ptr<Dispatch> &c)
{
    if (m_stopping)
        return;
    while (!c->routerQueue.isEmpty()) {
        const QString t = c->routerQueue.takeFirst();
        const QStringList routers = triggered(t, true);
        if (!routers.isEmpty()) {
            runRouters(c, routers, 0, c->inputFor(t));
            return;
        }
    }
    c->rearmable = m_firedOr;
    listenersFrom(c, 0);
}

void FlowRun::runRouters(const std::shared_ptr<Dispatch> &c, const QStringList &routers, int index, const Json &input)
{
    if (index == routers.size()) {
        routeNext(c);
        return;
    }
    auto self = shared_from_this();
    single(routers.at(index), input, [self, c, routers, index, input](const Json &output) {
        if (!output.is_null()) {
            const QString label = *labelOf(routers.at(index), output); // checked when the router completed
            c->labels << label;
            c->payloads[label] = output;
            c->routerQueue << label;
        }
        self->runRouters(c, routers, index + 1, input);
    });
}

// Then the listeners of the trigger and of each label, one wave after the other.
void FlowRun::listenersFrom(const std::shared_ptr<Dispatch> &c, int index)
{
    if (m_stopping)
        return;
    if (index > c->labels.size()) {
        c->done();
        return;
    }
    const QString t = index == 0 ? c->trigger : c->labels.at(index - 1);
    if (index > 0 && !c->rearmable.isEmpty())
        rearm(t, c->rearmable);
    auto self = shared_from_this();
    wave(triggered(t, false), index == 0 ? c->output : c->payloads.value(t),
         [self, c, index]() { self->listenersFrom(c, index + 1); });
}

void FlowRun::wave(const QStringList &steps, const Json &input, Done done)
{
    if (steps.isEmpty()) {
        done();
        return;
    }
    const QStringList racing = racingSteps(steps);
    auto left = std::make_shared<int>(int(steps.size() - racing.size()) + (racing.isEmpty() ? 0 : 1));
    auto oneDone = [left, done](const Json &) {
        if (--*left == 0)
            done();
    };
    std::shared_ptr<Race> race;
    if (!racing.isEmpty()) {
        race = std::make_shared<Race>();
        race->steps = racing;
    }
    for (const QString &s : steps)
        single(s, input, oneDone, racing.contains(s) ? race : nullptr);
}

void FlowRun::single(const QString &step, const Json &input, Then then, const std::shared_ptr<Race> &race)
{
    if (m_stopping)
        return;
    // Running a completed step again is a new cycle: every or_ listener may fire again.
    if (m_completed.remove(step))
        m_firedOr.clear();
    auto self = shared_from_this();
    runStep(
        step, input, [self, step, then](const Json &output) { self->dispatch(step, output, [then, output]() { then(output); }); },
        race);
}

// ---- One step -----------------------------------------------------------------------------------

void FlowRun::runStep(const QString &step, const Json &input, Then then, const std::shared_ptr<Race> &race)
{
    if (m_stopping)
        return;
    const int calls = ++m_calls[step];
    if (calls > d.options.maxStepCalls) {
        stop(Error(ErrorKind::InvalidArgument,
                   QStringLiteral("Flow %1 stopped: step %2 was about to run for the %3 time in this run, which means an "
                                  "endless loop (FlowOptions::maxStepCalls is %4); check the routers and listeners that "
                                  "lead back to it, or raise maxStepCalls")
                       .arg(quoted(d.name), quoted(step), ordinal(calls))
                       .arg(d.options.maxStepCalls)));
        return;
    }

    auto call = std::make_shared<Call>();
    call->id = ++m_nextCall;
    call->step = step;
    call->input = input;
    call->race = race;
    call->then = std::move(then);
    call->async = d.functions.value(step).isAsync();
    call->timer.start();
    m_open.insert(call->id, call);
    if (m_bus)
        call->eventId = publish(QLatin1String(events::kMethodExecutionStarted),
                                {{"method_name", step}, {"params", input}, {"state", d.q->stateJson()}}, m_flowEventId);
    Q_EMIT d.q->stepStarted(step, FlowPrivate::toQJsonValue(input));
    if (m_stopping) { // stopped by a slot of stepStarted
        if (m_open.contains(call->id))
            stepCancelledWith(call, QStringLiteral("the run stopped: %1").arg(m_failure->message()));
        return;
    }

    try {
        // Work a step starts while it is called (a crew's kickoff, an agent's turn) publishes its
        // events as children of the step's.
        std::optional<EventBus::Scope> scope;
        if (m_bus)
            scope.emplace(m_bus, call->eventId);
        call->call = d.functions.value(step).call(input, d.context, d.pool());
    } catch (...) {
        stepDone(call, std::nullopt, std::current_exception());
        return;
    }
    if (!m_open.contains(call->id)) { // stopAndWait() was called while the step was called
        if (call->call.cancel)
            call->call.cancel();
        return;
    }
    const quint64 id = call->id;
    m_inFlight.insert(id, call);
    if (m_stopping && call->call.cancel) // stopped while the step was called
        call->call.cancel();
    auto self = shared_from_this();
    whenFinished(d.context, call->call.output, [self, call, id](const QFuture<Json> &f) {
        self->m_inFlight.remove(id);
        if (self->m_abandoned)
            return;
        QFuture<Json> future = f;
        try {
            future.waitForFinished(); // rethrows the step's exception
            if (future.resultCount() == 0)
                throw Error(ErrorKind::Cancelled, QStringLiteral("the step was cancelled before it gave a result"));
            self->stepDone(call, future.result(), nullptr);
        } catch (...) {
            self->stepDone(call, std::nullopt, std::current_exception());
        }
    });
}

void FlowRun::stepDone(const std::shared_ptr<Call> &call, const std::optional<Json> &output, std::exception_ptr error)
{
    if (m_abandoned || !m_open.contains(call->id))
        return; // reported already (stopAndWait())
    const std::shared_ptr<Race> &race = call->race;
    if (race && race->decided) {
        stepCancelledWith(call, QStringLiteral("%1 finished first; the or_ listener it feeds fires once")
                                    .arg(quoted(race->winner)));
        return;
    }
    if (error) {
        const Error e = errorFrom(error);
        if (m_stopping && e.kind() == ErrorKind::Cancelled) {
            stepCancelledWith(call, QStringLiteral("the run stopped: %1").arg(m_failure->message()));
            return;
        }
        if (!race) {
            stepFailedWith(call, e, stepError(call->step, e));
            return;
        }
        // Another alternative may still win the race; the run fails when every one has failed.
        if (!race->firstError)
            race->firstError = stepError(call->step, e);
        stepFailedWith(call, e, ++race->failed < race->steps.size() ? std::nullopt : race->firstError);
        return;
    }

    // An output that arrives once the run has stopped (a step that finished before it saw the stop)
    // is dropped: the run is over, nothing more is recorded or saved.
    if (m_stopping) {
        stepCancelledWith(call, QStringLiteral("the run stopped: %1").arg(m_failure->message()));
        return;
    }

    std::optional<QString> label;
    const FlowDefinition::Step *spec = d.definition.step(call->step);
    if (spec->kind == FlowDefinition::StepKind::Router) {
        try {
            label = labelOf(call->step, *output);
            if (label && !spec->labels.contains(*label))
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("the router returned the label %1, which it does not declare (its labels: %2); "
                                           "add it to the router's labels or return one of them")
                                .arg(quoted(*label), spec->labels.join(QStringLiteral(", "))));
        } catch (const Error &e) {
            stepFailedWith(call, e, stepError(call->step, e));
            return;
        }
    }
    if (race) {
        race->decided = true;
        race->winner = call->step;
        for (const std::shared_ptr<Call> &other : std::as_const(m_inFlight)) {
            if (other->race == race && other->call.cancel)
                other->call.cancel();
        }
    }
    recordAndSave(call, *output, label);
}

void FlowRun::recordAndSave(const std::shared_ptr<Call> &call, const Json &output, const std::optional<QString> &label)
{
    m_completed.insert(call->step);

    const FlowDefinition::Step *spec = d.definition.step(call->step);
    if (!d.options.persistence || !(d.options.persistEveryStep || spec->persist)) {
        stepSucceeded(call, output, label);
        return;
    }
    // Saved before the step is reported finished and before anything it triggers runs: a finished
    // step's state is on disk.
    const Json snapshot = d.q->stateJson();
    const QString flowId = QString::fromStdString(snapshot.value("id", std::string()));
    std::shared_ptr<FlowPersistence> persistence = d.options.persistence;
    const QString step = call->step;
    const QFuture<void> saved = d.persistenceWriter().submit<void>([persistence, flowId, step, snapshot]() {
        persistence->saveState(flowId, step, snapshot);
    });
    auto self = shared_from_this();
    whenFinished(d.context, saved, [self, call, output, label](const QFuture<void> &f) {
        if (self->m_abandoned)
            return;
        QFuture<void> future = f;
        try {
            future.waitForFinished();
        } catch (...) {
            const Error e = errorFrom(std::current_exception());
            const Error failed(e.kind(), QStringLiteral("State persistence failed: %1").arg(e.message()));
            self->stepFailedWith(call, failed, self->stepError(call->step, failed));
            return;
        }
        self->stepSucceeded(call, output, label);
    });
}

void FlowRun::stepSucceeded(const std::shared_ptr<Call> &call, const Json &output, const std::optional<QString> &label)
{
    m_open.remove(call->id);
    // An output counts once its state is saved: a step whose save failed did not complete.
    m_outputs.append({call->step, output});
    const double ms = double(call->timer.nsecsElapsed()) / 1e6;
    if (m_bus)
        publish(QLatin1String(events::kMethodExecutionFinished),
                {{"method_name", call->step}, {"result", output}, {"duration_ms", ms}, {"state", d.q->stateJson()}}, call->eventId);
    Q_EMIT d.q->stepFinished(call->step, FlowPrivate::toQJsonValue(call->input), FlowPrivate::toQJsonValue(output), ms);
    if (label) {
        publish(QLatin1String(events::kFlowRouterLabelEmitted), {{"router", call->step}, {"label", *label}}, call->eventId);
        Q_EMIT d.q->routerLabelEmitted(call->step, *label);
    }
    if (!m_stopping)
        call->then(output);
    maybeFinish();
}

void FlowRun::stepFailedWith(const std::shared_ptr<Call> &call, const Error &error, const std::optional<Error> &runError)
{
    m_open.remove(call->id);
    const double ms = double(call->timer.nsecsElapsed()) / 1e6;
    publish(QLatin1String(events::kMethodExecutionFailed),
            {{"method_name", call->step}, {"error", error.message()}, {"duration_ms", ms}}, call->eventId);
    Q_EMIT d.q->stepFailed(call->step, FlowPrivate::toQJsonValue(call->input), error.message(), ms);
    if (runError)
        stop(*runError);
    maybeFinish();
}

void FlowRun::stepCancelledWith(const std::shared_ptr<Call> &call, const QString &reason)
{
    m_open.remove(call->id);
    const double ms = double(call->timer.nsecsElapsed()) / 1e6;
    publish(QLatin1String(events::kMethodExecutionFailed),
            {{"method_name", call->step}, {"error", reason}, {"cancelled", true}, {"duration_ms", ms}}, call->eventId);
    Q_EMIT d.q->stepCancelled(call->step, reason, ms);
    maybeFinish();
}

} // namespace mneme
