#include <mneme/runtime/agent_executor.h>

#include "runtime/future_util_p.h"
#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>

#include <QDebug>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMutex>
#include <QPointer>
#include <QPromise>
#include <QRegularExpression>
#include <QTimer>
#include <algorithm>
#include <exception>
#include <map>
#include <utility>

namespace mneme {

namespace {

const QString kStopSequence = QStringLiteral("\nObservation:");

QString forcedFinalInstruction(bool react)
{
    QString text = QStringLiteral("You have used every step allowed for this task. Do not call any more tools. "
                                  "Using what you have found so far, give your best complete final answer now.");
    if (react)
        text += QStringLiteral(" Start it with \"Final Answer:\".");
    return text;
}

QString toolList(const std::vector<std::shared_ptr<Tool>> &tools)
{
    QStringList names;
    for (const auto &t : tools)
        names << t->name();
    return names.join(QStringLiteral(", "));
}


QString stripThink(QString text)
{
    static const QRegularExpression think(QStringLiteral("<think>.*?</think>"),
                                          QRegularExpression::DotMatchesEverythingOption);
    return text.remove(think);
}

} // namespace

struct AgentExecutor::Relay
{
    QMutex mutex;
    AgentExecutor *target = nullptr;
};

struct AgentExecutor::Run
{
    QPromise<AgentResult> promise;
    std::vector<ChatMessage> messages;
    std::vector<std::shared_ptr<Tool>> tools;
    std::vector<ToolSpec> specs;
    AgentOptions options;
    bool react = false;
    bool done = false;
    bool forcedRequest = false;
    QString stepText; // what the model wrote with the tool calls being run
    AgentResult result;
    int finalTokens = 0; // completion tokens of the reply that gave the final answer (0: unknown)
    QFuture<ChatResponse> pendingChat;
    bool chatInFlight = false;
    // Tools started and not yet answered, so a cancellation can close them.
    struct RunningTool
    {
        QString name;
        QString callId;
        std::shared_ptr<bool> settled;
        std::shared_ptr<QElapsedTimer> clock;
        QFuture<QString> future;
    };
    std::vector<RunningTool> runningTools;
    std::map<std::string, int> callCounts; // tool name + arguments -> times run
    QPointer<QFutureWatcher<AgentResult>> cancelWatch;

    std::shared_ptr<Tool> tool(const QString &name) const
    {
        for (const auto &t : tools)
            if (t->name() == name)
                return t;
        return nullptr;
    }
};

AgentExecutor::AgentExecutor(std::shared_ptr<LlmProvider> llm, QObject *parent)
    : QObject(parent), m_llm(std::move(llm)), m_relay(std::make_shared<Relay>())
{
    if (!m_llm)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("An AgentExecutor needs an LLM provider."));
    m_relay->target = this;
}

AgentExecutor::~AgentExecutor()
{
    {
        QMutexLocker lock(&m_relay->mutex);
        m_relay->target = nullptr;
    }
    // Runs still going end cancelled, and their requests are aborted rather than left to finish unheard.
    cancel();
}

void AgentExecutor::cancel()
{
    for (const auto &weak : std::vector<std::weak_ptr<Run>>(m_runs))
        if (const auto run = weak.lock())
            abort(run);
}

void AgentExecutor::abort(const std::shared_ptr<Run> &run)
{
    if (run->done)
        return;
    run->done = true;
    // What was started is reported as ended, so every start signal has its end.
    if (std::exchange(run->chatInFlight, false)) {
        run->pendingChat.cancel();
        Q_EMIT llmCallFailed(run->result.iterations, QStringLiteral("The run was cancelled before the LLM answered."));
    }
    for (const Run::RunningTool &t : run->runningTools) {
        if (std::exchange(*t.settled, true))
            continue;
        QFuture<QString>(t.future).cancel();
        Q_EMIT toolFinished(t.name, QStringLiteral("Error: the run was cancelled before the tool answered."), true,
                            t.clock->elapsed(), t.callId);
    }
    run->runningTools.clear();
    run->promise.future().cancel();
    run->promise.finish();
    if (run->cancelWatch)
        run->cancelWatch->deleteLater();
}

