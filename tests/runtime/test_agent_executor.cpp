// AgentExecutor, the agent's tool-calling loop: native tool calls (single, parallel, failing, unknown,
// invalid, repeated), the forced final answer at maxIterations, token usage, the ReAct text protocol,
// the event loop staying free during a run, cancellation, and LLM failures. The LLM is the real
// `openai` plugin talking to a scripted server on loopback; for the ReAct path it is wrapped so it
// reports no native tool support.

#include "scripted_llm.h"
#include <mneme/core/error.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/function_tool.h>

#include <QPromise>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>
#include <atomic>
#include <map>
#include <stdexcept>

using namespace mneme;
using mneme::test::ScriptedLlm;
using mneme::test::ScriptedReply;


namespace {

const Json kKeySchema = {{"type", "object"},
                         {"properties", {{"key", {{"type", "string"}}}}},
                         {"required", {"key"}}};

ScriptedReply toolCalls(const QList<QPair<QString, QString>> &calls, int prompt = 11, int completion = 7)
{
    return ScriptedLlm::toolCallsReply(calls, prompt, completion);
}

ScriptedReply text(const QString &content, int prompt = 11, int completion = 7)
{
    return ScriptedLlm::completion(content, prompt, completion);
}

// Answers the n-th request with the n-th reply (the last one again after that).
ScriptedLlm::Responder sequence(QList<ScriptedReply> replies)
{
    auto next = std::make_shared<std::atomic_int>(0);
    return [replies, next](const Json &) { return replies[std::min<qsizetype>(next->fetch_add(1), replies.size() - 1)]; };
}

// The openai provider minus native tools: drives the ReAct path through the same server.
class NoToolsProvider : public LlmProvider
{
public:
    explicit NoToolsProvider(std::shared_ptr<LlmProvider> inner) : m_inner(std::move(inner)) {}
    QString id() const override { return m_inner->id(); }
    Capabilities capabilities() const override
    {
        Capabilities c = m_inner->capabilities();
        c.setFlag(Capability::Tools, false);
        c.setFlag(Capability::ParallelTools, false);
        return c;
    }
    QFuture<ChatResponse> chat(const ChatRequest &request) override { return m_inner->chat(request); }

private:
    std::shared_ptr<LlmProvider> m_inner;
};

// "lookup": answers "value-of-<key>" and counts its calls.
std::shared_ptr<Tool> lookupTool(std::shared_ptr<std::atomic_int> calls = std::make_shared<std::atomic_int>(0))
{
    return std::make_shared<FunctionTool>(QStringLiteral("lookup"), QStringLiteral("Looks a key up."), kKeySchema,
                                          FunctionTool::SyncFunction([calls](const Json &args) {
                                              ++*calls;
                                              return QStringLiteral("value-of-") + QString::fromStdString(args["key"].get<std::string>());
                                          }));
}

std::shared_ptr<Tool> explodingTool()
{
    return std::make_shared<FunctionTool>(QStringLiteral("explode"), QStringLiteral("Always fails."), kKeySchema,
                                          FunctionTool::SyncFunction([](const Json &) -> QString {
                                              throw std::runtime_error("boom: the fuse was lit");
                                          }));
}

AgentResult await(QFuture<AgentResult> future)
{
    if (!QTest::qWaitFor([&] { return future.isFinished(); }, 20000))
        throw std::runtime_error("the agent run did not finish");
    return future.result();
}

QStringList roles(const Json &request)
{
    QStringList r;
    for (const Json &m : request["messages"])
        r << QString::fromStdString(m["role"].get<std::string>());
    return r;
}

QString contentOf(const Json &message)
{
    return message.contains("content") && message["content"].is_string()
             ? QString::fromStdString(message["content"].get<std::string>())
             : QString();
}

const std::vector<ChatMessage> kAsk = {ChatMessage::system(QStringLiteral("You are a careful assistant.")),
                                       ChatMessage::user(QStringLiteral("What is x?"))};

} // namespace

