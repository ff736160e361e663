#include <mneme/flows/flow.h>

#include "flows/flow_p.h"
#include "memory/blocking_wait_guard_p.h"
#include "memory/serial_executor_p.h"
#include <mneme/core/scope_path.h>
#include <mneme/flows/flow_persistence.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/event_bus.h>

#include <QEventLoop>
#include <QFutureWatcher>
#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>
#include <QThreadPool>
#include <QUuid>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>

namespace mneme {

namespace {

QString quoted(const QString &s)
{
    return QLatin1Char('"') + s + QLatin1Char('"');
}

QString newId()
{
    return QUuid::createUuid().toString(QUuid::WithoutBraces);
}

QString idOf(const Json &state)
{
    const auto it = state.find("id");
    return it != state.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
}

} // namespace

// ---- JsonStateModel -----------------------------------------------------------------------------

Json JsonStateModel::check(const Json &state, const QString &context) const
{
    if (!state.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1: the state must be a JSON object").arg(context));
    if (idOf(state).isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1: the state's \"id\" must be a non-empty string").arg(context));
    return state;
}

// ---- FlowPrivate --------------------------------------------------------------------------------

FlowPrivate::FlowPrivate(Flow *flow, const QString &flowName, std::unique_ptr<FlowStateModel> model, const FlowOptions &flowOptions)
    : q(flow), name(flowName), options(flowOptions), definition(flowName), state(std::move(model))
{
}

FlowPrivate::~FlowPrivate() = default;

QJsonValue FlowPrivate::toQJsonValue(const Json &value)
{
    // QJsonDocument reads only objects and arrays: wrap the value in an array.
    const QByteArray text = QByteArray::fromStdString(Json::array({value}).dump(-1, ' ', false, Json::error_handler_t::replace));
    return QJsonDocument::fromJson(text).array().at(0);
}

std::shared_ptr<Memory> FlowPrivate::existingMemory() const
{
    QMutexLocker lock(&memoryMutex);
    return givenMemory ? givenMemory : builtInMemory;
}

std::shared_ptr<Memory> FlowPrivate::requireMemory(const char *call)
{
    QMutexLocker lock(&memoryMutex);
    if (givenMemory)
        return givenMemory;
    if (!options.memory)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("No memory configured for this flow (%1 called %2, but FlowOptions::memory is false); "
                                   "leave FlowOptions::memory on for the built-in memory, or give the flow one with setMemory()")
                        .arg(quoted(name), QLatin1String(call)));
    if (!builtInMemory) {
        MemoryConfig config = options.memoryConfig;
        if (config.rootScope.isEmpty())
            config.rootScope = QStringLiteral("/flow/") + ScopePath::sanitizeName(name);
        auto memory = std::make_shared<Memory>(config);
        // Built on whichever thread asked first (often a step on the pool); it belongs with the flow.
        if (memory->thread() != q->thread())
            memory->moveToThread(q->thread());
        // The flow's events go to the bus: so do those of the memory it built.
        if (options.eventBus)
            options.eventBus->attachMemory(memory.get());
        builtInMemory = memory;
    }
    return builtInMemory;
}

QList<std::shared_ptr<ChatMemory>> FlowPrivate::existingChatMemories() const
{
    QMutexLocker lock(&memoryMutex);
    return chatMemories.values();
}

QThreadPool *FlowPrivate::pool() const
{
    return options.threadPool ? options.threadPool : QThreadPool::globalInstance();
}

SerialExecutor &FlowPrivate::persistenceWriter()
{
    if (!writer)
        writer = std::make_unique<SerialExecutor>("mneme-flow-save");
    return *writer;
}

void FlowPrivate::refuseWhileRunning(const QString &what) const
{
    if (run)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the flow %1 is running: %2 waits until its run is over (wait for the future of kickoff(), "
                                   "or cancel() it)")
                        .arg(quoted(name), what));
}

void FlowPrivate::runEnded(const QList<FlowStepOutput> &outputs)
{
    lastOutputs = outputs;
    run.reset();
}

void FlowPrivate::refuseUnguardedSubclass(const std::type_info &actual) const
{
    if (actual == typeid(Flow) || (stopsOnDestruction && *stopsOnDestruction == actual))
        return;
    int status = 0;
    char *demangled = abi::__cxa_demangle(actual.name(), nullptr, nullptr, &status);
    const QString type = status == 0 && demangled ? QString::fromUtf8(demangled) : QString::fromUtf8(actual.name());
    std::free(demangled);
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("flow %1 is a %2, a subclass of mneme::Flow, and runs only as mneme::FlowInstance<%2> (or made with "
                               "mneme::makeFlow<%2>()): its destructor stops the run before the members its steps use are gone")
                    .arg(quoted(name), type));
}