QString AgentExecutor::reactInstructions(const std::vector<std::shared_ptr<Tool>> &tools)
{
    QString text = QStringLiteral("You can use tools for this task. These are the tools:\n\n");
    for (const auto &t : tools)
        text += QStringLiteral("- %1: %2\n  Arguments (JSON schema): %3\n")
                    .arg(t->name(), t->description(), QString::fromStdString(t->parametersSchema().dump()));
    text += QStringLiteral(
                "\nTo use a tool, reply in exactly this format and stop after the Action Input line:\n"
                "Thought: what you will do next and why\n"
                "Action: the name of one tool, exactly one of [%1]\n"
                "Action Input: the arguments as one JSON object\n\n"
                "The result then comes back to you as:\n"
                "Observation: the result of the tool\n\n"
                "Repeat Thought / Action / Action Input as often as you need. Never write an Observation "
                "yourself. When you know the answer, reply in this format:\n"
                "Thought: I can answer now\n"
                "Final Answer: your complete answer\n")
                .arg(toolList(tools));
    return text;
}

AgentExecutor::ReactStep AgentExecutor::parseReact(const QString &reply)
{
    QString text = stripThink(reply);
    // A model that ignores the stop sequence may invent the observation; everything from there is dropped.
    const qsizetype observation = text.indexOf(kStopSequence, 0, Qt::CaseInsensitive);
    if (observation >= 0)
        text.truncate(observation);

    static const QRegularExpression actionRe(QStringLiteral("(?:^|\\n)[ \\t*#]*Action[ \\t*]*:[ \\t*]*([^\\n]*)"),
                                             QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression inputRe(QStringLiteral("(?:^|\\n)[ \\t*#]*Action[ \\t]*Input[ \\t*]*:"),
                                            QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression finalRe(QStringLiteral("Final[ \\t]*Answer[ \\t*]*:"),
                                            QRegularExpression::CaseInsensitiveOption);

    const QRegularExpressionMatch finalMatch = finalRe.match(text);
    const QRegularExpressionMatch action = actionRe.match(text);
    ReactStep step;
    if (action.hasMatch() && (!finalMatch.hasMatch() || action.capturedStart() < finalMatch.capturedStart())) {
        QString name = action.captured(1).trimmed();
        const qsizetype paren = name.indexOf(QLatin1Char('('));
        if (paren > 0)
            name.truncate(paren);
        static const QRegularExpression decoration(QStringLiteral("^[\\s`'\"*\\[]+|[\\s`'\"*\\].:,]+$"));
        name.remove(decoration);
        step.isFinal = false;
        step.tool = name;

        const QRegularExpressionMatch input = inputRe.match(text, action.capturedEnd());
        QString raw = input.hasMatch() ? text.mid(input.capturedEnd()) : QString();
        // A final answer written after the input belongs to a later turn, not to the arguments.
        const QRegularExpressionMatch laterFinal = finalRe.match(raw);
        if (laterFinal.hasMatch())
            raw.truncate(laterFinal.capturedStart());
        raw = raw.trimmed();
        if (raw.isEmpty() || raw == QStringLiteral("{}")) {
            step.arguments = Json::object();
            return step;
        }
        try {
            Json value = JsonReply::extract(raw);
            if (value.is_object())
                step.arguments = std::move(value);
            else
                step.inputProblem = QStringLiteral("The Action Input must be one JSON object, not %1.")
                                        .arg(QString::fromStdString(value.dump()));
        } catch (const Error &) {
            step.inputProblem = QStringLiteral("The Action Input is not valid JSON: %1").arg(raw.left(200));
        }
        if (!step.inputProblem.isEmpty())
            step.inputProblem += QStringLiteral(" Write the arguments as one JSON object on the Action Input line.");
        return step;
    }
    step.finalAnswer = (finalMatch.hasMatch() ? text.mid(finalMatch.capturedEnd()) : text).trimmed();
    return step;
}

QFuture<AgentResult> AgentExecutor::run(const std::vector<ChatMessage> &messages,
                                        const std::vector<std::shared_ptr<Tool>> &tools, const AgentOptions &options)
{
    auto run = std::make_shared<Run>();
    run->promise.start();
    QFuture<AgentResult> future = run->promise.future();
    if (options.maxIterations < 1 || options.maxRepeatedCalls < 1) {
        run->promise.setException(Error(ErrorKind::InvalidArgument,
                                        QStringLiteral("AgentOptions.maxIterations and maxRepeatedCalls must be at least 1.")));
        run->promise.finish();
        return future;
    }
    run->messages = messages;
    run->options = options;
    m_runs.erase(std::remove_if(m_runs.begin(), m_runs.end(), [](const auto &w) { return w.expired(); }), m_runs.end());
    m_runs.push_back(run);
    for (const auto &t : tools) {
        if (!t)
            continue;
        if (run->tool(t->name())) {
            run->promise.setException(Error(ErrorKind::InvalidArgument,
                                            QStringLiteral("Two tools are named \"%1\"; give each tool a unique name.").arg(t->name())));
            run->promise.finish();
            return future;
        }
        run->tools.push_back(t);
        run->specs.push_back(ToolSpec{t->name(), t->description(), t->parametersSchema()});
    }
    run->react = !run->tools.empty() && !m_llm->supportsFunctionCalling();
    if (run->react) {
        const QString section = reactInstructions(run->tools);
        if (!run->messages.empty() && run->messages.front().role == ChatMessage::Role::System)
            run->messages.front().content += QStringLiteral("\n\n") + section;
        else
            run->messages.insert(run->messages.begin(), ChatMessage::system(section));
    }

    // Cancelling the caller's future ends the run at once; the request in flight is aborted.
    auto *watch = new QFutureWatcher<AgentResult>(this);
    run->cancelWatch = watch;
    connect(watch, &QFutureWatcherBase::canceled, this, [this, run] { abort(run); });
    watch->setFuture(future);

    step(run);
    return future;
}

void AgentExecutor::step(const std::shared_ptr<Run> &run)
{
    if (run->done)
        return;
    if (run->promise.isCanceled()) {
        finish(run);
        return;
    }
    ChatRequest request;
    request.temperature = run->options.temperature;
    request.maxTokens = run->options.maxTokens;
    run->forcedRequest = run->result.iterations >= run->options.maxIterations;
    if (run->forcedRequest) {
        run->result.forcedFinal = true;
        run->messages.push_back(ChatMessage::user(forcedFinalInstruction(run->react)));
    } else if (run->react) {
        request.stop = QStringList{kStopSequence};
    } else {
        request.tools = run->specs;
    }
    request.messages = run->messages;

    const int iteration = ++run->result.iterations;
    if (run->options.stream) {
        request.stream = true;
        // Pieces arrive on the network thread; they are queued to this executor's thread, ahead of the
        // reply's own completion, which is queued after them.
        request.onTextDelta = [relay = m_relay, iteration](const QString &text) {
            QMutexLocker lock(&relay->mutex);
            if (AgentExecutor *target = relay->target)
                QMetaObject::invokeMethod(
                    target, [target, iteration, text] { Q_EMIT target->textChunk(iteration, text); },
                    Qt::QueuedConnection);
        };
    }
    Q_EMIT iterationStarted(iteration);
    Q_EMIT llmCallStarted(iteration);
    QFuture<ChatResponse> chat;
    try {
        chat = m_llm->chat(request);
    } catch (const Error &e) {
        chat = QtFuture::makeExceptionalFuture<ChatResponse>(e);
    }
    run->pendingChat = chat;
    run->chatInFlight = true;

    auto *watcher = new QFutureWatcher<ChatResponse>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, run, watcher, iteration] {
        watcher->deleteLater();
        QFuture<ChatResponse> f = watcher->future();
        if (run->done)
            return;
        run->chatInFlight = false;
        if (run->promise.isCanceled()) {
            Q_EMIT llmCallFailed(iteration, QStringLiteral("The run was cancelled before the LLM answered."));
            abort(run);
            return;
        }
        if (f.resultCount() > 0) {
            const ChatResponse reply = f.result();
            run->result.usage += reply.usage;
            Q_EMIT llmCallCompleted(iteration, reply.usage.promptTokens, reply.usage.completionTokens);
            onReply(run, reply);
            return;
        }
        Error error(ErrorKind::Cancelled, QStringLiteral("The LLM request was cancelled before it answered."));
        try {
            f.waitForFinished();
        } catch (const Error &e) {
            error = e;
        } catch (const std::exception &e) {
            error = Error(ErrorKind::Provider, QStringLiteral("The LLM call failed: %1").arg(QString::fromUtf8(e.what())));
        } catch (...) {
            error = Error(ErrorKind::Provider, QStringLiteral("The LLM call failed with an unknown exception."));
        }
        Q_EMIT llmCallFailed(iteration, error.message());
        run->done = true;
        run->promise.setException(error);
        run->promise.finish();
        if (run->cancelWatch)
            run->cancelWatch->deleteLater();
    });
    watcher->setFuture(chat);
}