class TestAgentExecutor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void singleToolCallThenFinal();
    void parallelToolCallsKeepReplyOrder();
    void toolProblemsGoBackToTheModel_data();
    void toolProblemsGoBackToTheModel();
    void functionToolValidatesBeforeCalling();
    void repeatedIdenticalCallIsNotRun();
    void maxIterationsForcesFinalAnswer();
    void tokenUsageIsSummed();
    void toolTimeoutAbandonsTheTool();
    void parseReact_data();
    void parseReact();
    void reactLoop();
    void eventLoopRunsDuringRun();
    void cancelWhileToolRuns();
    void cancelWhileLlmAnswers();
    void llmFailureFailsTheFuture_data();
    void llmFailureFailsTheFuture();
};

void TestAgentExecutor::singleToolCallThenFinal()
{
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), sequence({toolCalls({{"lookup", R"({"key":"x"})"}}), text(QStringLiteral("x is value-of-x"))}));
    AgentExecutor executor(llm.provider());
    QSignalSpy iterations(&executor, &AgentExecutor::iterationStarted);
    QSignalSpy started(&executor, &AgentExecutor::toolStarted);
    QSignalSpy finished(&executor, &AgentExecutor::toolFinished);

    const AgentResult r = await(executor.run(kAsk, {lookupTool()}));

    QCOMPARE(r.finalAnswer, QStringLiteral("x is value-of-x"));
    QCOMPARE(r.iterations, 2);
    QVERIFY(!r.forcedFinal);
    QCOMPARE(r.toolCalls.size(), size_t(1));
    QCOMPARE(r.toolCalls[0].name, QStringLiteral("lookup"));
    QCOMPARE(r.toolCalls[0].output, QStringLiteral("value-of-x"));
    QVERIFY(!r.toolCalls[0].isError);
    QCOMPARE(iterations.size(), 2);
    QCOMPARE(started.size(), 1);
    QCOMPARE(started[0][0].toString(), QStringLiteral("lookup"));
    QCOMPARE(Json::parse(started[0][1].toString().toStdString()), Json({{"key", "x"}}));
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished[0][1].toString(), QStringLiteral("value-of-x"));
    QCOMPARE(finished[0][2].toBool(), false);

    const QList<Json> requests = llm.requests(QStringLiteral("lookup"));
    QCOMPARE(requests.size(), 2);
    QCOMPARE(requests[0]["tools"][0]["function"]["name"], Json("lookup"));
    QCOMPARE(roles(requests[1]), (QStringList{"system", "user", "assistant", "tool"}));
    const Json toolMessage = requests[1]["messages"][3];
    QCOMPARE(toolMessage["tool_call_id"], Json("call_1"));
    QCOMPARE(contentOf(toolMessage), QStringLiteral("value-of-x"));
}