void FlowPrivate::stopAndWait(const Error &why) noexcept
{
    if (!run)
        return;
    if (QThread::currentThread() != q->thread() && !destroying) {
        qWarning("mneme: stopAndWait() of flow \"%s\" was called on another thread than the flow's; call it on the "
                 "flow's thread. Its run goes on",
                 qPrintable(name));
        return;
    }
    const std::shared_ptr<FlowRun> stopping = run;
    stopping->abandon(why);
}

Json FlowPrivate::prepareState(const Json &inputs, const KickoffOptions &kickoff)
{
    if (!inputs.is_object() && !inputs.is_null())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the inputs of flow %1 must be a JSON object (they are merged into its state), not %2")
                        .arg(quoted(name), QString::fromStdString(inputs.dump()).left(200)));
    const Json given = inputs.is_null() ? Json::object() : inputs;
    const bool hasId = given.contains("id");
    if (hasId && (!given["id"].is_string() || given["id"].get<std::string>().empty()))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the \"id\" input of flow %1 must be a non-empty string (the id of the state to resume)")
                        .arg(quoted(name)));

    Json base = q->stateJson();
    QString context = QStringLiteral("Invalid inputs for %1 state").arg(state->kind());
    const auto load = [&](const QString &id) -> std::optional<Json> {
        std::optional<Json> saved = options.persistence->loadState(id);
        if (saved && !saved->is_object())
            throw Error(ErrorKind::Corrupt, QStringLiteral("the saved state of flow id %1 in %2 is not a JSON object")
                                                .arg(id, options.persistence->location()));
        return saved;
    };
    if (!kickoff.restoreFrom.isEmpty()) {
        if (hasId)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("flow %1: give either an \"id\" input (resume that state) or KickoffOptions::restoreFrom "
                                       "(fork it under a new id), not both")
                            .arg(quoted(name)));
        if (!options.persistence)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("flow %1 cannot fork the state %2: it has no persistence; set FlowOptions::persistence")
                            .arg(quoted(name), kickoff.restoreFrom));
        std::optional<Json> saved = load(kickoff.restoreFrom);
        if (!saved)
            throw Error(ErrorKind::NotFound, QStringLiteral("flow %1 cannot fork the state %2: nothing is saved under that id in %3")
                                                 .arg(quoted(name), kickoff.restoreFrom, options.persistence->location()));
        base = *saved;
        base["id"] = newId();
        context = QStringLiteral("The saved state %1 does not fit flow %2's state type").arg(kickoff.restoreFrom, quoted(name));
    } else if (hasId) {
        const QString id = QString::fromStdString(given["id"].get<std::string>());
        if (options.persistence) {
            if (std::optional<Json> saved = load(id)) {
                base = *saved;
                context = QStringLiteral("The saved state %1 does not fit flow %2's state type").arg(id, quoted(name));
            }
        }
        base["id"] = id;
    }

    // Checked in two steps, so that a message says whether the saved state or the inputs do not fit.
    base = state->check(base, context);
    Json merged = base;
    for (auto it = given.begin(); it != given.end(); ++it)
        merged[it.key()] = it.value();
    return state->check(merged, QStringLiteral("Invalid inputs for %1 state").arg(state->kind()));
}

