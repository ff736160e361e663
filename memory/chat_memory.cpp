#include <mneme/memory/chat_memory.h>

#include "memory/chat_memory_p.h"
#include "memory/chat_window_p.h"
#include "memory/memory_block_specs_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/sqlite_chat_store.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QPromise>
#include <QSet>
#include <QSysInfo>
#include <QUuid>
#include <algorithm>
#include <cerrno>
#ifdef Q_OS_UNIX
#include <signal.h>
#endif

namespace mneme {

Q_LOGGING_CATEGORY(lcChat, "mneme.memory.chat", QtWarningMsg)

namespace {

// A claim on a flush by a writer on another host is taken over after this long without progress.
constexpr qint64 kFlushLeaseMs = 10 * 60 * 1000;
// Flushes one put may run (each moves about token_flush_size tokens out).
constexpr int kMaxFlushRounds = 10000;

// The instances of this process that may own a flush, by their instance id.
QMutex &liveMutex()
{
    static QMutex m;
    return m;
}
QSet<QString> &liveInstances()
{
    static QSet<QString> s;
    return s;
}

QString hostName()
{
    static const QString host = [] {
        QString h = QSysInfo::machineHostName();
        h.replace(QLatin1Char('/'), QLatin1Char('_'));
        return h.isEmpty() ? QStringLiteral("localhost") : h;
    }();
    return host;
}

bool processAlive(qint64 pid)
{
#ifdef Q_OS_UNIX
    if (pid <= 0)
        return false;
    return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
#else
    Q_UNUSED(pid)
    return true; // unknown: the lease decides
#endif
}

QString errorText(const std::exception &e)
{
    const QString text = QString::fromUtf8(e.what());
    return text.isEmpty() ? QStringLiteral("unknown error") : text;
}

// One request of get(): the extra system messages, the history from `start`, the other extra
// messages, and the blocks' content rendered into one of them; its tokens, history messages at their
// stored counts, everything else by the counter. Blocks give way first, then the oldest history.
class RequestWindow
{
public:
    RequestWindow(const ChatMemoryConfig &config, const QList<SessionMessage> &history, const std::vector<int> &historyTokens,
                  const std::vector<ChatMessage> &extra)
        : m_config(config), m_history(history), m_historyTokens(historyTokens)
    {
        for (const SessionMessage &m : history) {
            m_roles.push_back(m.message.role);
            m_blockInput.push_back(m.message);
        }
        for (const ChatMessage &m : extra) {
            (m.role == ChatMessage::Role::System ? m_extraSystem : m_extraOther).push_back(m);
            m_blockInput.push_back(m);
        }
        while (m_start < m_history.size() && !ChatWindow::canStartAt(m_roles, size_t(m_start)))
            ++m_start;
    }

    // Each block's content for the conversation (history and extra messages), in block order. A
    // block whose get() fails is left out of this request and reported: `failed(block, error)`.
    void collect(const std::vector<std::shared_ptr<MemoryBlock>> &blocks, const std::function<void(const QString &, const QString &)> &failed)
    {
        for (const auto &b : blocks) {
            try {
                const QString content = b->get(m_blockInput);
                if (!content.trimmed().isEmpty())
                    m_parts.push_back(Part{b, content, false});
            } catch (const std::exception &e) {
                m_failed << b->name();
                failed(b->name(), errorText(e));
            }
        }
        rebuild();
    }

    // Over the limit, blocks are truncated by their own rule from the largest priority number down,
    // then left out in the same order; priority 0 never gives way. `report(block, before, after)`.
    void giveWayBlocks(const std::function<void(const QString &, int, int)> &report)
    {
        std::vector<size_t> order;
        for (size_t i = 0; i < m_parts.size(); ++i)
            if (m_parts[i].block->priority() > 0)
                order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [this](size_t a, size_t b) { return m_parts[a].block->priority() > m_parts[b].block->priority(); });
        for (const bool truncating : {true, false}) {
            for (size_t i : order) {
                if (m_built.tokens <= m_config.tokenLimit)
                    return;
                Part &p = m_parts[i];
                if (p.dropped)
                    continue;
                const int before = sectionTokens(p);
                const QString shorter = truncating ? p.block->truncate(p.content, m_built.tokens - m_config.tokenLimit) : QString();
                if (!shorter.trimmed().isEmpty() && m_config.tokenCounter.count(p.block->render(shorter)) >= before)
                    continue; // not shorter: left out in the second pass if need be
                p.dropped = shorter.trimmed().isEmpty();
                if (!p.dropped)
                    p.content = shorter;
                if (!m_truncated.contains(p.block->name()))
                    m_truncated << p.block->name();
                report(p.block->name(), before, p.dropped ? 0 : sectionTokens(p));
                rebuild();
            }
        }
    }

