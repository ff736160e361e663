// A two-agent research crew with memory, kicked off twice: the second run recalls what the first
// learned. A researcher (with the calculator tool) gathers facts, a writer turns them into a brief;
// after each task the crew stores the output's facts under /crew/research-crew/agent/<role>, and
// before each task it recalls the relevant ones into the prompt.
//
//   research_crew [--db PATH] [--verbose]
//
// --db keeps the memory in PATH across program runs (by default it lives in a temporary folder, so
// every run starts empty and the shipped cassette matches); --verbose prints the event trace.

#include "../common/example_llm.h"
#include "research_crew.h"

#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/event_bus.h>

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
    cli.addOption({QStringLiteral("db"), QStringLiteral("Keep the crew's memory in this SQLite file."), QStringLiteral("path")});
    cli.addOption({QStringLiteral("verbose"), QStringLiteral("Print every event of the crew.")});
    cli.process(app);

    const example::ExampleLlm choice = example::chooseLlm(QStringLiteral(MNEME_EXAMPLE_DIR "/research_crew.jsonl"));
    std::printf("%s\n", qPrintable(choice.line));

    QTemporaryDir scratch;
    const QString db = cli.isSet(QStringLiteral("db")) ? cli.value(QStringLiteral("db")) : scratch.filePath(QStringLiteral("memory.db"));

    try {
        const std::unique_ptr<Crew> crewOwner = example::makeResearchCrew(choice.llm, db);
        Crew &crew = *crewOwner;
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(crew.eventBus(), stderr);

        // Show what each task recalled from memory before it started.
        QObject::connect(
            crew.eventBus(), &EventBus::memoryEvent, &app, [](const Event &e) {
                if (e.type != QLatin1String(events::kMemoryRetrievalCompleted))
                    return;
                const QString recalled = QString::fromStdString(e.properties.value("memory_content", std::string()));
                std::printf("  recalled before the task: %s\n",
                            recalled.isEmpty() ? "nothing" : qPrintable(QStringLiteral("\n    ") + recalled.split(QLatin1Char('\n')).join(QStringLiteral("\n    "))));
            },
            Qt::QueuedConnection);

        const QStringList topics = example::researchTopics();
        for (int run = 0; run < topics.size(); ++run) {
            std::printf("\n== Run %d: %s\n", run + 1, qPrintable(topics[run]));
            const CrewOutput out = crew.kickoffAndWait(Json{{"topic", topics[run].toStdString()}});
            QCoreApplication::processEvents();
            for (const TaskOutput &t : out.tasksOutput)
                std::printf("  [%s] %s\n", qPrintable(t.agent), qPrintable(t.raw.trimmed().replace(QLatin1Char('\n'), QStringLiteral("\n    "))));
            std::printf("  tokens: %d in %d LLM calls\n", out.tokenUsage.totalTokens(), out.llmRequests);
        }
        std::printf("\nMemory after both runs:\n%s\n", qPrintable(crew.memory()->tree()));
    } catch (const Error &e) {
        std::fprintf(stderr, "research_crew: %s\n", e.what());
        return 1;
    }
    return 0;
}
