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
#include "chat_agent.h"

#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/console_listener.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTemporaryDir>
#include <cstdio>

using namespace mneme;

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
        example::TripChat trip = example::makeTripChat(llm, db);
        Memory &memory = *trip.memory;
        const std::shared_ptr<ChatMemory> chatMemory = trip.chatMemory;
        const std::shared_ptr<Agent> assistant = trip.assistant;
        EventBus bus;
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(&bus, stderr);
        AgentChat chat(assistant, chatMemory, AgentChatOptions{&bus});
        QObject::connect(
            chatMemory.get(), &ChatMemory::flushCompleted, &app,
            [](const QString &, qint64 flush, int messages, int tokens, const QStringList &blocks) {
                std::printf("  (flush %lld: %d messages, %d tokens, to %s)\n", flush, messages, tokens,
                            qPrintable(blocks.join(QStringLiteral(", "))));
            },
            Qt::QueuedConnection);

        const QStringList turns = example::tripTurns();
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