    // Over the limit still, the oldest history is left out: the longest suffix that fits and starts
    // with a user message, else with anything but a tool result; none at all only when the extra
    // messages carry the conversation. False when nothing fits.
    bool trimHistory()
    {
        if (m_built.tokens <= m_config.tokenLimit)
            return true;
        const qsizetype n = m_history.size();
        for (const bool userOnly : {true, false})
            for (qsizetype s = m_start + 1; s < n; ++s)
                if (ChatWindow::canStartAt(m_roles, size_t(s)) && (!userOnly || m_roles[size_t(s)] == ChatMessage::Role::User) && tryStart(s))
                    return true;
        return !m_extraOther.empty() && tryStart(n);
    }

    // The tokens of the smallest request possible: the history from its last possible start.
    int smallestTokens() const
    {
        qsizetype s = m_history.size() - 1;
        while (s > 0 && !ChatWindow::canStartAt(m_roles, size_t(s)))
            --s;
        return build(std::max<qsizetype>(0, s)).tokens;
    }

    QStringList blockNames() const
    {
        QStringList names;
        for (const Part &p : m_parts)
            if (!p.dropped)
                names << p.block->name();
        return names;
    }

    ChatContext context() const
    {
        ChatContext ctx;
        ctx.messages = m_built.messages;
        ctx.tokens = m_built.tokens;
        for (qsizetype i = m_start; i < m_history.size(); ++i)
            ctx.historyTokens += m_historyTokens[size_t(i)];
        ctx.memoryTokens = m_config.tokenCounter.count(m_memory);
        ctx.historyMessages = int(m_history.size() - m_start);
        ctx.omittedMessages = int(m_start);
        ctx.blocks = blockNames();
        ctx.truncatedBlocks = m_truncated;
        ctx.failedBlocks = m_failed;
        return ctx;
    }

private:
    struct Part
    {
        std::shared_ptr<MemoryBlock> block;
        QString content;
        bool dropped = false;
    };
    struct Built
    {
        std::vector<ChatMessage> messages;
        int tokens = 0;
    };

    int sectionTokens(const Part &p) const { return m_config.tokenCounter.count(p.block->render(p.content)); }

    Built build(qsizetype start) const
    {
        Built b;
        std::vector<int> counts; // -1: counted by the counter
        for (const ChatMessage &m : m_extraSystem) {
            b.messages.push_back(m);
            counts.push_back(-1);
        }
        for (qsizetype i = start; i < m_history.size(); ++i) {
            b.messages.push_back(m_history[i].message);
            counts.push_back(m_historyTokens[size_t(i)]);
        }
        for (const ChatMessage &m : m_extraOther) {
            b.messages.push_back(m);
            counts.push_back(-1);
        }
        if (!m_memory.isEmpty()) {
            const size_t at = ChatWindow::insertMemory(b.messages, m_memory, m_config.insertMethod);
            if (b.messages.size() > counts.size())
                counts.insert(counts.begin() + qsizetype(at), -1);
            else
                counts[at] = -1;
        }
        for (size_t i = 0; i < b.messages.size(); ++i)
            b.tokens += counts[i] >= 0 ? counts[i] : m_config.tokenCounter.count(b.messages[i]);
        return b;
    }

    void rebuild()
    {
        std::vector<ChatWindow::Section> sections;
        for (const Part &p : m_parts)
            if (!p.dropped)
                sections.push_back({p.block->section(), p.block->name(), p.block->render(p.content)});
        m_memory = ChatWindow::renderMemory(sections);
        m_built = build(m_start);
    }