// ---- Flow ---------------------------------------------------------------------------------------

Flow::Flow(const QString &name, const FlowOptions &options, QObject *parent)
    : Flow(name, std::make_unique<JsonStateModel>(), options, parent)
{
}

Flow::Flow(const QString &name, std::unique_ptr<FlowStateModel> model, const FlowOptions &options, QObject *parent)
    : QObject(parent), d(std::make_unique<FlowPrivate>(this, name, std::move(model), options))
{
    if (name.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a flow needs a name (it names its memory scope and its events)"));
    if (options.maxStepCalls < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("FlowOptions::maxStepCalls of flow %1 must be at least 1 (it is %2)")
                        .arg(quoted(name))
                        .arg(options.maxStepCalls));
    d->context = new QObject(this);
    Json initial = d->state->defaults();
    if (idOf(initial).isEmpty())
        initial["id"] = newId();
    d->state->assign(initial, QStringLiteral("The initial state of flow %1").arg(quoted(name)));
}

Flow::~Flow()
{
    d->destroying = true;
    if (d->run) {
        d->stopAndWait(Error(ErrorKind::Cancelled, QStringLiteral("the flow %1 was destroyed while it ran").arg(quoted(d->name))));
    }
    // No continuation may arrive once the flow is half destroyed.
    delete d->context;
    d->context = nullptr;
    d->run.reset();
}

QString Flow::name() const
{
    return d->name;
}

const FlowOptions &Flow::options() const
{
    return d->options;
}

void Flow::addStep(const FlowDefinition::Step &step, StepFunction function)
{
    d->refuseWhileRunning(QStringLiteral("adding the step %1").arg(quoted(step.name)));
    d->definition.addStep(step);
    d->functions.insert(step.name, std::move(function));
}

void Flow::stopsRunOnDestruction(const std::type_info &type)
{
    d->stopsOnDestruction = &type;
}

const FlowDefinition &Flow::definition() const
{
    return d->definition;
}

void Flow::validate() const
{
    d->definition.validate();
    if (!d->options.persistence) {
        for (const FlowDefinition::Step &s : d->definition.steps()) {
            if (s.persist)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("Invalid flow definition for step %1 (flow %2): it asks for its state to be saved "
                                           "(StepOptions::persist), but the flow has no persistence; set FlowOptions::persistence")
                                .arg(quoted(s.name), quoted(d->name)));
        }
    }
}

QString Flow::toDot() const
{
    validate();
    return d->definition.toDot();
}

Json Flow::toJson() const
{
    validate();
    return d->definition.toJson();
}

bool Flow::printGraphIfAsked(const QStringList &arguments) const
{
    QString text;
    if (arguments.contains(QLatin1String("--flow-graph")))
        text = toDot();
    else if (arguments.contains(QLatin1String("--flow-graph=json")))
        text = QString::fromStdString(toJson().dump(2)) + QLatin1Char('\n');
    else if (arguments.contains(QLatin1String("--flow-graph=dot")))
        text = toDot();
    else
        return false;
    const QByteArray bytes = text.toUtf8();
    std::fwrite(bytes.constData(), 1, size_t(bytes.size()), stdout);
    std::fflush(stdout);
    return true;
}

// ---- State --------------------------------------------------------------------------------------

void Flow::refuseInsideChange(const char *call) const
{
    if (d->changingThread.load() == QThread::currentThreadId())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the change given to updateState() of flow %1 called %2, which waits for the state's lock "
                                   "that the change holds; read and change the state the change is given instead")
                        .arg(quoted(d->name), QLatin1String(call)));
}

Flow::ChangeScope::ChangeScope(const Flow &flow)
    : m_flow(flow)
{
    m_flow.d->changingThread.store(QThread::currentThreadId());
}

Flow::ChangeScope::~ChangeScope()
{
    m_flow.d->changingThread.store(nullptr);
}