void AgentExecutor::onReply(const std::shared_ptr<Run> &run, const ChatResponse &reply)
{
    // The reply's completion tokens are the final answer's when the answer is the reply's whole text.
    run->finalTokens = !run->react && reply.toolCalls.empty() ? reply.usage.completionTokens : 0;
    if (run->forcedRequest) {
        // Whatever comes back now is the answer; tool calls are no longer honoured.
        run->result.finalAnswer = run->react ? parseReact(reply.text).finalAnswer : reply.text.trimmed();
        if (run->react && run->result.finalAnswer.isEmpty())
            run->result.finalAnswer = stripThink(reply.text).trimmed();
        finish(run);
        return;
    }
    if (!run->react) {
        if (reply.toolCalls.empty()) {
            run->result.finalAnswer = reply.text.trimmed();
            finish(run);
            return;
        }
        run->messages.push_back(ChatMessage::assistant(reply.text, reply.toolCalls));
        SessionMessage said(run->messages.back());
        if (reply.usage.completionTokens > 0)
            said.tokens = reply.usage.completionTokens;
        run->result.transcript << said;
        run->stepText = reply.text.trimmed();
        runTools(run, reply.toolCalls);
        return;
    }
    const ReactStep parsed = parseReact(reply.text);
    if (parsed.isFinal) {
        run->result.finalAnswer = parsed.finalAnswer;
        finish(run);
        return;
    }
    QString said = stripThink(reply.text);
    const qsizetype observation = said.indexOf(kStopSequence, 0, Qt::CaseInsensitive);
    if (observation >= 0)
        said.truncate(observation);
    run->messages.push_back(ChatMessage::assistant(said.trimmed()));
    run->stepText = said.trimmed();
    ToolCall call;
    call.id = QStringLiteral("react-%1").arg(run->result.iterations);
    call.name = parsed.tool;
    // A null value marks input that was not a JSON object; runTools answers with the problem.
    call.arguments = parsed.inputProblem.isEmpty() ? parsed.arguments
                                                   : Json{{"_react_input_problem", parsed.inputProblem}};
    runTools(run, {call});
}