    bool tryStart(qsizetype start)
    {
        Built b = build(start);
        if (b.tokens > m_config.tokenLimit)
            return false;
        m_start = start;
        m_built = std::move(b);
        return true;
    }

    const ChatMemoryConfig &m_config;
    const QList<SessionMessage> &m_history;
    const std::vector<int> &m_historyTokens;
    std::vector<ChatMessage::Role> m_roles;
    std::vector<ChatMessage> m_extraSystem, m_extraOther, m_blockInput;
    std::vector<Part> m_parts;
    QStringList m_truncated;
    QStringList m_failed;
    QString m_memory; // the <memory> text of the blocks not left out
    qsizetype m_start = 0;
    Built m_built;
};

} // namespace

// ---------------------------------------------------------------------------------------------
// ChatMemoryPrivate

ChatMemoryPrivate::ChatMemoryPrivate(ChatMemory *qq, const QString &sessionId, const ChatMemoryConfig &cfg,
                                     std::shared_ptr<ChatStore> s, std::vector<std::shared_ptr<MemoryBlock>> b)
    : q(qq), session(sessionId), config(cfg), chatStore(std::move(s)), blocks(std::move(b)),
      owner(QStringLiteral("%1/%2/%3")
                .arg(hostName())
                .arg(QCoreApplication::applicationPid())
                .arg(QUuid::createUuid().toString(QUuid::Id128)))
{
}

void ChatMemoryPrivate::checkOpen() const
{
    if (closed)
        throw Error(ErrorKind::Storage, QStringLiteral("the chat memory of session %1 is closed").arg(session));
}

void ChatMemoryPrivate::checkNotOnWorker(const char *call) const
{
    if (worker.isCurrentThread())
        throw Error(ErrorKind::Internal,
                    QStringLiteral("ChatMemory::%1 was called on the chat memory's own worker thread (a block, or a slot connected "
                                   "directly to its signals), where it would wait for itself; use the *Async form, or connect "
                                   "with Qt::QueuedConnection")
                        .arg(QLatin1String(call)));
}

QStringList ChatMemoryPrivate::blockNames() const
{
    QStringList names;
    for (const auto &b : blocks)
        names << b->name();
    return names;
}

int ChatMemoryPrivate::tokensOf(const SessionMessage &m)
{
    if (m.seq > 0) {
        const auto it = tokenCache.constFind(m.seq);
        if (it != tokenCache.constEnd())
            return *it;
    }
    const int n = config.tokenCounter.count(m);
    if (m.seq > 0)
        tokenCache.insert(m.seq, n);
    return n;
}

void ChatMemoryPrivate::restoreStates()
{
    const QMap<QString, Json> states = chatStore->blockStates(session);
    for (const auto &b : blocks)
        b->restoreState(states.value(b->name(), Json()));
}

void ChatMemoryPrivate::checkToolPairs(const QList<SessionMessage> &tail, const QList<SessionMessage> &incoming)
{
    // The calls of the last assistant message with tool calls that have no result yet.
    QStringList open;
    const auto step = [&open](const SessionMessage &m, bool strict) {
        const ChatMessage &c = m.message;
        const auto fail = [&](const QString &why) {
            if (strict)
                throw Error(ErrorKind::InvalidArgument, why);
        };
        if (c.role == ChatMessage::Role::Tool) {
            if (!open.contains(c.toolCallId))
                fail(QStringLiteral("the tool result for call %1 answers no open tool call: a tool result must follow the "
                                    "assistant message that made the call (and the other results of that message)")
                         .arg(c.toolCallId));
            open.removeAll(c.toolCallId);
            return;
        }
        if (!open.isEmpty())
            fail(QStringLiteral("the tool calls %1 of the assistant message before this %2 message have no result yet; put each "
                                "call's result (ChatMessage::toolResult) before anything else")
                     .arg(open.join(QStringLiteral(", ")), ChatMessage::roleName(c.role)));
        open.clear();
        for (const ToolCall &call : c.toolCalls) {
            if (open.contains(call.id))
                fail(QStringLiteral("the assistant message calls two tools with the id %1; give each call its own id").arg(call.id));
            open << call.id;
        }
    };
    for (const SessionMessage &m : tail)
        step(m, false);
    for (const SessionMessage &m : incoming)
        step(m, true);
}