void TestAgentExecutor::parallelToolCallsKeepReplyOrder()
{
    // An asynchronous tool whose answers the test releases: both calls must be under way at once, and
    // their results go back in the reply's order even when the second finishes first.
    std::map<std::string, std::shared_ptr<QPromise<QString>>> pending;
    auto fetch = std::make_shared<FunctionTool>(QStringLiteral("fetch"), QStringLiteral("Fetches a key."), kKeySchema,
                                                FunctionTool::AsyncFunction([&pending](const Json &args) {
                                                    auto p = std::make_shared<QPromise<QString>>();
                                                    p->start();
                                                    pending[args["key"].get<std::string>()] = p;
                                                    return p->future();
                                                }));
    ScriptedLlm llm;
    llm.on(QStringLiteral("fetch"), sequence({toolCalls({{"fetch", R"({"key":"a"})"}, {"fetch", R"({"key":"b"})"}}),
                                              text(QStringLiteral("both fetched"))}));
    AgentExecutor executor(llm.provider());
    QSignalSpy finished(&executor, &AgentExecutor::toolFinished);

    QFuture<AgentResult> future = executor.run(kAsk, {fetch});
    QVERIFY(QTest::qWaitFor([&] { return pending.size() == 2; }, 20000));
    pending["b"]->addResult(QStringLiteral("B"));
    pending["b"]->finish();
    QVERIFY(QTest::qWaitFor([&] { return finished.size() == 1; }, 20000));
    pending["a"]->addResult(QStringLiteral("A"));
    pending["a"]->finish();
    const AgentResult r = await(future);

    QCOMPARE(finished[0][1].toString(), QStringLiteral("B"));
    QCOMPARE(finished[1][1].toString(), QStringLiteral("A"));
    QCOMPARE(r.finalAnswer, QStringLiteral("both fetched"));
    QCOMPARE(r.toolCalls.size(), size_t(2));
    QCOMPARE(r.toolCalls[0].output, QStringLiteral("A"));
    QCOMPARE(r.toolCalls[1].output, QStringLiteral("B"));
    const Json second = llm.requests(QStringLiteral("fetch")).at(1);
    QCOMPARE(roles(second), (QStringList{"system", "user", "assistant", "tool", "tool"}));
    QCOMPARE(second["messages"][3]["tool_call_id"], Json("call_1"));
    QCOMPARE(contentOf(second["messages"][3]), QStringLiteral("A"));
    QCOMPARE(second["messages"][4]["tool_call_id"], Json("call_2"));
    QCOMPARE(contentOf(second["messages"][4]), QStringLiteral("B"));
}

void TestAgentExecutor::toolProblemsGoBackToTheModel_data()
{
    QTest::addColumn<QString>("tool");
    QTest::addColumn<QString>("arguments");
    QTest::addColumn<QString>("expected");

    QTest::newRow("unknown tool") << "search_web"
                                  << R"({"key":"x"})"
                                  << "The tools you can call are: lookup, explode.";
    QTest::newRow("tool throws") << "explode"
                                 << R"({"key":"x"})"
                                 << "boom: the fuse was lit";
    QTest::newRow("argument of the wrong type") << "lookup"
                                                << R"({"key":5})"
                                                << "do not match its schema";
    QTest::newRow("required argument missing") << "lookup"
                                               << R"({"other":"x"})"
                                               << "do not match its schema";
    QTest::newRow("arguments not JSON") << "lookup"
                                        << R"({"key": "x)"
                                        << "were not valid JSON";
}

void TestAgentExecutor::toolProblemsGoBackToTheModel()
{
    QFETCH(QString, tool);
    QFETCH(QString, arguments);
    QFETCH(QString, expected);

    auto lookups = std::make_shared<std::atomic_int>(0);
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), sequence({toolCalls({{tool, arguments}}), text(QStringLiteral("sorry"))}));
    AgentExecutor executor(llm.provider());
    QSignalSpy finished(&executor, &AgentExecutor::toolFinished);

    const AgentResult r = await(executor.run(kAsk, {lookupTool(lookups), explodingTool()}));

    QCOMPARE(r.finalAnswer, QStringLiteral("sorry"));
    QCOMPARE(r.toolCalls.size(), size_t(1));
    QVERIFY(r.toolCalls[0].isError);
    QVERIFY2(r.toolCalls[0].output.contains(expected), qPrintable(r.toolCalls[0].output));
    QCOMPARE(lookups->load(), 0);
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished[0][2].toBool(), true);
    const Json second = llm.requests(QStringLiteral("lookup")).at(1);
    QCOMPARE(second["messages"][3]["role"], Json("tool"));
    QVERIFY(contentOf(second["messages"][3]).contains(expected));
}

