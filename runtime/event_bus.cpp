#include <mneme/runtime/event_bus.h>

#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/agent_executor.h>

#include <QDebug>
#include <QHash>
#include <QMutex>
#include <QPair>
#include <QThread>
#include <QUuid>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

namespace mneme {

namespace events {

QString startTypeOf(const QString &type)
{
    static const QHash<QString, QString> pairs = {
        {QLatin1String(kCrewKickoffCompleted), QLatin1String(kCrewKickoffStarted)},
        {QLatin1String(kCrewKickoffFailed), QLatin1String(kCrewKickoffStarted)},
        {QLatin1String(kTaskCompleted), QLatin1String(kTaskStarted)},
        {QLatin1String(kTaskFailed), QLatin1String(kTaskStarted)},
        {QLatin1String(kAgentExecutionCompleted), QLatin1String(kAgentExecutionStarted)},
        {QLatin1String(kAgentExecutionError), QLatin1String(kAgentExecutionStarted)},
        {QLatin1String(kLlmCallCompleted), QLatin1String(kLlmCallStarted)},
        {QLatin1String(kLlmCallFailed), QLatin1String(kLlmCallStarted)},
        {QLatin1String(kToolUsageFinished), QLatin1String(kToolUsageStarted)},
        {QLatin1String(kToolUsageError), QLatin1String(kToolUsageStarted)},
        {QLatin1String(kMemoryQueryCompleted), QLatin1String(kMemoryQueryStarted)},
        {QLatin1String(kMemoryQueryFailed), QLatin1String(kMemoryQueryStarted)},
        {QLatin1String(kMemorySaveCompleted), QLatin1String(kMemorySaveStarted)},
        {QLatin1String(kMemorySaveFailed), QLatin1String(kMemorySaveStarted)},
        {QLatin1String(kMemoryRetrievalCompleted), QLatin1String(kMemoryRetrievalStarted)},
        {QLatin1String(kMemoryRetrievalFailed), QLatin1String(kMemoryRetrievalStarted)},
        {QLatin1String(kLlmGuardrailCompleted), QLatin1String(kLlmGuardrailStarted)},
        {QLatin1String(kLlmGuardrailFailed), QLatin1String(kLlmGuardrailStarted)},
        {QLatin1String(kMcpConnectionCompleted), QLatin1String(kMcpConnectionStarted)},
        {QLatin1String(kMcpConnectionFailed), QLatin1String(kMcpConnectionStarted)},
        {QLatin1String(kFlowFinished), QLatin1String(kFlowStarted)},
        {QLatin1String(kFlowFailed), QLatin1String(kFlowStarted)},
        {QLatin1String(kMethodExecutionFinished), QLatin1String(kMethodExecutionStarted)},
        {QLatin1String(kMethodExecutionFailed), QLatin1String(kMethodExecutionStarted)},
        {QLatin1String(kChatMemoryFlushCompleted), QLatin1String(kChatMemoryFlushStarted)},
        {QLatin1String(kChatMemoryFlushFailed), QLatin1String(kChatMemoryFlushStarted)},
    };
    return pairs.value(type);
}

bool isStartType(const QString &type)
{
    return type.endsWith(QLatin1String("_started"));
}

} // namespace events

Event Event::make(const QString &type, const Json &properties, const QString &sourceType, const QString &taskId,
                  const QString &agentId, const QString &parentId)
{
    Event e;
    e.type = type;
    e.properties = properties;
    e.sourceType = sourceType;
    e.taskId = taskId;
    e.agentId = agentId;
    e.parentId = parentId;
    return e;
}

Json Event::toJson() const
{
    return Json{{"type", type},
                {"event_id", id},
                {"parent_event_id", parentId.isEmpty() ? Json(nullptr) : Json(parentId)},
                {"timestamp", toIso(timestamp)},
                {"source_type", sourceType.isEmpty() ? Json(nullptr) : Json(sourceType)},
                {"task_id", taskId.isEmpty() ? Json(nullptr) : Json(taskId)},
                {"agent_id", agentId.isEmpty() ? Json(nullptr) : Json(agentId)},
                {"properties", properties.is_null() ? Json::object() : properties}};
}

namespace {
std::atomic<quint64> g_nextSerial{1};
} // namespace

EventBus::EventBus(QObject *parent) : QObject(parent), m_serial(g_nextSerial.fetch_add(1))
{
    // Queued delivery to receivers on other threads copies the event through the meta-type system.
    qRegisterMetaType<mneme::Event>();
}

EventBus::~EventBus() = default;

EventBus &EventBus::instance()
{
    // Deliberately leaked: crews, memories' writer threads and pool threads may publish while the
    // program's statics are being torn down.
    static EventBus *bus = new EventBus;
    return *bus;
}

namespace {
template<typename Frame>
std::unordered_map<quint64, std::vector<Frame>> &threadStacks()
{
    thread_local std::unordered_map<quint64, std::vector<Frame>> stacks;
    return stacks;
}
} // namespace

std::vector<EventBus::Frame> &EventBus::stack() const
{
    return threadStacks<Frame>()[m_serial];
}

void EventBus::releaseIfEmpty() const
{
    auto &stacks = threadStacks<Frame>();
    if (auto it = stacks.find(m_serial); it != stacks.end() && it->second.empty())
        stacks.erase(it);
}

QString EventBus::publish(Event event)
{
    return publishAs(std::move(event), true);
}

QString EventBus::publishAs(Event event, bool inheritParent)
{
    if (event.id.isEmpty())
        event.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    if (!event.timestamp.isValid())
        event.timestamp = nowUtc();
    if (inheritParent && event.parentId.isEmpty() && !stack().empty())
        event.parentId = stack().back().id;
    if (event.properties.is_null())
        event.properties = Json::object();
    releaseIfEmpty();

    Q_EMIT eventPublished(event);
    const QString &t = event.type;
    if (t.startsWith(QLatin1String("crew_")))
        Q_EMIT crewEvent(event);
    else if (t.startsWith(QLatin1String("task_")))
        Q_EMIT taskEvent(event);
    else if (t.startsWith(QLatin1String("agent_")))
        Q_EMIT agentEvent(event);
    else if (t.startsWith(QLatin1String("llm_")))
        Q_EMIT llmEvent(event);
    else if (t.startsWith(QLatin1String("tool_")))
        Q_EMIT toolEvent(event);
    else if (t.startsWith(QLatin1String("memory_")))
        Q_EMIT memoryEvent(event);
    else if (t.startsWith(QLatin1String("flow_")) || t.startsWith(QLatin1String("method_execution_")))
        Q_EMIT flowEvent(event);
    else if (t.startsWith(QLatin1String("chat_")))
        Q_EMIT chatEvent(event);
    return event.id;
}


QString EventBus::publish(const QString &type, const Json &properties, const QString &sourceType, const QString &taskId,
                          const QString &agentId)
{
    return publish(Event::make(type, properties, sourceType, taskId, agentId));
}

QString EventBus::begin(const QString &type, const Json &properties, const QString &sourceType, const QString &taskId,
                        const QString &agentId)
{
    return begin(Event::make(type, properties, sourceType, taskId, agentId));
}

QString EventBus::begin(Event e)
{
    if (!events::isStartType(e.type))
        qWarning().noquote() << "EventBus::begin:" << e.type << "is not a *_started type; it opens a scope anyway";
    if (e.id.isEmpty())
        e.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    // Published before it is pushed, so its parent is the scope around it rather than itself.
    publish(e);
    stack().push_back(Frame{e.id, e.type, e.sourceType, e.taskId, e.agentId, e.properties});
    return e.id;
}

QString EventBus::open(Event e)
{
    if (!events::isStartType(e.type))
        qWarning().noquote() << "EventBus::open:" << e.type << "is not a *_started type; it is paired anyway";
    if (e.id.isEmpty())
        e.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    {
        QMutexLocker lock(&m_openMutex);
        m_open.insert(e.id, Frame{e.id, e.type, e.sourceType, e.taskId, e.agentId, e.properties});
    }
    return publish(std::move(e));
}

QString EventBus::close(const QString &startId, Event e)
{
    std::optional<Frame> frame;
    {
        QMutexLocker lock(&m_openMutex);
        if (auto it = m_open.find(startId); it != m_open.end()) {
            frame = *it;
            m_open.erase(it);
        }
    }
    if (!frame) {
        qWarning().noquote() << "EventBus::close:" << e.type << "names no open start (" << startId
                             << "); published without parent";
        return publishAs(std::move(e), false);
    }
    pairWith(e, *frame);
    return publishAs(std::move(e), false);
}

void EventBus::pairWith(Event &end, const Frame &start)
{
    end.parentId = start.id;
    if (end.sourceType.isEmpty())
        end.sourceType = start.sourceType;
    if (end.taskId.isEmpty())
        end.taskId = start.taskId;
    if (end.agentId.isEmpty())
        end.agentId = start.agentId;
}

const EventBus::Frame *EventBus::openFrame(const QString &startType, const QString &startId) const
{
    const std::vector<Frame> &s = stack();
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
        if (startId.isEmpty() ? it->type == startType : it->id == startId)
            return &*it;
    }
    return nullptr;
}