QList<SessionMessage> ChatMemoryPrivate::store(const QList<SessionMessage> &messages)
{
    checkToolPairs(chatStore->messages(session, false), messages);
    const QList<SessionMessage> stored = chatStore->append(session, messages);
    for (const SessionMessage &m : stored)
        tokensOf(m);
    Q_EMIT q->messagesStored(session, stored);
    return stored;
}

bool ChatMemoryPrivate::ownerGone(const QString &flushOwner, const QDateTime &claimedAt) const
{
    if (flushOwner.isEmpty())
        return true;
    const QStringList parts = flushOwner.split(QLatin1Char('/'));
    if (parts.size() < 3)
        return true;
    const QString instance = parts.last();
    const qint64 pid = parts.at(parts.size() - 2).toLongLong();
    const QString host = parts.mid(0, parts.size() - 2).join(QLatin1Char('/'));
    if (host != hostName())
        return claimedAt.msecsTo(QDateTime::currentDateTimeUtc()) > kFlushLeaseMs;
    if (pid == QCoreApplication::applicationPid()) {
        QMutexLocker lock(&liveMutex());
        return !liveInstances().contains(instance);
    }
    return !processAlive(pid);
}

bool ChatMemoryPrivate::recoverPending()
{
    const std::optional<FlushRecord> pending = chatStore->pendingFlush(session);
    if (!pending)
        return true;
    if (pending->owner != owner) {
        if (!ownerGone(pending->owner, pending->claimedAt))
            return false; // a live writer is applying it
        if (!chatStore->claimFlush(session, pending->flush, pending->owner, owner))
            return false; // another writer claimed it first
        qCInfo(lcChat).noquote() << QStringLiteral("chat session %1: finishing flush %2 left by %3")
                                        .arg(session)
                                        .arg(pending->flush)
                                        .arg(pending->owner.isEmpty() ? QStringLiteral("a failed writer") : pending->owner);
    }
    Q_EMIT q->flushStarted(session, pending->flush, int(pending->messages.size()), pending->tokens, pending->pendingBlocks);
    return applyFlush(*pending);
}

bool ChatMemoryPrivate::applyFlush(const FlushRecord &flush)
{
    QElapsedTimer clock;
    clock.start();
    FlushContext ctx;
    ctx.sessionId = session;
    ctx.sessionUid = flush.sessionUid;
    ctx.flush = flush.flush;
    ctx.tokens = flush.tokens;
    QStringList missing;
    for (const QString &name : flush.pendingBlocks)
        if (!q->block(name))
            missing << name;
    try {
        if (!missing.isEmpty()) {
            // Blocks of the flush the session no longer has: nobody can apply it to them.
            chatStore->abandonBlocks(session, flush.flush, missing);
            qCWarning(lcChat).noquote() << QStringLiteral("chat session %1: flush %2 was recorded for blocks the chat memory no longer "
                                                          "has (%3); it is dropped for them")
                                               .arg(session)
                                               .arg(flush.flush)
                                               .arg(missing.join(QStringLiteral(", ")));
        }
        restoreStates();
    } catch (const std::exception &e) {
        Q_EMIT q->flushFailed(session, flush.flush, QString(), errorText(e));
        chatStore->claimFlush(session, flush.flush, owner, QString());
        return false;
    }
    for (const QString &name : flush.pendingBlocks) {
        const std::shared_ptr<MemoryBlock> b = q->block(name);
        if (!b)
            continue;
        QElapsedTimer blockClock;
        blockClock.start();
        try {
            b->put(flush.messages, ctx);
            chatStore->completeBlock(session, flush.flush, name, b->state());
        } catch (const std::exception &e) {
            const QString why = errorText(e);
            qCWarning(lcChat).noquote() << QStringLiteral("chat session %1: block %2 failed on flush %3 (%4); the next put applies "
                                                          "it again")
                                               .arg(session, name)
                                               .arg(flush.flush)
                                               .arg(why);
            Q_EMIT q->flushFailed(session, flush.flush, name, why);
            try {
                restoreStates(); // the block's state as last recorded, not as the failed put left it
                chatStore->claimFlush(session, flush.flush, owner, QString());
            } catch (const std::exception &) {
                // The claim expires with this instance; the state is read again before the next use.
            }
            return false;
        }
        Q_EMIT q->blockFlushed(session, flush.flush, name, blockClock.nsecsElapsed() / 1e6);
    }
    QStringList applied = flush.pendingBlocks;
    for (const QString &name : missing)
        applied.removeAll(name);
    Q_EMIT q->flushCompleted(session, flush.flush, int(flush.messages.size()), flush.tokens, applied, clock.nsecsElapsed() / 1e6);
    return true;
}

