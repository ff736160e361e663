// Test helper: chat_runner <store file> <messages> [--pause-at POINT] [--dump]
//
// Puts a fixed conversation (message i is the same in every run) into chat session "crash" of the store
// file, with four blocks sharing the file: fact extraction (offline), vector and long-term (over a
// Memory of the same file), and a counter of its own; it goes on from the messages already stored, so
// a killed run is finished by running it again. It prints "stored <n>" after each message.
//
// --pause-at stops the process where a test kills it, printing "paused <POINT>" and sleeping:
//   started:N         flush N is recorded, no block has it yet
//   in:N:BLOCK        BLOCK applied flush N (its effect is made), its completion not yet recorded
//   done:N:BLOCK      BLOCK's completion of flush N is recorded
// --dump prints the final state as one JSON document (messages, block states, the Memory's records).

#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/long_term_memory_block.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/vector_memory_block.h>

#include <QCoreApplication>
#include <QThread>
#include <cstdio>

using namespace mneme;

namespace {

QString g_pauseAt;

void pauseIf(const QString &point)
{
    if (point != g_pauseAt)
        return;
    std::printf("paused %s\n", qPrintable(point));
    std::fflush(stdout);
    for (;;)
        QThread::sleep(3600); // until the test kills the process
}

// A block that pauses right after its own put(), before ChatMemory records its completion.
template<typename Block>
class Pausing : public Block
{
public:
    using Block::Block;
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override
    {
        Block::put(messages, flush);
        pauseIf(QStringLiteral("in:%1:%2").arg(flush.flush).arg(this->name()));
    }
};

// Counts the messages it receives, in its state.
class CounterBlock : public MemoryBlock
{
public:
    using MemoryBlock::MemoryBlock;
    QString get(const std::vector<ChatMessage> &) override { return QStringLiteral("%1 messages flushed").arg(m_count); }
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override
    {
        m_count += int(messages.size());
        m_seqs.push_back(Json::array({flush.flush, messages.front().seq, messages.back().seq}));
        pauseIf(QStringLiteral("in:%1:%2").arg(flush.flush).arg(name()));
    }
    Json state() const override { return Json{{"count", m_count}, {"batches", m_seqs}}; }
    void restoreState(const Json &state) override
    {
        m_count = state.is_object() ? state.value("count", 0) : 0;
        m_seqs = state.is_object() ? state.value("batches", Json::array()) : Json::array();
    }

private:
    int m_count = 0;
    Json m_seqs = Json::array();
};

ChatMessage message(int i)
{
    if (i % 2 == 1)
        return ChatMessage::assistant(QStringLiteral("Noted, message %1: you said something about topic %2.").arg(i).arg(i / 2));
    return ChatMessage::user(QStringLiteral("Message %1. I like topic %2. My favourite number for it is %3.").arg(i).arg(i / 2).arg(i * 7));
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QStringList args = app.arguments();
    if (args.size() < 3) {
        std::fprintf(stderr, "usage: chat_runner <store file> <messages> [--pause-at POINT] [--dump]\n");
        return 2;
    }
    const QString path = args.at(1);
    const int total = args.at(2).toInt();
    const qsizetype pause = args.indexOf(QStringLiteral("--pause-at"));
    if (pause > 0 && pause + 1 < args.size())
        g_pauseAt = args.at(pause + 1);
    const bool dump = args.contains(QStringLiteral("--dump"));
    try {
        MemoryConfig mc;
        mc.storage = path.toStdString();
        Memory memory(mc);
        ChatMemoryConfig config;
        config.tokenLimit = 600;
        config.chatHistoryTokenRatio = 0.25;
        config.tokenFlushSize = 60;
        auto facts = std::make_shared<Pausing<FactExtractionMemoryBlock>>(QStringLiteral("facts"), nullptr, 1000, 1);
        auto vector = std::make_shared<Pausing<VectorMemoryBlock>>(QStringLiteral("vector"), &memory);
        auto longTerm = std::make_shared<Pausing<LongTermMemoryBlock>>(QStringLiteral("long_term"), &memory);
        auto counter = std::make_shared<CounterBlock>(QStringLiteral("counter"), 2);
        ChatMemory chat(QStringLiteral("crash"), config, std::make_shared<SqliteChatStore>(path), {facts, vector, longTerm, counter});
        QObject::connect(&chat, &ChatMemory::flushStarted, &chat,
                         [](const QString &, qint64 flush) { pauseIf(QStringLiteral("started:%1").arg(flush)); }, Qt::DirectConnection);
        QObject::connect(&chat, &ChatMemory::blockFlushed, &chat,
                         [](const QString &, qint64 flush, const QString &block) { pauseIf(QStringLiteral("done:%1:%2").arg(flush).arg(block)); },
                         Qt::DirectConnection);
        chat.drain(); // a flush left by a killed run is finished first
        for (int i = int(chat.messages(true).size()); i < total; ++i) {
            chat.put(message(i));
            std::printf("stored %d\n", i + 1);
            std::fflush(stdout);
        }
        chat.drain();
        if (dump) {
            Json messages = Json::array();
            for (const SessionMessage &m : chat.messages(true)) {
                Json j = m.toJson();
                j.erase("at"); // the only field that differs between two runs
                messages.push_back(j);
            }
            Json states = Json::object();
            const QMap<QString, Json> s = chat.store()->blockStates(QStringLiteral("crash"));
            for (auto it = s.begin(); it != s.end(); ++it)
                states[it.key().toStdString()] = it.value();
            Json records = Json::array();
            for (const MemoryRecord &r : memory.listRecords(QStringLiteral("/"), 10000))
                // Ids and session scopes carry the session's random uid: compared without it.
                records.push_back({{"scope", r.scope.startsWith(QLatin1String("/chat/")) ? r.scope.section(QLatin1Char('-'), 0, -2) : r.scope},
                                   {"content", r.content},
                                   {"categories", r.categories}});
            std::sort(records.begin(), records.end(), [](const Json &a, const Json &b) { return a.dump() < b.dump(); });
            const Json out = {{"messages", messages},
                              {"states", states},
                              {"records", records},
                              {"pending_flush", chat.info().pendingFlush}};
            std::printf("%s\n", out.dump().c_str());
        }
        std::printf("done\n");
    } catch (const Error &e) {
        std::fprintf(stderr, "chat_runner: %s\n", e.what());
        return 1;
    }
    return 0;
}