QString EventBus::end(const QString &type, const Json &properties, const QString &sourceType, const QString &taskId,
                      const QString &agentId, const QString &startId)
{
    Event e = Event::make(type, properties, sourceType, taskId, agentId);

    const QString startType = events::startTypeOf(type);
    const Frame *frame = startType.isEmpty() && startId.isEmpty() ? nullptr : openFrame(startType, startId);
    if (!frame) {
        qWarning().noquote() << "EventBus::end:" << type << "has no open"
                             << (startType.isEmpty() ? QStringLiteral("start") : startType)
                             << "on this thread; published without parent";
        // Not the enclosing scope either: an unpaired end must not look like a child of other work.
        return publishAs(std::move(e), false);
    }

    pairWith(e, *frame);
    // Only the matched frame closes: concurrent starts of one thread (parallel tool calls) may end in
    // any order.
    std::vector<Frame> &s = stack();
    const QString frameId = frame->id;
    for (auto it = s.begin(); it != s.end(); ++it) {
        if (it->id == frameId) {
            s.erase(it);
            break;
        }
    }
    return publish(std::move(e));
}

EventBus::Scope::Scope(EventBus *bus, const QString &eventId) : m_bus(bus), m_id(eventId)
{
    if (!m_id.isEmpty())
        m_bus->stack().push_back(Frame{m_id, QString(), {}, {}, {}, Json::object()});
}