QString Flow::stateId() const
{
    refuseInsideChange("stateId()");
    QMutexLocker lock(&d->stateMutex);
    return idOf(d->state->toJson());
}

Json Flow::stateJson() const
{
    refuseInsideChange("stateJson()");
    QMutexLocker lock(&d->stateMutex);
    return d->state->toJson();
}

Json Flow::state() const
{
    refuseInsideChange("state()");
    return stateJson();
}

Json Flow::stateValue(const QString &key) const
{
    refuseInsideChange("stateValue()");
    const Json s = stateJson();
    const auto it = s.find(key.toStdString());
    return it == s.end() ? Json() : *it;
}

void Flow::updateState(const std::function<void(Json &)> &change)
{
    refuseInsideChange("updateState()");
    QMutexLocker lock(&d->stateMutex);
    Json next = d->state->toJson();
    const QString id = idOf(next);
    {
        const ChangeScope changing(*this);
        change(next);
    }
    if (!next.is_object() || idOf(next) != id)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("updateState of flow %1 may not remove or change the state's id (%2); kick off with the "
                                   "inputs {\"id\": ...} to work on another state")
                        .arg(quoted(d->name), id));
    d->state->assign(next, QStringLiteral("updateState of flow %1").arg(quoted(d->name)));
}

void Flow::setStateValue(const QString &key, const Json &value)
{
    refuseInsideChange("setStateValue()");
    updateState([&](Json &s) { s[key.toStdString()] = value; });
}

void Flow::resetState()
{
    refuseInsideChange("resetState()");
    d->refuseWhileRunning(QStringLiteral("resetState()"));
    QMutexLocker lock(&d->stateMutex);
    Json fresh = d->state->defaults();
    fresh["id"] = newId();
    d->state->assign(fresh, QStringLiteral("resetState of flow %1").arg(quoted(d->name)));
}

FlowStateModel &Flow::stateModel() const
{
    return *d->state;
}

QMutex &Flow::stateMutex() const
{
    return d->stateMutex;
}

// ---- Running ------------------------------------------------------------------------------------

QFuture<Json> Flow::kickoff(const Json &inputs, const KickoffOptions &options)
{
    if (QThread::currentThread() != thread())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("kickoff() of flow %1 is called on another thread than the flow's; call it on the flow's "
                                   "thread (QMetaObject::invokeMethod), or moveToThread() the flow first")
                        .arg(quoted(d->name)));
    if (d->destroying)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the flow %1 is being destroyed: it cannot be kicked off").arg(quoted(d->name)));
    d->refuseWhileRunning(QStringLiteral("another kickoff()"));
    d->refuseUnguardedSubclass(typeid(*this));
    validate();
    const Json state = d->prepareState(inputs, options);
    {
        QMutexLocker lock(&d->stateMutex);
        d->state->assign(state, QString());
    }
    d->lastOutputs.clear();
    d->run = std::make_shared<FlowRun>(*d, inputs.is_null() ? Json::object() : inputs);
    QFuture<Json> future = d->run->future();
    const std::weak_ptr<FlowRun> started = d->run;
    BlockingWaitGuard::arm(QFuture<void>(future), thread(), [this, started] {
        const std::shared_ptr<FlowRun> run = started.lock();
        if (run && d->run == run)
            d->stopAndWait(Error(ErrorKind::InvalidArgument,
                                 QStringLiteral("the future of kickoff() of flow %1 was waited for on the flow's own thread, where "
                                                "the run advances, so the wait would never end; the run was stopped. Wait with "
                                                "kickoffAndWait() (it runs an event loop meanwhile), or attach a continuation "
                                                "with future.then(context, ...), or connect to flowFinished")
                                     .arg(quoted(d->name))));
    });
    d->run->begin();
    return future;
}