void ChatMemoryPrivate::manageQueue()
{
    try {
        for (int round = 0; round < kMaxFlushRounds; ++round) {
            if (!recoverPending())
                return;
            const QList<SessionMessage> active = chatStore->messages(session, false);
            std::vector<ChatMessage::Role> roles;
            std::vector<int> tokens;
            for (const SessionMessage &m : active) {
                roles.push_back(m.message.role);
                tokens.push_back(tokensOf(m));
            }
            const ChatWindow::FlushSelection sel =
                ChatWindow::selectFlush(roles, tokens, config.historyBudget(), config.flushSize());
            if (sel.count == 0)
                return;
            const std::optional<FlushRecord> flush = chatStore->beginFlush(
                session, active.front().seq, active.at(sel.count - 1).seq, sel.tokens, blockNames(), owner);
            if (!flush)
                continue; // another writer changed the session first: look again
            Q_EMIT q->flushStarted(session, flush->flush, int(flush->messages.size()), flush->tokens, flush->pendingBlocks);
            if (!applyFlush(*flush))
                return;
        }
    } catch (const std::exception &e) {
        qCWarning(lcChat).noquote() << QStringLiteral("chat session %1: flushing failed: %2").arg(session, errorText(e));
        Q_EMIT q->flushFailed(session, 0, QString(), errorText(e));
    }
}

ChatContext ChatMemoryPrivate::assemble(const std::vector<ChatMessage> &extra)
{
    restoreStates();
    const QList<SessionMessage> active = chatStore->messages(session, false);
    std::vector<int> historyTokens;
    for (const SessionMessage &m : active)
        historyTokens.push_back(tokensOf(m));
    RequestWindow window(config, active, historyTokens, extra);
    window.collect(blocks, [this](const QString &block, const QString &error) {
        qCWarning(lcChat).noquote() << QStringLiteral("chat session %1: block %2 could not give its content (%3); it is left out of "
                                                      "this request")
                                           .arg(session, block, error);
        Q_EMIT q->blockFailed(session, block, error);
    });
    window.giveWayBlocks([this](const QString &block, int before, int after) { Q_EMIT q->blockTruncated(session, block, before, after); });
    if (!window.trimHistory())
        throw Error(ErrorKind::ContextLength,
                    QStringLiteral("chat session %1 cannot fit token_limit %2: the blocks that never give way (%3), the extra messages "
                                   "and the latest history message need %4 tokens. Raise token_limit, give those blocks a priority "
                                   "above 0, or shorten the messages")
                        .arg(session)
                        .arg(config.tokenLimit)
                        .arg(window.blockNames().isEmpty() ? QStringLiteral("none") : window.blockNames().join(QStringLiteral(", ")))
                        .arg(window.smallestTokens()));
    return window.context();
}

int ChatMemoryPrivate::clearSession()
{
    const QString oldUid = q->sessionUid();
    for (const auto &b : blocks)
        b->clear(session, oldUid);
    const int deleted = chatStore->clearSession(session);
    const SessionInfo info = chatStore->openSession(session);
    {
        QMutexLocker lock(&uidMutex);
        uid = info.uid;
    }
    tokenCache.clear();
    for (const auto &b : blocks)
        b->restoreState(Json());
    return deleted;
}

