// A flow that kicks off a crew: "plan" turns the kickoff inputs into the crew's inputs, "research"
// kicks off a two-agent crew and waits for it (the step returns the crew's QFuture<CrewOutput>; the
// flow waits without blocking its thread), and "publish" takes the CrewOutput, keeps the result in
// the flow's own memory (/flow/launchflow) and says what it stored.
//
//   crew_flow [--verbose] [--flow-graph]

#include "../common/example_llm.h"
#include "crew_flow.h"

#include <mneme/flows/flow.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/event_bus.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.addHelpOption();
    cli.addOption({QStringLiteral("verbose"), QStringLiteral("Print every event of the flow and its crew.")});
    cli.addOption({QStringLiteral("flow-graph"), QStringLiteral("Print the flow's graph (Graphviz DOT) and exit.")});
    cli.process(app);

    const example::ExampleLlm choice = example::chooseLlm(QStringLiteral(MNEME_EXAMPLE_DIR "/crew_flow.jsonl"));
    QTemporaryDir scratch;
    try {
        EventBus &bus = EventBus::instance();
        FlowOptions options;
        options.eventBus = &bus;
        options.memoryConfig.storage = scratch.filePath(QStringLiteral("flow.db")).toStdString();
        FlowInstance<example::LaunchFlow> flow(choice.llm, options); // its run stops before m_crew goes
        if (cli.isSet(QStringLiteral("flow-graph"))) {
            std::printf("%s", qPrintable(flow.toDot()));
            return 0;
        }
        std::printf("%s\n", qPrintable(choice.line));
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(&bus, stderr);
        QObject::connect(&flow, &Flow::stepFinished, &app, [](const QString &step, const QJsonValue &, const QJsonValue &output, double) {
            const QString text = output.isString() ? output.toString()
                                                   : QString::fromUtf8(QJsonDocument(output.toObject()).toJson(QJsonDocument::Compact));
            std::printf("step %s -> %s\n", qPrintable(step), qPrintable(text.left(160)));
        });

        const Json result = flow.kickoffAndWait(example::launchInputs());
        std::printf("\nResult: %s\nThe flow's memory:\n%s\n", result.get<std::string>().c_str(), qPrintable(flow.memory()->tree()));
    } catch (const Error &e) {
        std::fprintf(stderr, "crew_flow: %s\n", e.what());
        return 1;
    }
    return 0;
}