void TestAgentExecutor::functionToolValidatesBeforeCalling()
{
    auto calls = std::make_shared<std::atomic_int>(0);
    auto tool = lookupTool(calls);
    QFuture<QString> bad = tool->run(Json{{"key", true}});
    QVERIFY(QTest::qWaitFor([&] { return bad.isFinished(); }, 5000));
    try {
        bad.result();
        QFAIL("invalid arguments must fail the future");
    } catch (const Error &e) {
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QStringLiteral("$.key")), qPrintable(e.message()));
    }
    QCOMPARE(calls->load(), 0);

    QFuture<QString> good = tool->run(Json{{"key", "k"}});
    QVERIFY(QTest::qWaitFor([&] { return good.isFinished(); }, 5000));
    QCOMPARE(good.result(), QStringLiteral("value-of-k"));
    QCOMPARE(calls->load(), 1);
}

void TestAgentExecutor::repeatedIdenticalCallIsNotRun()
{
    auto lookups = std::make_shared<std::atomic_int>(0);
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), sequence({toolCalls({{"lookup", R"({"key":"x"})"}}),
                                               toolCalls({{"lookup", R"({ "key" : "x" })"}}),
                                               toolCalls({{"lookup", R"({"key":"y"})"}}),
                                               text(QStringLiteral("done"))}));
    AgentExecutor executor(llm.provider());

    const AgentResult r = await(executor.run(kAsk, {lookupTool(lookups)}));

    QCOMPARE(r.finalAnswer, QStringLiteral("done"));
    QCOMPARE(r.toolCalls.size(), size_t(3));
    QVERIFY(!r.toolCalls[0].isError);
    QVERIFY(r.toolCalls[1].isError);
    QVERIFY2(r.toolCalls[1].output.contains(QStringLiteral("already called lookup")), qPrintable(r.toolCalls[1].output));
    QCOMPARE(r.toolCalls[2].output, QStringLiteral("value-of-y"));
    QCOMPARE(lookups->load(), 2);
}

void TestAgentExecutor::maxIterationsForcesFinalAnswer()
{
    // The model never stops calling tools (with new arguments each time, so no call is a repeat).
    auto n = std::make_shared<std::atomic_int>(0);
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), [n](const Json &) {
        return toolCalls({{"lookup", QStringLiteral(R"({"key":"k%1"})").arg(n->fetch_add(1))}});
    });
    llm.onText(QStringLiteral("(none)"), QStringLiteral("best effort answer"));
    AgentExecutor executor(llm.provider());
    AgentOptions options;
    options.maxIterations = 3;

    const AgentResult r = await(executor.run(kAsk, {lookupTool()}, options));

    QVERIFY(r.forcedFinal);
    QCOMPARE(r.finalAnswer, QStringLiteral("best effort answer"));
    QCOMPARE(r.iterations, 4);
    QCOMPARE(r.toolCalls.size(), size_t(3));
    QCOMPARE(llm.calls(QStringLiteral("lookup")), 3);
    QCOMPARE(llm.calls(QStringLiteral("(none)")), 1);
    const Json last = llm.requests(QStringLiteral("(none)")).back();
    QVERIFY(!last.contains("tools"));
    QCOMPARE(last["messages"].back()["role"], Json("user"));
    QVERIFY(contentOf(last["messages"].back()).contains(QStringLiteral("Do not call any more tools")));
}

void TestAgentExecutor::tokenUsageIsSummed()
{
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), sequence({toolCalls({{"lookup", R"({"key":"x"})"}}, 100, 20),
                                               toolCalls({{"lookup", R"({"key":"y"})"}}, 150, 30),
                                               text(QStringLiteral("done"), 200, 5)}));
    AgentExecutor executor(llm.provider());
    QSignalSpy completed(&executor, &AgentExecutor::llmCallCompleted);

    const AgentResult r = await(executor.run(kAsk, {lookupTool()}));

    QCOMPARE(r.usage.promptTokens, 450);
    QCOMPARE(r.usage.completionTokens, 55);
    QCOMPARE(r.usage.totalTokens(), 505);
    QCOMPARE(completed.size(), 3);
    QCOMPARE(completed[1][0].toInt(), 2);
    QCOMPARE(completed[1][1].toInt(), 150);
    QCOMPARE(completed[1][2].toInt(), 30);
}

