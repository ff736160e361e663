// Test helper: flow_runner <db path> <mode> [flow id] [iterations]
// Runs the flow "Counter" with its state saved to the SQLite flow-state store at <db path> after
// every step. Steps: "count" (start: counter += 1, appends "count" to "log"), then the router
// "check" ("again" while the counter is below the target, else "done"), "again" loops back to
// "count"... through the conditional start. Prints one JSON line {"id", "state", "result"} when the
// run is over. Modes:
//   crash        prints {"id"} first, then exits with status 3 from inside "check", after "count"
//                was saved: a process killed in the middle of a flow.
//   resume ID    kickoff with the inputs {"id": ID}: continues from the state saved last.
//   fork ID      kickoff with KickoffOptions::restoreFrom = ID: a copy under a new id.
//   loop N       a fresh state, "count" runs N times (for concurrent writers).

#include <mneme/flows/flow.h>
#include <mneme/flows/sqlite_flow_persistence.h>

#include <QCoreApplication>
#include <cstdio>
#include <cstdlib>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 3) {
        std::fprintf(stderr, "usage: flow_runner <db path> crash|resume ID|fork ID|loop N\n");
        return 2;
    }
    const QString mode = args.at(2);
    try {
        FlowOptions options;
        options.memory = false;
        options.persistence = std::make_shared<SqliteFlowPersistence>(args.at(1));
        Flow flow(QStringLiteral("Counter"), options);
        const int target = mode == QLatin1String("loop") ? args.value(3).toInt() : 1;
        flow.start("count", "again", [&flow]() {
            int counter = 0;
            flow.updateState([&counter](Json &s) {
                counter = s.value("counter", 0) + 1;
                s["counter"] = counter;
                s["log"].push_back("count");
            });
            return counter;
        });
        flow.router("check", "count", {"again", "done"}, [&flow, &mode, target](int counter) {
            if (mode == QLatin1String("crash"))
                std::_Exit(3);
            flow.updateState([](Json &s) { s["log"].push_back("check"); });
            return counter < target ? QStringLiteral("again") : QStringLiteral("done");
        });

        Json inputs = Json::object();
        KickoffOptions kickoff;
        if (mode == QLatin1String("resume"))
            inputs["id"] = args.value(3);
        else if (mode == QLatin1String("fork"))
            kickoff.restoreFrom = args.value(3);
        if (mode == QLatin1String("crash")) {
            std::printf("%s\n", Json{{"id", flow.stateId()}}.dump().c_str());
            std::fflush(stdout);
        }
        const Json result = flow.kickoffAndWait(inputs, kickoff);
        std::printf("%s\n", Json{{"id", flow.stateId()}, {"state", flow.stateJson()}, {"result", result}}.dump().c_str());
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "flow_runner: %s\n", e.what());
        return 1;
    }
}
