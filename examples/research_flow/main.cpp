// Runs offline: no LLM and no network; the builtin embedder and a SQLite memory in the default store.
//
// The research flow of the CrewAI memory guide ("With Flows"), in C++: gather_data stores its
// findings in the flow's built-in memory, write_report recalls what the memory knows about the
// subject (the new findings and an earlier note) and writes the report. Every flow has a memory
// rooted at /flow/<its name>, here /flow/researchflow.
//
//   research_flow                    runs the flow and prints the report
//   research_flow --flow-graph       prints the flow's graph (Graphviz DOT)
//   research_flow --flow-graph=json  prints its description, for `mneme flow-graph -`

#include <mneme/flows/flow.h>
#include <mneme/memory/memory.h>

#include <QCoreApplication>
#include <cstdio>

class ResearchFlow : public mneme::Flow
{
public:
    ResearchFlow() : Flow(QStringLiteral("ResearchFlow"))
    {
        start("gather_data", &ResearchFlow::gatherData);
        listen("write_report", "gather_data", &ResearchFlow::writeReport);
    }

    // Synchronous steps run on a worker thread, so the blocking memory calls are fine here.
    QString gatherData()
    {
        const QString findings = QStringLiteral("PostgreSQL handles 10k concurrent connections. MySQL caps at 5k.");
        remember(findings, scoped(QStringLiteral("/research/databases")));
        return findings;
    }

    QString writeReport(const QString &findings)
    {
        // Recall past research to provide context.
        QStringList context;
        for (const mneme::MemoryMatch &m : recall(QStringLiteral("database connections benchmark")))
            context << QStringLiteral("- ") + m.record.content;
        return QStringLiteral("Report:\nNew findings: %1\nPrevious context:\n%2").arg(findings, context.join(QLatin1Char('\n')));
    }

    static mneme::RememberOptions scoped(const QString &scope)
    {
        mneme::RememberOptions o;
        o.scope = scope;
        o.importance = 0.8;
        o.categories = QStringList{QStringLiteral("research")};
        return o;
    }
};

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    // A subclass runs as a FlowInstance: its run stops before the members its steps use are gone.
    mneme::FlowInstance<ResearchFlow> flow;
    if (flow.printGraphIfAsked(app.arguments()))
        return 0;
    try {
        // An earlier finding, as a previous run would have left it.
        flow.remember(QStringLiteral("Last quarter's benchmark: our PostgreSQL replica kept 8k connections open."),
                      ResearchFlow::scoped(QStringLiteral("/research/databases")));
        // kickoffAndWait runs an event loop until the flow is done: fine in a command-line program.
        // A GUI calls kickoff() and connects to flowFinished instead.
        const mneme::Json report = flow.kickoffAndWait();
        std::printf("%s\n", report.get<std::string>().c_str());
        std::printf("\nMemory of the flow (%s):\n%s\n", qPrintable(flow.memory()->rootScope()), qPrintable(flow.memory()->tree()));
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "research_flow: %s\n", e.what());
        return 1;
    }
}