void TestAgentExecutor::toolTimeoutAbandonsTheTool()
{
    // "hang" never answers on its own; "lookup" in the same reply answers normally.
    std::shared_ptr<QPromise<QString>> pending;
    auto hang = std::make_shared<FunctionTool>(QStringLiteral("hang"), QStringLiteral("Never answers."), kKeySchema,
                                               FunctionTool::AsyncFunction([&pending](const Json &) {
                                                   pending = std::make_shared<QPromise<QString>>();
                                                   pending->start();
                                                   return pending->future();
                                               }));
    ScriptedLlm llm;
    llm.on(QStringLiteral("hang"), sequence({toolCalls({{"hang", R"({"key":"x"})"}, {"lookup", R"({"key":"y"})"}}),
                                             text(QStringLiteral("gave up on hang"))}));
    AgentExecutor executor(llm.provider());
    AgentOptions options;
    options.toolTimeoutMs = 50;

    const AgentResult r = await(executor.run(kAsk, {hang, lookupTool()}, options));

    QCOMPARE(r.finalAnswer, QStringLiteral("gave up on hang"));
    QCOMPARE(r.toolCalls.size(), size_t(2));
    QVERIFY(r.toolCalls[0].isError);
    QVERIFY2(r.toolCalls[0].output.contains(QStringLiteral("did not answer within 50 ms")), qPrintable(r.toolCalls[0].output));
    QCOMPARE(r.toolCalls[1].output, QStringLiteral("value-of-y"));
    QVERIFY(pending && pending->isCanceled());
}

void TestAgentExecutor::parseReact_data()
{
    QTest::addColumn<QString>("reply");
    QTest::addColumn<bool>("isFinal");
    QTest::addColumn<QString>("answerOrTool");
    QTest::addColumn<QString>("arguments"); // JSON, or "" when the input is expected to be rejected

    QTest::newRow("clean action") << "Thought: I need x.\nAction: lookup\nAction Input: {\"key\": \"x\"}" << false
                                  << "lookup"
                                  << R"({"key":"x"})";
    QTest::newRow("fenced input with chatter")
        << "Thought: let me check\nAction: `lookup`\nAction Input: here you go:\n```json\n{\"key\": \"y\"}\n```\nhope that helps"
        << false << "lookup"
        << R"({"key":"y"})";
    QTest::newRow("markdown bold") << "**Thought:** hmm\n**Action:** lookup\n**Action Input:** {\"key\": \"z\"}" << false
                                   << "lookup"
                                   << R"({"key":"z"})";
    QTest::newRow("invented observation dropped")
        << "Action: lookup\nAction Input: {\"key\": \"x\"}\nObservation: value-of-x\nFinal Answer: made up" << false
        << "lookup"
        << R"({"key":"x"})";
    QTest::newRow("call syntax name") << "Action: lookup()\nAction Input: {}" << false << "lookup"
                                      << "{}";
    QTest::newRow("no input line") << "Thought: go\nAction: lookup" << false << "lookup"
                                   << "{}";
    QTest::newRow("input not JSON") << "Action: lookup\nAction Input: key=x" << false << "lookup"
                                    << "";
    QTest::newRow("input an array") << "Action: lookup\nAction Input: [1, 2]" << false << "lookup"
                                    << "";
    QTest::newRow("final answer") << "Thought: I know it now.\nFinal Answer: x is 42\nand more." << true
                                  << "x is 42\nand more."
                                  << "";
    QTest::newRow("final answer lower case") << "final answer:   done  " << true << "done"
                                             << "";
    QTest::newRow("no markers at all") << "  Just the answer, plainly.  " << true << "Just the answer, plainly."
                                       << "";
    QTest::newRow("think block dropped") << "<think>Action: lookup</think>Final Answer: ok" << true << "ok"
                                         << "";
    QTest::newRow("final before action") << "Final Answer: 7\nAction: lookup" << true << "7\nAction: lookup"
                                         << "";
}