EventBus::Scope::~Scope()
{
    if (m_id.isEmpty())
        return;
    std::vector<Frame> &s = m_bus->stack();
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
        if (it->id == m_id && it->type.isEmpty()) {
            s.erase(std::next(it).base());
            break;
        }
    }
    m_bus->releaseIfEmpty();
}

bool EventBus::isOpen(const QString &startType) const
{
    const bool open = openFrame(startType) != nullptr;
    releaseIfEmpty();
    return open;
}

int EventBus::openScopes() const
{
    const int n = int(stack().size());
    releaseIfEmpty();
    return n;
}

QString EventBus::endOrPublish(const QString &type, const Json &properties, const QString &sourceType)
{
    if (isOpen(events::startTypeOf(type)))
        return end(type, properties, sourceType);
    return publish(type, properties, sourceType);
}

bool EventBus::isAttached(Memory *memory) const
{
    QMutexLocker lock(&m_openMutex);
    return m_memories.contains(memory);
}

void EventBus::attachMemory(Memory *memory)
{
    {
        QMutexLocker lock(&m_openMutex);
        if (!memory || m_memories.contains(memory))
            return;
        m_memories.insert(memory);
    }
    connect(
        memory, &QObject::destroyed, this, [this, memory] {
            QMutexLocker lock(&m_openMutex);
            m_memories.remove(memory);
        },
        Qt::DirectConnection);
    const QString src = QStringLiteral("unified_memory");
    const auto direct = Qt::DirectConnection;
    connect(
        memory, &Memory::queryStarted, this, [this, src](const QString &query, int limit) {
            begin(QLatin1String(events::kMemoryQueryStarted), {{"query", query}, {"limit", limit}}, src);
        },
        direct);
    connect(
        memory, &Memory::queryCompleted, this,
        [this, src](const QString &query, const QList<MemoryMatch> &results, double ms) {
            Json list = Json::array();
            for (const MemoryMatch &m : results)
                list.push_back({{"id", m.record.id}, {"scope", m.record.scope}, {"score", m.score}});
            Json props = {{"query", query}, {"results_count", results.size()}, {"results", list}, {"query_time_ms", ms}};
            if (const Frame *f = openFrame(QLatin1String(events::kMemoryQueryStarted)); f && f->properties.contains("limit"))
                props["limit"] = f->properties["limit"];
            end(QLatin1String(events::kMemoryQueryCompleted), props, src);
        },
        direct);
    connect(
        memory, &Memory::queryFailed, this, [this, src](const QString &query, const QString &error) {
            Json props = {{"query", query}, {"error", error}};
            if (const Frame *f = openFrame(QLatin1String(events::kMemoryQueryStarted)); f && f->properties.contains("limit"))
                props["limit"] = f->properties["limit"];
            endOrPublish(QLatin1String(events::kMemoryQueryFailed), props, src);
        },
        direct);
    connect(
        memory, &Memory::saveStarted, this, [this, src](const QString &value, const QJsonObject &metadata) {
            begin(QLatin1String(events::kMemorySaveStarted), {{"value", value}, {"metadata", fromQJson(metadata)}}, src);
        },
        direct);
    connect(
        memory, &Memory::saveCompleted, this,
        [this, src](const QString &value, const QJsonObject &metadata, double ms) {
            end(QLatin1String(events::kMemorySaveCompleted),
                {{"value", value}, {"metadata", fromQJson(metadata)}, {"save_time_ms", ms}}, src);
        },
        direct);
    // Background batch saves report failures without a start.
    connect(
        memory, &Memory::saveFailed, this, [this, src](const QString &value, const QString &error) {
            endOrPublish(QLatin1String(events::kMemorySaveFailed), {{"value", value}, {"error", error}}, src);
        },
        direct);
    attachLlmCalls(memory, src);
}