Json Flow::kickoffAndWait(const Json &inputs, const KickoffOptions &options)
{
    QFuture<Json> future = kickoff(inputs, options);
    if (!future.isFinished()) {
        QEventLoop loop;
        QFutureWatcher<Json> watcher;
        QObject::connect(&watcher, &QFutureWatcherBase::finished, &loop, &QEventLoop::quit);
        watcher.setFuture(future);
        if (!future.isFinished())
            loop.exec();
    }
    future.waitForFinished(); // rethrows the run's error
    if (future.resultCount() == 0)
        throw Error(ErrorKind::Cancelled, QStringLiteral("the run of flow %1 was cancelled").arg(quoted(d->name)));
    return future.result();
}

void Flow::stopAndWait() noexcept
{
    d->stopAndWait(Error(ErrorKind::Cancelled, QStringLiteral("the run of flow %1 was stopped by stopAndWait() while it ran").arg(quoted(d->name))));
}

void Flow::cancel()
{
    if (d->run)
        d->run->stop(Error(ErrorKind::Cancelled, QStringLiteral("the run of flow %1 was cancelled").arg(quoted(d->name))));
}

bool Flow::isRunning() const
{
    return bool(d->run);
}

QList<FlowStepOutput> Flow::stepOutputs() const
{
    return d->run ? d->run->outputs() : d->lastOutputs;
}

// ---- Memory -------------------------------------------------------------------------------------

Memory *Flow::memory()
{
    {
        QMutexLocker lock(&d->memoryMutex);
        if (!d->givenMemory && !d->options.memory)
            return nullptr;
    }
    return d->requireMemory("memory()").get();
}

void Flow::setMemory(std::shared_ptr<Memory> memory)
{
    d->refuseWhileRunning(QStringLiteral("setMemory()"));
    QMutexLocker lock(&d->memoryMutex);
    d->givenMemory = std::move(memory);
    // Their blocks keep their content in the previous memory.
    d->chatMemories.clear();
    d->chatStore.reset();
}

std::shared_ptr<ChatMemory> Flow::chatMemory(const QString &sessionId)
{
    {
        QMutexLocker lock(&d->memoryMutex);
        if (const std::shared_ptr<ChatMemory> existing = d->chatMemories.value(sessionId))
            return existing;
    }
    const ChatMemoryConfig &config = d->options.chatMemoryConfig;
    std::shared_ptr<Memory> memory;
    {
        QMutexLocker lock(&d->memoryMutex);
        const bool hasMemory = d->givenMemory || d->options.memory;
        lock.unlock();
        if (hasMemory)
            memory = d->requireMemory("chatMemory()");
    }
    QMutexLocker lock(&d->memoryMutex);
    if (const std::shared_ptr<ChatMemory> existing = d->chatMemories.value(sessionId))
        return existing;
    if (!d->chatStore)
        d->chatStore = ChatMemory::defaultStore(config, memory.get());
    auto chat = std::make_shared<ChatMemory>(sessionId, config, d->chatStore,
                                             ChatMemory::buildBlocks(config.memoryBlocks, memory.get(), config.llm));
    if (chat->thread() != thread())
        chat->moveToThread(thread());
    if (d->options.eventBus)
        d->options.eventBus->attachChatMemory(chat.get());
    d->chatMemories.insert(sessionId, chat);
    return chat;
}

MemoryRecord Flow::remember(const QString &content, const RememberOptions &options)
{
    return d->requireMemory("remember()")->remember(content, options);
}

QFuture<SaveResult> Flow::rememberMany(const QStringList &contents, const RememberOptions &options)
{
    return d->requireMemory("rememberMany()")->rememberMany(contents, options);
}

QList<MemoryMatch> Flow::recall(const QString &query, const RecallOptions &options)
{
    return d->requireMemory("recall()")->recall(query, options);
}

QFuture<QList<MemoryMatch>> Flow::recallAsync(const QString &query, const RecallOptions &options)
{
    return d->requireMemory("recallAsync()")->recallAsync(query, options);
}

QStringList Flow::extractMemories(const QString &content)
{
    return d->requireMemory("extractMemories()")->extractMemories(content);
}

} // namespace mneme