void TestAgentExecutor::parseReact()
{
    QFETCH(QString, reply);
    QFETCH(bool, isFinal);
    QFETCH(QString, answerOrTool);
    QFETCH(QString, arguments);

    const AgentExecutor::ReactStep step = AgentExecutor::parseReact(reply);
    QCOMPARE(step.isFinal, isFinal);
    if (isFinal) {
        QCOMPARE(step.finalAnswer, answerOrTool);
        return;
    }
    QCOMPARE(step.tool, answerOrTool);
    if (arguments.isEmpty()) {
        QVERIFY(step.arguments.is_null());
        QVERIFY(step.inputProblem.contains(QStringLiteral("JSON object")));
    } else {
        QCOMPARE(step.arguments, Json::parse(arguments.toStdString()));
        QVERIFY(step.inputProblem.isEmpty());
    }
}

void TestAgentExecutor::reactLoop()
{
    ScriptedLlm llm;
    llm.on(QStringLiteral("(none)"),
           sequence({text(QStringLiteral("Thought: I should look x up.\nAction: lookup\nAction Input: {\"key\": \"x\"}")),
                     text(QStringLiteral("Thought: try a tool that is not there\nAction: guess\nAction Input: {}")),
                     text(QStringLiteral("Thought: I have it.\nFinal Answer: x is value-of-x"))}));
    AgentExecutor executor(std::make_shared<NoToolsProvider>(llm.provider()));

    const AgentResult r = await(executor.run(kAsk, {lookupTool()}));

    QCOMPARE(r.finalAnswer, QStringLiteral("x is value-of-x"));
    QCOMPARE(r.iterations, 3);
    QCOMPARE(r.toolCalls.size(), size_t(2));
    QCOMPARE(r.toolCalls[0].output, QStringLiteral("value-of-x"));
    QVERIFY(r.toolCalls[1].isError);
    const QList<Json> requests = llm.requests(QStringLiteral("(none)"));
    QCOMPARE(requests.size(), 3);
    for (const Json &request : requests) {
        QVERIFY(!request.contains("tools"));
        QCOMPARE(request["stop"], Json::array({"\nObservation:"}));
    }
    // The tools and the format are described in the (existing) system message.
    QCOMPARE(roles(requests[0]), (QStringList{"system", "user"}));
    const QString system = contentOf(requests[0]["messages"][0]);
    QVERIFY(system.startsWith(QStringLiteral("You are a careful assistant.")));
    QVERIFY(system.contains(QStringLiteral("- lookup: Looks a key up.")));
    QVERIFY(system.contains(QStringLiteral("Action Input:")));
    QVERIFY(system.contains(QStringLiteral("Final Answer:")));
    QCOMPARE(roles(requests[2]), (QStringList{"system", "user", "assistant", "user", "assistant", "user"}));
    QCOMPARE(contentOf(requests[2]["messages"][3]), QStringLiteral("Observation: value-of-x"));
    QVERIFY(contentOf(requests[2]["messages"][5]).startsWith(QStringLiteral("Observation: Error: there is no tool named \"guess\"")));
}

void TestAgentExecutor::eventLoopRunsDuringRun()
{
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), [](const Json &) {
        ScriptedReply r = text(QStringLiteral("slow answer"));
        r.delayMs = 300;
        return r;
    });
    AgentExecutor executor(llm.provider());
    QFuture<AgentResult> future = executor.run(kAsk, {lookupTool()});
    QVERIFY(!future.isFinished());

    int ticksWhilePending = 0;
    QTimer timer;
    timer.setInterval(5);
    connect(&timer, &QTimer::timeout, this, [&] {
        if (!future.isFinished())
            ++ticksWhilePending;
    });
    timer.start();
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 20000));
    QVERIFY(ticksWhilePending > 0);
    QCOMPARE(future.result().finalAnswer, QStringLiteral("slow answer"));
}