template<typename Sender>
void EventBus::attachLlmCalls(Sender *sender, const QString &src)
{
    const auto direct = Qt::DirectConnection;
    // Analysis calls of one batch run concurrently on one thread: each end pairs with the oldest open
    // start of its step on its thread, by id, so none closes another's start.
    struct Calls
    {
        QMutex mutex;
        QHash<QPair<Qt::HANDLE, QString>, std::deque<QString>> open;
        QString take(const QString &step)
        {
            QMutexLocker lock(&mutex);
            auto it = open.find(qMakePair(QThread::currentThreadId(), step));
            if (it == open.end() || it->empty())
                return {};
            const QString id = it->front();
            it->pop_front();
            if (it->empty())
                open.erase(it);
            return id;
        }
    };
    auto calls = std::make_shared<Calls>();
    connect(
        sender, &Sender::llmCallStarted, this, [this, src, calls](const QString &step, const QString &model) {
            const QString id = open(Event::make(QLatin1String(events::kLlmCallStarted), {{"step", step}, {"model", model}}, src));
            QMutexLocker lock(&calls->mutex);
            calls->open[qMakePair(QThread::currentThreadId(), step)].push_back(id);
        },
        direct);
    connect(
        sender, &Sender::llmCallCompleted, this,
        [this, src, calls](const QString &step, const QString &model, double ms, int prompt, int completion) {
            const Event e = Event::make(QLatin1String(events::kLlmCallCompleted),
                                        {{"step", step}, {"model", model}, {"duration_ms", ms}, {"prompt_tokens", prompt}, {"completion_tokens", completion}},
                                        src);
            close(calls->take(step), e);
        },
        direct);
    // A call that could not even start (no LLM configured) fails without a start.
    connect(
        sender, &Sender::llmCallFailed, this,
        [this, src, calls](const QString &step, const QString &model, const QString &error, double ms) {
            const Event e = Event::make(QLatin1String(events::kLlmCallFailed),
                                        {{"step", step}, {"model", model}, {"error", error}, {"duration_ms", ms}}, src);
            if (const QString id = calls->take(step); !id.isEmpty())
                close(id, e);
            else
                publishAs(e, false);
        },
        direct);
}