void AgentExecutor::runTools(const std::shared_ptr<Run> &run, std::vector<ToolCall> calls)
{
    struct Batch
    {
        std::vector<ToolCall> calls;
        std::vector<AgentToolCall> outcomes;
        int remaining = 0;
    };
    auto batch = std::make_shared<Batch>();
    batch->calls = std::move(calls);
    batch->outcomes.resize(batch->calls.size());
    batch->remaining = int(batch->calls.size()) + 1; // +1 until every call has been started

    auto complete = [this, run, batch] {
        if (--batch->remaining > 0 || run->done)
            return;
        for (size_t i = 0; i < batch->calls.size(); ++i) {
            const AgentToolCall &outcome = batch->outcomes[i];
            run->result.toolCalls.push_back(outcome);
            if (run->react) {
                run->messages.push_back(ChatMessage::user(QStringLiteral("Observation: ") + outcome.output));
            } else {
                run->messages.push_back(ChatMessage::toolResult(batch->calls[i].id, outcome.name, outcome.output));
                run->result.transcript << SessionMessage(run->messages.back());
            }
        }
        reportStep(run, AgentStep{run->result.iterations, run->stepText, batch->outcomes, false});
        if (run->done) // the step callback may have cancelled the run
            return;
        step(run);
    };

    for (size_t i = 0; i < batch->calls.size(); ++i) {
        const ToolCall &call = batch->calls[i];
        AgentToolCall &outcome = batch->outcomes[i];
        outcome.name = call.name;
        outcome.arguments = call.arguments;
        const QString argumentsJson = QString::fromStdString(call.arguments.dump());
        Q_EMIT toolStarted(call.name, argumentsJson, call.id);

        auto refuse = [&](const QString &why) {
            outcome.output = QStringLiteral("Error: ") + why;
            outcome.isError = true;
            Q_EMIT toolFinished(call.name, outcome.output, true, 0, call.id);
            complete();
        };

        const std::shared_ptr<Tool> tool = run->tool(call.name);
        if (!tool) {
            refuse(run->tools.empty()
                       ? QStringLiteral("there is no tool named \"%1\" and no tools are available; answer directly.").arg(call.name)
                       : QStringLiteral("there is no tool named \"%1\". The tools you can call are: %2.")
                             .arg(call.name, toolList(run->tools)));
            continue;
        }
        if (call.arguments.is_object() && call.arguments.contains("_react_input_problem")) {
            outcome.arguments = Json();
            refuse(QString::fromStdString(call.arguments["_react_input_problem"].get<std::string>()));
            continue;
        }
        if (call.arguments.is_object() && call.arguments.size() == 1 && call.arguments.contains("_raw")) {
            refuse(QStringLiteral("the arguments for %1 were not valid JSON. Call it again with one JSON object that "
                                  "follows its schema.")
                       .arg(call.name));
            continue;
        }
        const QStringList problems = JsonReply::validate(call.arguments, tool->parametersSchema());
        if (!problems.isEmpty()) {
            refuse(QStringLiteral("the arguments for %1 do not match its schema: %2 Call it again with arguments that "
                                  "follow the schema.")
                       .arg(call.name, problems.join(QLatin1Char(' '))));
            continue;
        }
        const std::string key = call.name.toStdString() + '\n' + call.arguments.dump();
        if (++run->callCounts[key] > run->options.maxRepeatedCalls) {
            refuse(QStringLiteral("you already called %1 with these same arguments and its result is above. Use that "
                                  "result, call a tool with different arguments, or give your final answer.")
                       .arg(call.name));
            continue;
        }

        QFuture<QString> running;
        try {
            running = tool->run(call.arguments);
        } catch (const Error &e) {
            running = QtFuture::makeExceptionalFuture<QString>(e);
        } catch (const std::exception &e) {
            running = QtFuture::makeExceptionalFuture<QString>(
                Error(ErrorKind::Internal, QStringLiteral("The tool %1 failed: %2").arg(call.name, QString::fromUtf8(e.what()))));
        }
        auto clock = std::make_shared<QElapsedTimer>();
        clock->start();
        auto settled = std::make_shared<bool>(false); // the answer or the timeout, whichever comes first
        run->runningTools.push_back(Run::RunningTool{call.name, call.id, settled, clock, running});
        auto *watcher = new QFutureWatcher<QString>(this);
        const QString callId = call.id;
        connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, batch, i, clock, complete, settled, callId] {
            watcher->deleteLater();
            if (std::exchange(*settled, true))
                return;
            QFuture<QString> f = watcher->future();
            AgentToolCall &done = batch->outcomes[i];
            if (f.resultCount() > 0) {
                done.output = f.result();
            } else {
                done.output = QStringLiteral("Error: ") + failureOf(f, QStringLiteral("The tool %1 was cancelled before it returned a result.").arg(done.name)).message();
                done.isError = true;
            }
            Q_EMIT toolFinished(done.name, done.output, done.isError, clock->elapsed(), callId);
            complete();
        });
        if (run->options.toolTimeoutMs > 0) {
            // Whichever of the answer and the timeout comes first settles the call; the other is ignored.
            QTimer::singleShot(run->options.toolTimeoutMs, watcher, [this, watcher, batch, i, clock, complete, run, settled, callId] {
                if (std::exchange(*settled, true))
                    return;
                watcher->future().cancel();
                watcher->deleteLater();
                AgentToolCall &late = batch->outcomes[i];
                late.output = QStringLiteral("Error: the tool %1 did not answer within %2 ms and was abandoned. Try "
                                             "other arguments or another approach.")
                                  .arg(late.name)
                                  .arg(run->options.toolTimeoutMs);
                late.isError = true;
                Q_EMIT toolFinished(late.name, late.output, true, clock->elapsed(), callId);
                complete();
            });
        }
        watcher->setFuture(running);
    }
    complete();
}

void AgentExecutor::reportStep(const std::shared_ptr<Run> &run, AgentStep step)
{
    if (!run->options.stepCallback)
        return;
    try {
        run->options.stepCallback(step);
    } catch (const std::exception &e) {
        qWarning().noquote() << "AgentExecutor: the step callback threw:" << e.what();
    } catch (...) {
        qWarning().noquote() << "AgentExecutor: the step callback threw an unknown exception";
    }
}

void AgentExecutor::finish(const std::shared_ptr<Run> &run)
{
    if (run->done)
        return;
    if (!run->promise.isCanceled())
        reportStep(run, AgentStep{run->result.iterations, run->result.finalAnswer, {}, true});
    run->done = true;
    if (!run->result.finalAnswer.isEmpty()) {
        SessionMessage answer(ChatMessage::assistant(run->result.finalAnswer));
        if (run->finalTokens > 0)
            answer.tokens = run->finalTokens;
        run->result.transcript << answer;
    }
    if (!run->promise.isCanceled())
        run->promise.addResult(run->result);
    run->promise.finish();
    if (run->cancelWatch)
        run->cancelWatch->deleteLater();
}

} // namespace mneme
