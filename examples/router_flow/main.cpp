// Runs offline: no LLM and no network. The state is saved to flows.db beside the default store after every step.
//
// A router with a retry loop: "draft" writes a first version, the router "review" sends it back
// ("needs_work") until it is good enough, "revise" improves it and goes back to review, and
// "publish" runs once review says "approved". After max_attempts the router gives up ("rejected").
// The state is a C++ struct (TypedFlow), saved after every step: give its id back to resume it.
//
//   router_flow                        runs a new review and prints how it went
//   router_flow --resume ID            resumes the saved state ID (a finished one starts a new round)
//   router_flow --flow-graph           prints the flow's graph (Graphviz DOT)
//   router_flow --flow-graph=json      prints its description, for `mneme flow-graph -`

#include <mneme/flows/sqlite_flow_persistence.h>
#include <mneme/flows/typed_flow.h>

#include <QCoreApplication>
#include <cstdio>

struct ReviewState
{
    QString id;
    QString topic = QStringLiteral("flows in C++");
    QString draft;
    int attempts = 0;
    int maxAttempts = 5;
    int qualityNeeded = 3;
    QStringList log;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ReviewState, id, topic, draft, attempts, maxAttempts, qualityNeeded, log)

class ReviewFlow : public mneme::TypedFlow<ReviewState>
{
public:
    explicit ReviewFlow(const mneme::FlowOptions &options) : TypedFlow(QStringLiteral("ReviewFlow"), options)
    {
        start("draft", &ReviewFlow::draft);
        router("review", or_("draft", "revise"), {"needs_work", "approved", "rejected"}, &ReviewFlow::review);
        listen("revise", "needs_work", &ReviewFlow::revise);
        listen("publish", "approved", &ReviewFlow::publish);
        listen("give_up", "rejected", &ReviewFlow::giveUp);
    }

private:
    QString draft()
    {
        updateState([](ReviewState &s) {
            s.attempts = 1;
            s.draft = QStringLiteral("Notes on %1 (version 1)").arg(s.topic);
            s.log << QStringLiteral("drafted version 1");
        });
        return state().draft;
    }

    // A router returns one of its labels. Here the "quality" is the number of versions so far; a
    // real review would ask an LLM or a crew (return its QFuture) and read the verdict.
    QString review()
    {
        const ReviewState s = state();
        if (s.attempts >= s.qualityNeeded)
            return QStringLiteral("approved");
        if (s.attempts >= s.maxAttempts)
            return QStringLiteral("rejected");
        return QStringLiteral("needs_work");
    }

    QString revise()
    {
        updateState([](ReviewState &s) {
            ++s.attempts;
            s.draft = QStringLiteral("Notes on %1 (version %2)").arg(s.topic).arg(s.attempts);
            s.log << QStringLiteral("revised to version %1").arg(s.attempts);
        });
        return state().draft;
    }

    QString publish()
    {
        updateState([](ReviewState &s) { s.log << QStringLiteral("published"); });
        return QStringLiteral("Published \"%1\" after %2 attempts").arg(state().draft).arg(state().attempts);
    }

    QString giveUp() { return QStringLiteral("Gave up after %1 attempts").arg(state().attempts); }
};

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    try {
        mneme::FlowOptions options;
        options.memory = false; // this flow remembers nothing beyond its state
        bool graphOnly = false;
        for (const QString &a : args)
            graphOnly = graphOnly || a.startsWith(QLatin1String("--flow-graph"));
        if (!graphOnly)                                                             // printing the graph creates no file
            options.persistence = std::make_shared<mneme::SqliteFlowPersistence>(); // flows.db beside the default store
        mneme::FlowInstance<ReviewFlow> flow(options);
        if (flow.printGraphIfAsked(args))
            return 0;

        mneme::Json inputs = mneme::Json::object();
        if (const qsizetype i = args.indexOf(QStringLiteral("--resume")); i > 0 && i + 1 < args.size())
            inputs["id"] = args.at(i + 1);
        inputs["qualityNeeded"] = 3; // inputs are merged into the state, checked against ReviewState
        QObject::connect(&flow, &mneme::Flow::routerLabelEmitted, [](const QString &router, const QString &label) {
            std::printf("  %s -> %s\n", qPrintable(router), qPrintable(label));
        });
        std::printf("Review %s:\n", qPrintable(flow.state().id));
        const mneme::Json result = flow.kickoffAndWait(inputs);
        std::printf("%s\n", result.get<std::string>().c_str());
        std::printf("Log: %s\n", qPrintable(flow.state().log.join(QStringLiteral("; "))));
        std::printf("Saved after every step; resume with: router_flow --resume %s\n", qPrintable(flow.state().id));
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "router_flow: %s\n", e.what());
        return 1;
    }
}
