// Records the replay cassettes the crew examples ship with. Each example runs once with
// MNEME_EXAMPLE_LLM set to the replay plugin in record mode, in front of a scripted model: an
// OpenAI-compatible server on loopback whose answers are written below. Every exchange the example
// makes (agent turns, tool calls, fact extraction, save analysis) lands in the cassette, so the
// example later replays offline and deterministically.
//
//   record-example-cassettes <folder of the example binaries> <examples source folder> [example...]
//
// (every example, or only those named)
// Re-run it after changing an example's prompts; to record a real model instead, run the example
// itself with MNEME_EXAMPLE_LLM='{"provider":"replay","config":{"mode":"record","cassette":"...","llm":"gpt-4o-mini"}}'.

#include "scripted_llm.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <cstdio>

using mneme::Json;
using mneme::test::ScriptedLlm;
using mneme::test::ScriptedReply;

namespace {

QString systemOf(const Json &body) { return ScriptedLlm::messageOf(body, "system"); }
QString userOf(const Json &body) { return ScriptedLlm::messageOf(body, "user"); }

QStringList toolResults(const Json &body)
{
    QStringList out;
    for (const Json &m : body["messages"])
        if (m.value("role", std::string()) == "tool")
            out << QString::fromStdString(m["content"].get<std::string>());
    return out;
}

ScriptedReply say(const QString &text) { return ScriptedLlm::completion(text, 180, 60); }

ScriptedReply json(const Json &value) { return ScriptedLlm::completion(QString::fromStdString(value.dump()), 240, 40); }

ScriptedReply calls(const QList<QPair<QString, Json>> &list)
{
    QList<QPair<QString, QString>> raw;
    for (const auto &[name, args] : list)
        raw << qMakePair(name, QString::fromStdString(args.dump()));
    return ScriptedLlm::toolCallsReply(raw, 200, 30);
}

// The bullet lines of the "Result:" part of an extraction blob, as facts.
Json bulletFacts(const QString &blob)
{
    Json facts = Json::array();
    const QString result = blob.section(QStringLiteral("\nResult: "), 1);
    for (QString line : result.split(QLatin1Char('\n'))) {
        line = line.trimmed();
        if (line.startsWith(QLatin1String("- ")))
            facts.push_back(line.mid(2).toStdString());
    }
    return facts;
}

// The tool results of the request's current turn: after its last user message.
QStringList turnToolResults(const Json &body)
{
    QStringList out;
    for (const Json &m : body["messages"]) {
        if (m.value("role", std::string()) == "user")
            out.clear();
        else if (m.value("role", std::string()) == "tool")
            out << QString::fromStdString(m["content"].get<std::string>());
    }
    return out;
}

// What the chat example's conversation says, as facts, each with the words that give it away.
const QList<QPair<QString, QString>> kChatFacts = {
    {QStringLiteral("I'm Logan"), QStringLiteral("Logan is planning a trip to Lisbon in May with his sister Ana.")},
    {QStringLiteral("1800 EUR"), QStringLiteral("Logan and Ana have a budget of 1800 EUR for the two of them.")},
    {QStringLiteral("1160 EUR"), QStringLiteral("After two flights of 320 EUR, 1160 EUR are left for the rest of the trip.")},
    {QStringLiteral("vegetarian"), QStringLiteral("Ana is vegetarian.")},
    {QStringLiteral("eat fish"), QStringLiteral("Logan does not eat fish.")},
    {QStringLiteral("walking"), QStringLiteral("Logan and Ana prefer walking over taxis.")},
};

// The facts of kChatFacts that `text` gives away and `known` does not hold yet.
Json chatFacts(const QString &text, const QString &known = QString())
{
    Json facts = Json::array();
    for (const auto &[cue, fact] : kChatFacts)
        if (text.contains(cue) && !known.contains(fact))
            facts.push_back(fact.toStdString());
    return facts;
}

// The chat example's assistant, answering the last user message with what the request holds.
ScriptedReply tripAssistant(const Json &body)
{
    const QString user = ScriptedLlm::messageOf(body, "user", true);
    const QString all = QString::fromStdString(body["messages"].dump());
    if (user.contains(QLatin1String("I'm Logan")))
        return say(QStringLiteral("Welcome, Logan! Lisbon in May is warm and not yet crowded. Tell me what you and Ana enjoy."));
    if (user.contains(QLatin1String("budget of 1800"))) {
        const QStringList results = turnToolResults(body);
        if (results.isEmpty())
            return calls({{"calculator", {{"expression", "1800 - 2 * 320"}}}});
        return say(QStringLiteral("That leaves %1 EUR for everything else, about 290 EUR a day over four days.").arg(results.first()));
    }
    if (user.contains(QLatin1String("vegetarian")))
        return say(QStringLiteral("Try Principe Real: Ao 26 is fully vegetarian, and the stalls of Time Out Market have plenty without fish."));
    if (user.contains(QLatin1String("walking")))
        return say(QStringLiteral("Day one on foot: Alfama in the morning, the castle at noon, then down to the river for sunset at "
                                  "Praca do Comercio."));
    if (user.contains(QLatin1String("left of our budget")))
        return say(all.contains(QLatin1String("1160")) ? QStringLiteral("You have 1160 EUR left for the rest of the trip, after the two flights of 320 EUR.")
                                                       : QStringLiteral("I no longer know; could you tell me again?"));
    QStringList known = {QStringLiteral("you are Logan, travelling to Lisbon in May with your sister Ana")};
    if (all.contains(QLatin1String("vegetarian")))
        known << QStringLiteral("Ana is vegetarian");
    if (all.contains(QLatin1String("eat fish")))
        known << QStringLiteral("you do not eat fish");
    if (all.contains(QLatin1String("walking")))
        known << QStringLiteral("you prefer walking");
    if (all.contains(QLatin1String("1160")))
        known << QStringLiteral("1160 EUR are left after the flights");
    return say(QStringLiteral("Here is what I know: %1.").arg(known.join(QStringLiteral("; "))));
}

// The scripted model: what a sensible model would answer to each example's requests.
ScriptedReply answer(const Json &body)
{
    const QString step = ScriptedLlm::stepOf(body);
    const QString system = systemOf(body);
    const QString user = userOf(body);
    const QStringList results = toolResults(body);

    if (step == QLatin1String("chat_facts")) { // the chat example's fact extraction block
        const QString existing = user.section(QStringLiteral("</existing_facts>"), 0, 0);
        return json({{"facts", chatFacts(user.section(QStringLiteral("<conversation>"), 1), existing)}});
    }
    if (step == QLatin1String("extracted_memories") && user.contains(QLatin1String("Text:\nuser: "))) // its long-term block
        return json({{"memories", chatFacts(user)}});
    if (system.contains(QLatin1String("You are Trip Assistant.")))
        return tripAssistant(body);
    if (step == QLatin1String("extracted_memories")) {
        const QString blob = user.section(QStringLiteral("Text:\n"), 1);
        if (blob.contains(QLatin1String("Agent: Alice's Assistant")))
            return json({{"memories", {"Alice prefers meetings before 11am.", "Alice is vegetarian.", "Alice is away from 3 to 7 March."}}});
        if (blob.contains(QLatin1String("Agent: Researcher")))
            return json({{"memories", bulletFacts(blob)}});
        return json({{"memories", Json::array()}}); // briefs and summaries restate what is stored
    }
    if (step == QLatin1String("memory_analysis")) {
        const QString note = user.section(QStringLiteral("Note:\n"), 1).section(QLatin1Char('\n'), 0, 0);
        if (note.startsWith(QLatin1String("Alice")))
            return json({{"scope", "/preferences"}, {"categories", {"preference"}}, {"importance", 0.7}, {"metadata", {{"entities", {"Alice"}}, {"dates", Json::array()}, {"topics", {"scheduling"}}}}});
        return json({{"scope", "/heat-pumps"}, {"categories", {"energy", "costs"}}, {"importance", 0.7}, {"metadata", {{"entities", Json::array()}, {"dates", Json::array()}, {"topics", {"heat pumps"}}}}});
    }
    if (step == QLatin1String("exploration"))
        return json({{"findings", "The memories found answer what they can."}, {"missing", ""}, {"queries", Json::array()}});
    if (step == QLatin1String("consolidation_plan"))
        return json({{"actions", Json::array()}, {"insert_new", true}});

    // Agent turns, told apart by the role in the system prompt.
    if (system.contains(QLatin1String("You are Researcher."))) {
        if (user.startsWith(QLatin1String("Research residential heat pumps"))) {
            if (results.isEmpty())
                return calls({{"calculator", {{"expression", "0.30 / 3.2"}}}, {"calculator", {{"expression", "0.12 / 0.9"}}}});
            return say(QStringLiteral(
                "- Air-source heat pumps reach a seasonal COP of about 3.2 in a mild climate.\n"
                "- At 0.30 EUR per kWh of electricity, heat from a heat pump with a COP of 3.2 costs about 0.094 EUR per kWh.\n"
                "- A gas boiler at 90% efficiency with gas at 0.12 EUR per kWh delivers heat at about 0.133 EUR per kWh.\n"
                "- A typical 8 kW air-source heat pump costs 8,000 to 12,000 EUR installed."));
        }
        if (results.isEmpty())
            return calls({{"calculator", {{"expression", "12000 * (0.12 / 0.9 - 0.30 / 3.2)"}}}});
        const bool remembers = user.contains(QLatin1String("0.094 EUR per kWh"));
        return say(remembers ? QStringLiteral(
                       "- From the team's earlier research: heat from a heat pump costs about 0.094 EUR per kWh, "
                       "against about 0.133 EUR per kWh from a gas boiler.\n"
                       "- A home that needs 12,000 kWh of heat a year saves about 475 EUR a year with the heat pump.\n"
                       "- At 8,000 to 12,000 EUR installed, the heat pump pays for itself in 17 to 25 years on "
                       "running costs alone, sooner with subsidies.")
                             : QStringLiteral("- A home that needs 12,000 kWh of heat a year saves about 475 EUR a year."));
    }
    if (system.contains(QLatin1String("You are Writer.")))
        return say(user.contains(QLatin1String("475 EUR"))
                       ? QStringLiteral("A heat pump makes heat for about 0.094 EUR per kWh, a gas boiler for about 0.133 EUR. "
                                        "For a typical home that is about 475 EUR saved every year. With 8,000 to 12,000 EUR "
                                        "to install, it pays back in 17 to 25 years, faster with subsidies.")
                       : QStringLiteral("A modern air-source heat pump turns each kWh of electricity into about 3.2 kWh of "
                                        "heat. That makes its heat cheaper than a gas boiler's: about 0.094 EUR per kWh "
                                        "against 0.133 EUR. Expect 8,000 to 12,000 EUR for an installed 8 kW unit."));
    if (system.contains(QLatin1String("You are Crew Manager."))) {
        if (results.isEmpty())
            return calls({{"delegate_work_to_coworker",
                           {{"task", "Describe who will buy a solar-powered e-bike charger and why, in three short points."},
                            {"context", "We launch a solar-powered e-bike charger next month."},
                            {"coworker", "Market Analyst"}}}});
        if (results.size() == 1)
            return calls({{"delegate_work_to_coworker",
                           {{"task", "Write one paragraph of launch copy for the solar-powered e-bike charger."},
                            {"context", ("Who buys it:\n" + results[0]).toStdString()},
                            {"coworker", "Copywriter"}}}});
        return say(results[1] + QStringLiteral("\nTarget customer: commuters who ride 10 to 30 km a day and park outdoors."));
    }
    if (system.contains(QLatin1String("You are Market Analyst.")))
        return say(QStringLiteral("- Commuters who ride 10 to 30 km a day and park outdoors, far from a socket.\n"
                                  "- Bike tourers who camp away from mains power.\n"
                                  "- Riders who want their charging to cost nothing."));
    if (system.contains(QLatin1String("You are Copywriter.")))
        return say(QStringLiteral("Park it, forget it, ride on. The new solar charger tops up your e-bike while it stands "
                                  "outside your office or your tent, so the socket hunt is over and every kilometre is "
                                  "powered by the sun, free."));
    if (system.contains(QLatin1String("You are Product Researcher.")))
        return say(QStringLiteral("- A charge that happens while the bike is parked at work.\n"
                                  "- No cable to carry and no socket to find.\n"
                                  "- A charger that survives rain and theft attempts."));
    if (system.contains(QLatin1String("You are Tagline Writer.")))
        return say(QStringLiteral("Charge on the ride, not at the wall."));
    if (system.contains(QLatin1String("You are Alice's Assistant.")))
        return say(QStringLiteral("Noted: meetings before 11am, vegetarian meals, and no plans from 3 to 7 March."));
    if (system.contains(QLatin1String("You are Onboarding Guide.")))
        return say(QStringLiteral("In your first week you get a laptop and a mentor. The team never schedules meetings on "
                                  "Fridays."));
    std::fprintf(stderr, "record-example-cassettes: no scripted answer for step %s:\n%s\n", qPrintable(step),
                 qPrintable(user.left(300)));
    return ScriptedReply::json(R"({"error":{"message":"no scripted answer"}})", 500);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 3) {
        std::fprintf(stderr, "usage: record-example-cassettes <folder of the example binaries> <examples source folder> [example...]\n");
        return 2;
    }
    QStringList examples = {QStringLiteral("research_crew"), QStringLiteral("hierarchical_crew"), QStringLiteral("private_memory"),
                            QStringLiteral("crew_flow"), QStringLiteral("chat_agent")};
    if (args.size() > 3)
        examples = args.mid(3);
    ScriptedLlm model;
    model.setFallback(answer);
    const Json recorded = model.config(Json{{"model", "scripted-model"}});

    int failures = 0;
    for (const QString &example : examples) {
        const QString cassette = QDir(args[2]).filePath(example + QLatin1Char('/') + example + QStringLiteral(".jsonl"));
        QFile::remove(cassette); // recording appends
        const Json spec = {{"provider", "replay"}, {"config", {{"mode", "record"}, {"cassette", cassette.toStdString()}, {"llm", recorded}}}};
        QProcess run;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MNEME_EXAMPLE_LLM"), QString::fromStdString(spec.dump()));
        run.setProcessEnvironment(env);
        run.setProcessChannelMode(QProcess::ForwardedChannels);
        run.start(QDir(args[1]).filePath(example), {});
        if (!run.waitForFinished(120000) || run.exitCode() != 0) {
            std::fprintf(stderr, "record-example-cassettes: %s failed\n", qPrintable(example));
            ++failures;
            continue;
        }
        std::printf("recorded %s\n", qPrintable(cassette));
    }
    return failures == 0 ? 0 : 1;
}