void TestAgentExecutor::cancelWhileToolRuns()
{
    std::shared_ptr<QPromise<QString>> pending;
    auto slow = std::make_shared<FunctionTool>(QStringLiteral("slow"), QStringLiteral("Takes its time."), kKeySchema,
                                               FunctionTool::AsyncFunction([&pending](const Json &) {
                                                   pending = std::make_shared<QPromise<QString>>();
                                                   pending->start();
                                                   return pending->future();
                                               }));
    ScriptedLlm llm;
    llm.on(QStringLiteral("slow"), sequence({toolCalls({{"slow", R"({"key":"x"})"}}), text(QStringLiteral("never asked"))}));
    AgentExecutor executor(llm.provider());
    QSignalSpy llmCalls(&executor, &AgentExecutor::llmCallStarted);
    QSignalSpy finished(&executor, &AgentExecutor::toolFinished);

    QFuture<AgentResult> future = executor.run(kAsk, {slow});
    QVERIFY(QTest::qWaitFor([&] { return pending != nullptr; }, 20000));
    future.cancel();
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 20000));
    QVERIFY(future.isCanceled());

    // The tool completes after the cancel; its result must not lead to another request.
    pending->addResult(QStringLiteral("late"));
    pending->finish();
    QVERIFY(QTest::qWaitFor([&] { return finished.size() == 1; }, 20000));
    QCoreApplication::processEvents();
    QCOMPARE(llmCalls.size(), 1);
    QCOMPARE(llm.totalCalls(), 1);
}

void TestAgentExecutor::cancelWhileLlmAnswers()
{
    ScriptedLlm llm;
    llm.on(QStringLiteral("lookup"), [](const Json &) {
        ScriptedReply r = toolCalls({{"lookup", R"({"key":"x"})"}});
        r.delayMs = 500;
        return r;
    });
    auto lookups = std::make_shared<std::atomic_int>(0);
    AgentExecutor executor(llm.provider());
    QSignalSpy started(&executor, &AgentExecutor::llmCallStarted);
    QSignalSpy completed(&executor, &AgentExecutor::llmCallCompleted);

    QFuture<AgentResult> future = executor.run(kAsk, {lookupTool(lookups)});
    QVERIFY(QTest::qWaitFor([&] { return llm.totalCalls() == 1; }, 20000));
    future.cancel();
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 20000));
    QVERIFY(future.isCanceled());
    // Had the loop gone on, the delayed tool call would run and a second request follow.
    QTest::qWait(800);
    QCOMPARE(started.size(), 1);
    QCOMPARE(completed.size(), 0);
    QCOMPARE(lookups->load(), 0);
    QCOMPARE(llm.totalCalls(), 1);
}

void TestAgentExecutor::llmFailureFailsTheFuture_data()
{
    QTest::addColumn<int>("status");
    QTest::addColumn<int>("kind");
    QTest::newRow("500") << 500 << int(ErrorKind::ServerError);
    QTest::newRow("401") << 401 << int(ErrorKind::Authentication);
}

void TestAgentExecutor::llmFailureFailsTheFuture()
{
    QFETCH(int, status);
    QFETCH(int, kind);

    ScriptedLlm llm;
    llm.onError(QStringLiteral("lookup"), status);
    AgentExecutor executor(llm.provider());
    QSignalSpy failed(&executor, &AgentExecutor::llmCallFailed);

    QFuture<AgentResult> future = executor.run(kAsk, {lookupTool()});
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 20000));
    try {
        future.result();
        QFAIL("an LLM failure must fail the future");
    } catch (const Error &e) {
        QCOMPARE(int(e.kind()), kind);
        QVERIFY(!e.message().contains(QStringLiteral("sk-test-secret-key")));
    }
    QCOMPARE(failed.size(), 1);
    QCOMPARE(llm.totalCalls(), 1);
}

QTEST_GUILESS_MAIN(TestAgentExecutor)
#include "test_agent_executor.moc"