void EventBus::attachChatMemory(ChatMemory *chat)
{
    {
        QMutexLocker lock(&m_openMutex);
        if (!chat || m_chatMemories.contains(chat))
            return;
        m_chatMemories.insert(chat);
    }
    connect(
        chat, &QObject::destroyed, this, [this, chat] {
            QMutexLocker lock(&m_openMutex);
            m_chatMemories.remove(chat);
        },
        Qt::DirectConnection);
    const QString src = QStringLiteral("chat_memory");
    const auto direct = Qt::DirectConnection;
    connect(
        chat, &ChatMemory::messagesStored, this,
        [this, src](const QString &session, const QList<SessionMessage> &messages) {
            if (messages.isEmpty())
                return;
            QStringList roles;
            for (const SessionMessage &m : messages)
                roles << ChatMessage::roleName(m.message.role);
            publish(Event::make(QLatin1String(events::kChatMessageStored),
                                {{"session_id", session}, {"count", messages.size()}, {"first_seq", messages.first().seq}, {"last_seq", messages.last().seq}, {"roles", roles}},
                                src));
        },
        direct);
    // A flush's events pair by id: its start is opened on the chat memory's thread and closed there.
    struct Flushes
    {
        QMutex mutex;
        QHash<QPair<QString, qint64>, QString> open; // (session, flush) -> start event id
    };
    auto flushes = std::make_shared<Flushes>();
    connect(
        chat, &ChatMemory::flushStarted, this,
        [this, src, flushes](const QString &session, qint64 flush, int messages, int tokens, const QStringList &blocks) {
            const QString id = open(Event::make(QLatin1String(events::kChatMemoryFlushStarted),
                                                {{"session_id", session}, {"flush", flush}, {"messages", messages}, {"tokens", tokens}, {"blocks", blocks}},
                                                src));
            QMutexLocker lock(&flushes->mutex);
            flushes->open.insert(qMakePair(session, flush), id);
        },
        direct);
    const auto startOf = [flushes](const QString &session, qint64 flush, bool take) {
        QMutexLocker lock(&flushes->mutex);
        const auto key = qMakePair(session, flush);
        return take ? flushes->open.take(key) : flushes->open.value(key);
    };
    connect(
        chat, &ChatMemory::blockFlushed, this,
        [this, src, startOf](const QString &session, qint64 flush, const QString &block, double ms) {
            Event e = Event::make(QLatin1String(events::kChatMemoryBlockFlushed),
                                  {{"session_id", session}, {"flush", flush}, {"block", block}, {"duration_ms", ms}}, src);
            e.parentId = startOf(session, flush, false);
            publishAs(e, e.parentId.isEmpty());
        },
        direct);
    const auto finish = [this, startOf](const Event &e, const QString &session, qint64 flush) {
        if (const QString id = startOf(session, flush, true); !id.isEmpty())
            close(id, e);
        else
            publishAs(e, false); // a flush another writer began, or a failure before any flush
    };
    connect(
        chat, &ChatMemory::flushCompleted, this,
        [src, finish](const QString &session, qint64 flush, int messages, int tokens, const QStringList &blocks, double ms) {
            finish(Event::make(QLatin1String(events::kChatMemoryFlushCompleted),
                               {{"session_id", session}, {"flush", flush}, {"messages", messages}, {"tokens", tokens}, {"blocks", blocks}, {"duration_ms", ms}},
                               src),
                   session, flush);
        },
        direct);
    connect(
        chat, &ChatMemory::flushFailed, this,
        [src, finish](const QString &session, qint64 flush, const QString &block, const QString &error) {
            finish(Event::make(QLatin1String(events::kChatMemoryFlushFailed),
                               {{"session_id", session}, {"flush", flush}, {"block", block}, {"error", error}}, src),
                   session, flush);
        },
        direct);
    connect(
        chat, &ChatMemory::blockTruncated, this,
        [this, src](const QString &session, const QString &block, int before, int after) {
            publish(Event::make(QLatin1String(events::kChatMemoryBlockTruncated),
                                {{"session_id", session}, {"block", block}, {"tokens_before", before}, {"tokens_after", after}}, src));
        },
        direct);
    connect(
        chat, &ChatMemory::blockFailed, this,
        [this, src](const QString &session, const QString &block, const QString &error) {
            publish(Event::make(QLatin1String(events::kChatMemoryBlockFailed), {{"session_id", session}, {"block", block}, {"error", error}}, src));
        },
        direct);
    attachLlmCalls(chat, src);
}