// ---------------------------------------------------------------------------------------------
// ChatMemory

ChatMemory::ChatMemory(const QString &sessionId, const ChatMemoryConfig &config, std::shared_ptr<ChatStore> store,
                       std::vector<std::shared_ptr<MemoryBlock>> blocks, QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<mneme::SessionMessage>();
    qRegisterMetaType<QList<mneme::SessionMessage>>();
    config.validate();
    if (!store)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a chat memory needs a ChatStore (SqliteChatStore, or your own)"));
    QSet<QString> names;
    for (const auto &b : blocks) {
        if (!b)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("chat session %1 was given a null memory block").arg(sessionId));
        if (names.contains(b->name()))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("chat session %1 has two memory blocks named %2; give each block its own name").arg(sessionId, b->name()));
        if (b->m_owner)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("memory block %1 already belongs to the chat memory of session %2; a "
                                                                   "block serves one session: make one per session")
                                                        .arg(b->name(), b->m_owner->sessionId()));
        names.insert(b->name());
    }
    const SessionInfo info = store->openSession(sessionId);
    d = std::make_unique<ChatMemoryPrivate>(this, sessionId, config, std::move(store), std::move(blocks));
    d->uid = info.uid;
    for (const auto &b : d->blocks)
        b->m_owner = this;
    {
        QMutexLocker lock(&liveMutex());
        liveInstances().insert(d->owner.section(QLatin1Char('/'), -1));
    }
    d->restoreStates();
    // A flush a crashed writer left is finished (and an over-long history flushed) in the background.
    d->worker.post([p = d.get()] { p->manageQueue(); });
}

ChatMemory::~ChatMemory()
{
    d->closed = true;
    d->worker.waitForIdle();
    {
        QMutexLocker lock(&liveMutex());
        liveInstances().remove(d->owner.section(QLatin1Char('/'), -1));
    }
    for (const auto &b : d->blocks)
        b->m_owner = nullptr;
}

std::shared_ptr<ChatStore> ChatMemory::defaultStore(const ChatMemoryConfig &config, Memory *memory)
{
    QString path;
    if (config.storage.is_string())
        path = QString::fromStdString(config.storage.get<std::string>());
    else if (memory) {
        path = memory->storage().location();
        if (path.contains(QLatin1String("://")))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the memory's store %1 is not a SQLite file, where chat sessions are kept; give the chat "
                                       "memory a file of its own (its \"storage\" key)")
                            .arg(path));
    } else
        path = MemoryConfig::defaultStoragePath();
    return std::make_shared<SqliteChatStore>(path);
}

std::vector<std::shared_ptr<MemoryBlock>> ChatMemory::buildBlocks(const Json &specs, Memory *memory, const Json &llm)
{
    BlockSpecs::check(specs);
    std::shared_ptr<LlmProvider> provider = BlockSpecs::llmFrom(llm);
    if (!provider && memory)
        provider = memory->llm();
    return BlockSpecs::build(specs, memory, provider);
}

std::unique_ptr<ChatMemory> ChatMemory::fromDefaults(const QString &sessionId, const ChatMemoryConfig &config, Memory *memory,
                                                     QObject *parent)
{
    config.validate();
    auto blocks = buildBlocks(config.memoryBlocks, memory, config.llm);
    return std::make_unique<ChatMemory>(sessionId, config, defaultStore(config, memory), std::move(blocks), parent);
}

QString ChatMemory::sessionId() const { return d->session; }

QString ChatMemory::sessionUid() const
{
    QMutexLocker lock(&d->uidMutex);
    return d->uid;
}

const ChatMemoryConfig &ChatMemory::config() const { return d->config; }
std::shared_ptr<ChatStore> ChatMemory::store() const { return d->chatStore; }
const std::vector<std::shared_ptr<MemoryBlock>> &ChatMemory::blocks() const { return d->blocks; }

std::shared_ptr<MemoryBlock> ChatMemory::block(const QString &name) const
{
    for (const auto &b : d->blocks)
        if (b->name() == name)
            return b;
    return nullptr;
}

