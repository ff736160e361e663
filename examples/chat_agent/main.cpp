// An agent you chat with, with a chat memory in the LlamaIndex manner: the session's history in a
// token-limited FIFO, its oldest messages flushed into memory blocks that come back into the prompt.
// The blocks are the seed's example translated to C++ (a static block, fact extraction, a vector block
// of message batches), a long-term block that turns flushed messages into facts of the unified
// Memory, and a block of our own (the seed's MentionCounter). Six turns, a calculator tool, then the
// <memory> section the next request would carry, and the Memory's records.
//
//   chat_agent [--db PATH] [--verbose]
//
// --db keeps the memory and the session in PATH (by default a temporary folder, so every run starts
// empty and the shipped cassette matches); --verbose prints the event trace.

#include "../common/example_llm.h"

#include <mneme/core/plugin_registry.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/long_term_memory_block.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/static_memory_block.h>
#include <mneme/memory/vector_memory_block.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/console_listener.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTemporaryDir>
#include <cstdio>

using namespace mneme;

// A memory block of our own (the seed's MentionCounter): counts how often the flushed messages mention
// a name. Its count is its state, so it survives restarts and is applied exactly once per flush.
class MentionCounter : public MemoryBlock
{
public:
    MentionCounter(const QString &name, const QString &mention, int priority) : MemoryBlock(name, priority), m_mention(mention) {}

    QString get(const std::vector<ChatMessage> &) override
    {
        return QStringLiteral("%1 was mentioned %2 times.").arg(m_mention).arg(m_count);
    }
    void put(const QList<SessionMessage> &messages, const FlushContext &) override
    {
        for (const SessionMessage &m : messages)
            m_count += int(m.message.content.count(m_mention));
    }
    // Shortening is all or nothing: the default truncate() leaves the block out.
    Json state() const override { return Json{{"count", m_count}}; }
    void restoreState(const Json &state) override { m_count = state.is_object() ? state.value("count", 0) : 0; }

private:
    QString m_mention;
    int m_count = 0;
};

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.addHelpOption();
    cli.addOption({QStringLiteral("db"), QStringLiteral("Keep the memory and the chat session in this SQLite file."), QStringLiteral("path")});
    cli.addOption({QStringLiteral("verbose"), QStringLiteral("Print every event.")});
    cli.process(app);

    const example::ExampleLlm choice = example::chooseLlm(QStringLiteral(MNEME_EXAMPLE_DIR "/chat_agent.jsonl"));
    std::printf("%s\n", qPrintable(choice.line));

    QTemporaryDir scratch;
    const QString db = cli.isSet(QStringLiteral("db")) ? cli.value(QStringLiteral("db")) : scratch.filePath(QStringLiteral("memory.db"));
    try {
        const std::shared_ptr<LlmProvider> llm = choice.llm.resolve();
        MemoryConfig memoryConfig;
        memoryConfig.storage = db.toStdString();
        Memory memory(memoryConfig);
        memory.setLlm(llm); // the long-term block's fact extraction

        // The seed's blocks, and two more.
        VectorMemoryBlock::Options vector;
        vector.similarityTopK = 2;
        vector.retrievalContextWindow = 5;
        vector.priority = 2;
        LongTermMemoryBlock::Options longTerm;
        longTerm.scope = QStringLiteral("/trips");
        longTerm.similarityTopK = 3;
        longTerm.priority = 3;
        std::vector<std::shared_ptr<MemoryBlock>> blocks = {
            std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"),
                                                QStringLiteral("The user is Logan. He lives in Saskatoon and works at a bakery."), 0),
            std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("extracted_info"), llm, 50, 1),
            std::make_shared<VectorMemoryBlock>(QStringLiteral("vector_memory"), &memory, vector),
            std::make_shared<LongTermMemoryBlock>(QStringLiteral("long_term"), &memory, longTerm),
            std::make_shared<MentionCounter>(QStringLiteral("mentions"), QStringLiteral("Logan"), 4),
        };
        // A small budget, so that the first turns are flushed into the blocks within six turns.
        ChatMemoryConfig config;
        config.tokenLimit = 900;
        config.chatHistoryTokenRatio = 0.4;
        config.tokenFlushSize = 150;
        config.insertMethod = InsertMethod::System;
        auto chatMemory = std::make_shared<ChatMemory>(QStringLiteral("lisbon-trip"), config, std::make_shared<SqliteChatStore>(db), blocks);

        auto assistant = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Trip Assistant"),
            .goal = QStringLiteral("Help the user plan a trip, remembering what they told you."),
            .backstory = QStringLiteral("You plan city trips. You use the calculator for any arithmetic and answer in two or three "
                                        "sentences."),
            .llm = llm,
            .tools = {PluginRegistry::instance().createTool(QStringLiteral("calculator"))},
        });
        EventBus bus;
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(&bus, stderr);
        AgentChat chat(assistant, chatMemory, AgentChatOptions{&bus});
        QObject::connect(chatMemory.get(), &ChatMemory::flushCompleted, &app,
                         [](const QString &, qint64 flush, int messages, int tokens, const QStringList &blocks) {
                             std::printf("  (flush %lld: %d messages, %d tokens, to %s)\n", flush, messages, tokens,
                                         qPrintable(blocks.join(QStringLiteral(", "))));
                         },
                         Qt::QueuedConnection);

        const QStringList turns = {
            QStringLiteral("Hi! I'm Logan. I'm planning a trip to Lisbon in May with my sister Ana."),
            QStringLiteral("We have a budget of 1800 EUR for the two of us. Flights are 320 EUR each. What is left for the rest?"),
            QStringLiteral("Ana is vegetarian, and I don't eat fish. Where should we eat?"),
            QStringLiteral("Logan again: we prefer walking over taxis. What should we see on day one?"),
            QStringLiteral("What did we say is left of our budget after the flights?"),
            QStringLiteral("Thanks! Summarise what you know about us."),
        };
        for (const QString &message : turns) {
            std::printf("\nuser: %s\n", qPrintable(message));
            const ChatReply reply = chat.sendAndWait(message);
            for (const AgentToolCall &call : reply.toolCalls)
                std::printf("  [%s %s -> %s]\n", qPrintable(call.name), call.arguments.dump().c_str(), qPrintable(call.output));
            std::printf("assistant: %s\n", qPrintable(reply.text));
            QCoreApplication::processEvents();
        }
        chatMemory->drain();
        QCoreApplication::processEvents();

        const SessionInfo info = chatMemory->info();
        std::printf("\nSession %s: %d messages in the history, %d flushed in %lld flushes.\n", qPrintable(info.id), info.activeMessages,
                    info.archivedMessages, info.flushes);
        const ChatContext next = chatMemory->getContext({ChatMessage::user(QStringLiteral("What do you know about us?"))});
        std::printf("The next request: %d tokens (%d of history, %d of memory), blocks %s.\n", next.tokens, next.historyTokens,
                    next.memoryTokens, qPrintable(next.blocks.join(QStringLiteral(", "))));
        const QString system = next.messages.front().content;
        std::printf("Its system message starts with the memory:\n%s\n", qPrintable(system.left(system.indexOf(QStringLiteral("</memory>")) + 9)));
        std::printf("\nThe long-term memory learned:\n");
        for (const MemoryRecord &r : memory.listRecords(QStringLiteral("/trips")))
            std::printf("  %s  %s\n", qPrintable(r.scope), qPrintable(r.content));
    } catch (const Error &e) {
        std::fprintf(stderr, "chat_agent: %s\n", e.what());
        return 1;
    }
    return 0;
}