void EventBus::attachExecutor(AgentExecutor *executor, const QString &agentId, const QString &taskId,
                              const QString &parentId)
{
    const QString src = QStringLiteral("agent");
    const auto direct = Qt::DirectConnection;
    // What this executor has open: its LLM call (one at a time) and its tool runs, which run
    // concurrently and finish in any order (each finish pairs with its start by the call's id).
    struct Open
    {
        QMutex mutex;
        QString llmCall;
        QHash<QString, QString> tools; // call id -> start event id
    };
    auto open = std::make_shared<Open>();
    const auto start = [this, src, agentId, taskId, parentId](const char *type, const Json &props) {
        Event e = Event::make(QLatin1String(type), props, src, taskId, agentId);
        e.parentId = parentId;
        return this->open(std::move(e));
    };
    connect(
        executor, &AgentExecutor::llmCallStarted, this, [open, start](int iteration) {
            const QString id = start(events::kLlmCallStarted, {{"iteration", iteration}});
            QMutexLocker lock(&open->mutex);
            open->llmCall = id;
        },
        direct);
    const auto endLlm = [this, open](const char *type, const Json &props) {
        QString id;
        {
            QMutexLocker lock(&open->mutex);
            id = std::exchange(open->llmCall, QString());
        }
        close(id, Event::make(QLatin1String(type), props, {}, {}, {}));
    };
    connect(
        executor, &AgentExecutor::llmCallCompleted, this, [endLlm](int iteration, int prompt, int completion) {
            endLlm(events::kLlmCallCompleted, {{"iteration", iteration}, {"prompt_tokens", prompt}, {"completion_tokens", completion}});
        },
        direct);
    connect(
        executor, &AgentExecutor::llmCallFailed, this, [endLlm](int iteration, const QString &error) {
            endLlm(events::kLlmCallFailed, {{"iteration", iteration}, {"error", error}});
        },
        direct);
    connect(
        executor, &AgentExecutor::textChunk, this, [this, open, src, agentId, taskId](int iteration, const QString &chunk) {
            Event e = Event::make(QLatin1String(events::kLlmStreamChunk), {{"iteration", iteration}, {"chunk", chunk}}, src,
                                  taskId, agentId);
            {
                QMutexLocker lock(&open->mutex);
                e.parentId = open->llmCall;
            }
            // A piece queued before its call was cancelled arrives after the call's end: it is dropped.
            if (!e.parentId.isEmpty())
                publishAs(std::move(e), false);
        },
        direct);
    connect(
        executor, &AgentExecutor::toolStarted, this,
        [open, start](const QString &name, const QString &argumentsJson, const QString &callId) {
            const QString id = start(events::kToolUsageStarted, {{"tool_name", name}, {"tool_args", argumentsJson}});
            QMutexLocker lock(&open->mutex);
            open->tools.insert(callId, id);
        },
        direct);
    connect(
        executor, &AgentExecutor::toolFinished, this,
        [this, open](const QString &name, const QString &output, bool isError, qint64 ms, const QString &callId) {
            QString startId;
            {
                QMutexLocker lock(&open->mutex);
                startId = open->tools.take(callId);
            }
            Json props = {{"tool_name", name}, {"duration_ms", ms}};
            props[isError ? "error" : "output"] = output;
            close(startId, Event::make(QLatin1String(isError ? events::kToolUsageError : events::kToolUsageFinished), props));
        },
        direct);
}

} // namespace mneme
