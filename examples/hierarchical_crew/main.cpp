// A hierarchical crew: a manager agent, built by the crew from its LLM, does the task by delegating
// parts of it to the crew's agents through the "delegate work" and "ask question" tools, then puts
// the answer together. The task names no agent, so the manager may use any of them.
//
//   hierarchical_crew [--verbose]

#include "../common/example_llm.h"

#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/crew.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.addHelpOption();
    cli.addOption({QStringLiteral("verbose"), QStringLiteral("Print every event of the crew.")});
    cli.process(app);

    const example::ExampleLlm choice = example::chooseLlm(QStringLiteral(MNEME_EXAMPLE_DIR "/hierarchical_crew.jsonl"));
    std::printf("%s\n", qPrintable(choice.line));

    try {
        auto analyst = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Market Analyst"),
            .goal = QStringLiteral("Know who buys {product} and why."),
            .backstory = QStringLiteral("You size markets and describe customers in plain words."),
            .llm = choice.llm,
        });
        auto copywriter = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Copywriter"),
            .goal = QStringLiteral("Write launch copy that a customer would actually read."),
            .backstory = QStringLiteral("You write short, concrete copy without buzzwords."),
            .llm = choice.llm,
        });
        auto announce = std::make_shared<Task>(TaskConfig{
            .name = QStringLiteral("announcement"),
            .description = QStringLiteral("Prepare a launch announcement for {product}, grounded in who will buy it."),
            .expectedOutput = QStringLiteral("One paragraph of launch copy, then one line naming the target customer."),
        });
        Crew crew(CrewConfig{
            .name = QStringLiteral("Launch Crew"),
            .agents = {analyst, copywriter},
            .tasks = {announce},
            .process = Process::Hierarchical,
            .managerLlm = choice.llm,
        });
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(crew.eventBus(), stderr);

        // Each delegation, as the manager's steps report it.
        QObject::connect(crew.eventBus(), &EventBus::toolEvent, &app, [](const Event &e) {
            if (e.type == QLatin1String(events::kToolUsageStarted))
                std::printf("manager -> %s %s\n", e.properties.value("tool_name", std::string()).c_str(),
                            e.properties.value("tool_args", std::string()).c_str());
        });

        const CrewOutput out = crew.kickoffAndWait(Json{{"product", "a solar-powered e-bike charger"}});
        std::printf("\n%s\n\n(%s; %d tokens in %d LLM calls)\n", qPrintable(out.raw.trimmed()),
                    qPrintable(out.tasksOutput.front().agent), out.tokenUsage.totalTokens(), out.llmRequests);
    } catch (const Error &e) {
        std::fprintf(stderr, "hierarchical_crew: %s\n", e.what());
        return 1;
    }
    return 0;
}
