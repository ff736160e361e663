// A flow that kicks off a crew: "plan" turns the kickoff inputs into the crew's inputs, "research"
// kicks off a two-agent crew and waits for it (the step returns the crew's QFuture<CrewOutput>; the
// flow waits without blocking its thread), and "publish" takes the CrewOutput, keeps the result in
// the flow's own memory (/flow/launchflow) and says what it stored.
//
//   crew_flow [--verbose] [--flow-graph]

#include "../common/example_llm.h"

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

class LaunchFlow : public Flow
{
public:
    LaunchFlow(const LlmRef &llm, const FlowOptions &options) : Flow(QStringLiteral("LaunchFlow"), options)
    {
        auto researcher = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Product Researcher"),
            .goal = QStringLiteral("Know what {audience} need from {product}."),
            .backstory = QStringLiteral("You interview customers and report what they actually say."),
            .llm = llm,
        });
        auto writer = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Tagline Writer"),
            .goal = QStringLiteral("Write taglines that speak to {audience}."),
            .backstory = QStringLiteral("You write short lines people remember."),
            .llm = llm,
        });
        auto needs = std::make_shared<Task>(TaskConfig{
            .name = QStringLiteral("needs"),
            .description = QStringLiteral("List what {audience} need from {product}."),
            .expectedOutput = QStringLiteral("Three short bullet points."),
            .agent = researcher,
        });
        auto tagline = std::make_shared<Task>(TaskConfig{
            .name = QStringLiteral("tagline"),
            .description = QStringLiteral("Write one tagline for {product} from those needs."),
            .expectedOutput = QStringLiteral("One line, at most ten words."),
            .agent = writer,
        });
        m_crew = std::make_unique<Crew>(CrewConfig{
            .name = QStringLiteral("Launch Crew"),
            .agents = {researcher, writer},
            .tasks = {needs, tagline},
            .eventBus = options.eventBus,
        });

        start("plan", [](const Json &inputs) {
            return Json{{"product", inputs.value("product", std::string("our product"))},
                        {"audience", inputs.value("audience", std::string("customers"))}};
        });
        listen("research", "plan", [this](const Json &plan) { return m_crew->kickoff(plan); });
        listen("publish", "research", [this](const CrewOutput &out) {
            RememberOptions o;
            o.scope = QStringLiteral("/taglines");
            o.importance = 0.8;
            o.categories = QStringList{QStringLiteral("marketing")};
            const MemoryRecord stored = remember(out.raw.trimmed(), o);
            return QStringLiteral("Stored \"%1\" at %2 (%3 tokens)").arg(stored.content, stored.scope).arg(out.tokenUsage.totalTokens());
        });
    }

private:
    std::unique_ptr<Crew> m_crew;
};

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
        FlowInstance<LaunchFlow> flow(choice.llm, options); // its run stops before m_crew goes
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

        const Json result = flow.kickoffAndWait(Json{{"product", "a solar-powered e-bike charger"}, {"audience", "city commuters"}});
        std::printf("\nResult: %s\nThe flow's memory:\n%s\n", result.get<std::string>().c_str(), qPrintable(flow.memory()->tree()));
    } catch (const Error &e) {
        std::fprintf(stderr, "crew_flow: %s\n", e.what());
        return 1;
    }
    return 0;
}