const TokenCounter &ChatMemory::tokenCounter() const { return d->config.tokenCounter; }
int ChatMemory::countTokens(const QString &text) const { return d->config.tokenCounter.count(text); }

QFuture<QList<SessionMessage>> ChatMemory::putMessagesAsync(const QList<SessionMessage> &messages)
{
    if (messages.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("putMessages needs at least one message"));
    for (const SessionMessage &m : messages) {
        SessionMessage::check(m);
        const int tokens = d->config.tokenCounter.count(m);
        if (tokens > d->config.tokenLimit)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("a %1 message of %2 tokens is longer than the chat memory's whole token_limit (%3) and could "
                                       "never be sent; shorten it or raise token_limit")
                            .arg(ChatMessage::roleName(m.message.role))
                            .arg(tokens)
                            .arg(d->config.tokenLimit));
    }
    d->checkOpen();
    // The future is settled as soon as the messages are stored; the flushes they cause run right after,
    // in the same job, so every later call of this ChatMemory sees them done.
    auto promise = std::make_shared<QPromise<QList<SessionMessage>>>();
    promise->start();
    QFuture<QList<SessionMessage>> future = promise->future();
    d->worker.post([p = d.get(), promise, messages] {
        try {
            promise->addResult(p->store(messages));
            promise->finish();
        } catch (const QException &e) {
            promise->setException(e);
            promise->finish();
            return;
        } catch (...) {
            promise->setException(std::current_exception());
            promise->finish();
            return;
        }
        p->manageQueue();
    });
    return future;
}

QList<SessionMessage> ChatMemory::putMessages(const QList<SessionMessage> &messages)
{
    d->checkNotOnWorker("putMessages()");
    return putMessagesAsync(messages).result();
}

SessionMessage ChatMemory::put(const ChatMessage &message, const Json &metadata)
{
    d->checkNotOnWorker("put()");
    return putMessagesAsync({SessionMessage(message, metadata)}).result().first();
}

QFuture<ChatContext> ChatMemory::getContextAsync(const std::vector<ChatMessage> &extraMessages)
{
    for (const ChatMessage &m : extraMessages)
        SessionMessage::check(SessionMessage(m));
    return d->submit<ChatContext>([p = d.get(), extraMessages] { return p->assemble(extraMessages); });
}

ChatContext ChatMemory::getContext(const std::vector<ChatMessage> &extraMessages)
{
    d->checkNotOnWorker("getContext()");
    return getContextAsync(extraMessages).result();
}

QFuture<std::vector<ChatMessage>> ChatMemory::getAsync(const std::vector<ChatMessage> &extraMessages)
{
    for (const ChatMessage &m : extraMessages)
        SessionMessage::check(SessionMessage(m));
    return d->submit<std::vector<ChatMessage>>([p = d.get(), extraMessages] { return p->assemble(extraMessages).messages; });
}

std::vector<ChatMessage> ChatMemory::get(const std::vector<ChatMessage> &extraMessages)
{
    d->checkNotOnWorker("get()");
    return getAsync(extraMessages).result();
}

QFuture<QList<SessionMessage>> ChatMemory::messagesAsync(bool includeArchived)
{
    return d->submit<QList<SessionMessage>>(
        [p = d.get(), includeArchived] { return p->chatStore->messages(p->session, includeArchived); });
}

QList<SessionMessage> ChatMemory::messages(bool includeArchived)
{
    d->checkNotOnWorker("messages()");
    return messagesAsync(includeArchived).result();
}

SessionInfo ChatMemory::info()
{
    d->checkNotOnWorker("info()");
    return d->submit<SessionInfo>([p = d.get()] { return p->chatStore->openSession(p->session); }).result();
}

QFuture<int> ChatMemory::clearAsync()
{
    return d->submit<int>([p = d.get()] { return p->clearSession(); });
}

int ChatMemory::clear()
{
    d->checkNotOnWorker("clear()");
    return clearAsync().result();
}

void ChatMemory::drain()
{
    d->checkNotOnWorker("drain()");
    d->worker.waitForIdle();
}

} // namespace mneme
