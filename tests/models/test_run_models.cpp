// The models over runs: the event log of crews and flows (nesting, scopes completed by their ends,
// streamed text, family filters, the bound) fed by a real EventBus, and a chat's messages while a real
// AgentChat streams from the `openai` plugin talking to a scripted server. Every model is checked by
// QAbstractItemModelTester.

#include "scripted_llm.h"
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/models/chat_message_model.h>
#include <mneme/models/event_log_model.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/event_bus.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using namespace mneme::test;

namespace {

// A streamed OpenAI answer in these pieces.
ScriptedReply streamed(const QStringList &pieces)
{
    QList<QByteArray> events;
    for (const QString &piece : pieces)
        events << QByteArray("data: ")
                      + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", {{"content", piece.toStdString()}}}}}}}.dump())
                      + "\n\n";
    events << QByteArray("data: ")
                  + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", Json::object()}, {"finish_reason", "stop"}}}},
                                                   {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 3}}}}
                                                  .dump())
                  + "\n\n";
    events << QByteArray("data: [DONE]\n\n");
    return ScriptedReply::sse(events, 30);
}

} // namespace

class TestRunModels : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // ---- EventLogModel --------------------------------------------------------------------------

    void eventsNestUnderTheirScopes()
    {
        EventBus bus;
        EventLogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setEventBus(&bus);
        const QString kickoff = bus.begin(QString::fromLatin1(events::kCrewKickoffStarted), {{"crew_name", "research"}}, QStringLiteral("crew"));
        const QString task = bus.begin(QString::fromLatin1(events::kTaskStarted), {{"task_name", "Find sources"}}, QStringLiteral("task"));
        const QString call = bus.begin(QString::fromLatin1(events::kLlmCallStarted), {{"model", "gpt-4o-mini"}}, QStringLiteral("agent"));
        bus.publish(QString::fromLatin1(events::kLlmStreamChunk), {{"chunk", "Hel"}});
        bus.publish(QString::fromLatin1(events::kLlmStreamChunk), {{"chunk", "lo"}});
        bus.end(QString::fromLatin1(events::kLlmCallCompleted), {{"duration_ms", 12}});
        bus.publish(QString::fromLatin1(events::kMemorySaveCompleted), {{"value", "a fact"}}, QStringLiteral("unified_memory"));
        bus.end(QString::fromLatin1(events::kTaskFailed), {{"error", "the provider refused"}});
        QCOMPARE(model.rowCount(), 1);
        const QModelIndex crew = model.index(0, 0);
        QCOMPARE(crew.data(EventLogModel::EventIdRole).toString(), kickoff);
        QCOMPARE(crew.data(EventLogModel::StatusRole).toString(), QStringLiteral("running"));
        QCOMPARE(crew.data(EventLogModel::SummaryRole).toString(), QStringLiteral("research"));
        QCOMPARE(model.rowCount(crew), 1);
        const QModelIndex taskRow = model.index(0, 0, crew);
        QCOMPARE(taskRow.data(EventLogModel::EventIdRole).toString(), task);
        QCOMPARE(taskRow.data(EventLogModel::StatusRole).toString(), QStringLiteral("failed"));
        QCOMPARE(taskRow.data(EventLogModel::PropertiesRole).toMap().value(QStringLiteral("error")).toString(),
                 QStringLiteral("the provider refused"));
        QVERIFY(taskRow.data(EventLogModel::DurationRole).toLongLong() >= 0);
        QCOMPARE(model.rowCount(taskRow), 2); // the call (ends and chunks are not rows) and the save
        const QModelIndex callRow = model.index(0, 0, taskRow);
        QCOMPARE(callRow.data(EventLogModel::EventIdRole).toString(), call);
        QCOMPARE(callRow.data(EventLogModel::StatusRole).toString(), QStringLiteral("completed"));
        QCOMPARE(callRow.data(EventLogModel::StreamedTextRole).toString(), QStringLiteral("Hello"));
        QCOMPARE(model.index(0, EventLogModel::EventColumn, taskRow).data().toString(), QStringLiteral("llm_call"));
        QCOMPARE(model.index(1, 0, taskRow).data(EventLogModel::FamilyRole).toString(), QStringLiteral("memory"));
        bus.end(QString::fromLatin1(events::kCrewKickoffCompleted));
        QCOMPARE(crew.data(EventLogModel::StatusRole).toString(), QStringLiteral("completed"));
        QCOMPARE(model.eventCount(), 4);
    }

    void eventsFromOtherThreadsArriveQueued()
    {
        EventBus bus;
        EventLogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setEventBus(&bus);
        QThread *worker = QThread::create([&bus] {
            bus.begin(QString::fromLatin1(events::kFlowStarted), {{"flow_name", "triage"}}, QStringLiteral("flow"));
            bus.begin(QString::fromLatin1(events::kMethodExecutionStarted), {{"method_name", "classify"}}, QStringLiteral("flow"));
            bus.end(QString::fromLatin1(events::kMethodExecutionFinished));
            bus.end(QString::fromLatin1(events::kFlowFinished));
        });
        worker->start();
        QVERIFY(worker->wait(5000));
        delete worker;
        QTRY_COMPARE(model.rowCount(), 1);
        const QModelIndex flow = model.index(0, 0);
        QTRY_COMPARE(flow.data(EventLogModel::StatusRole).toString(), QStringLiteral("completed"));
        QCOMPARE(model.rowCount(flow), 1);
        QCOMPARE(model.index(0, 0, flow).data(EventLogModel::SummaryRole).toString(), QStringLiteral("classify"));
        QCOMPARE(flow.data(EventLogModel::FamilyRole).toString(), QStringLiteral("flow"));
    }

    void familiesFilterAndReparent()
    {
        EventBus bus;
        EventLogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setEventBus(&bus);
        bus.begin(QString::fromLatin1(events::kCrewKickoffStarted), {}, QStringLiteral("crew"));
        bus.begin(QString::fromLatin1(events::kTaskStarted), {}, QStringLiteral("task"));
        bus.begin(QString::fromLatin1(events::kToolUsageStarted), {{"tool_name", "search"}}, QStringLiteral("agent"));
        bus.end(QString::fromLatin1(events::kToolUsageFinished));
        bus.end(QString::fromLatin1(events::kTaskCompleted));
        bus.end(QString::fromLatin1(events::kCrewKickoffCompleted));
        // Tasks hidden: the tool is shown under the crew.
        model.setFamilies({QStringLiteral("crew"), QStringLiteral("tool")});
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.rowCount(model.index(0, 0)), 1);
        QCOMPARE(model.index(0, 0, model.index(0, 0)).data(EventLogModel::SummaryRole).toString(), QStringLiteral("search"));
        // Crews hidden too: the tool is a top-level row; new events follow the filter.
        model.setFamilies({QStringLiteral("tool")});
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, 0).data(EventLogModel::FamilyRole).toString(), QStringLiteral("tool"));
        bus.publish(QString::fromLatin1(events::kMemorySaveCompleted));
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.eventCount(), 4); // kept, not shown
        model.setFamilies({});
        QCOMPARE(model.rowCount(), 2); // the crew and the save
        QCOMPARE(EventLogModel::familyOf(QStringLiteral("method_execution_failed")), QStringLiteral("flow"));
        QCOMPARE(EventLogModel::familyOf(QStringLiteral("llm_guardrail_started")), QStringLiteral("guardrail"));
    }

    void theLogIsBounded()
    {
        EventBus bus;
        EventLogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setEventBus(&bus);
        model.setMaxEvents(5);
        for (int i = 0; i < 3; ++i) {
            bus.begin(QString::fromLatin1(events::kTaskStarted), {{"task_name", QStringLiteral("task %1").arg(i).toStdString()}});
            bus.publish(QString::fromLatin1(events::kMemoryQueryCompleted));
            bus.end(QString::fromLatin1(events::kTaskCompleted));
        }
        // Six events over the bound of five: the oldest task went with what it held.
        QCOMPARE(model.eventCount(), 4);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, 0).data(EventLogModel::SummaryRole).toString(), QStringLiteral("task 1"));
        model.setMaxEvents(1);
        QCOMPARE(model.eventCount(), 0); // a task with its child does not fit in one: both go
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    // ---- ChatMessageModel -----------------------------------------------------------------------

    void chatMessagesStreamAndSettle()
    {
        ScriptedLlm llm;
        llm.setFallback([](const Json &body) {
            const QString user = ScriptedLlm::messageOf(body, "user", true);
            if (user.contains(QLatin1String("fail")))
                return ScriptedReply::json(QByteArray(R"({"error": {"message": "bad request"}})"), 400);
            return streamed({QStringLiteral("Hel"), QStringLiteral("lo "), QStringLiteral("there")});
        });
        EventBus bus;
        AgentConfig c;
        c.role = QStringLiteral("Greeter");
        c.goal = QStringLiteral("Greet people.");
        c.backstory = QStringLiteral("Friendly.");
        c.llm = llm.provider();
        c.stream = true;
        c.maxRetryLimit = 0;
        auto memory = std::make_shared<ChatMemory>(QStringLiteral("chat"), ChatMemoryConfig(),
                                                   std::make_shared<SqliteChatStore>(QStringLiteral(":memory:")));
        memory->putMessages({SessionMessage(ChatMessage::user(QStringLiteral("Earlier question"))),
                             SessionMessage(ChatMessage::assistant(QStringLiteral("Earlier answer")))});
        AgentChat chat(std::make_shared<Agent>(c), memory, AgentChatOptions{&bus});
        ChatMessageModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &ChatMessageModel::loaded);
        model.setChat(&chat);
        QVERIFY(loaded.wait());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0).data(ChatMessageModel::ContentRole).toString(), QStringLiteral("Earlier question"));

        QStringList seen; // the answer row's content at each change
        connect(&model, &QAbstractItemModel::dataChanged, this, [&](const QModelIndex &from) {
            if (from.data(ChatMessageModel::StreamingRole).toBool())
                seen << from.data(ChatMessageModel::ContentRole).toString();
        });
        QSignalSpy completed(&chat, &AgentChat::turnCompleted);
        model.send(QStringLiteral("Say hello"));
        QTRY_COMPARE(model.rowCount(), 4);
        QCOMPARE(model.index(2).data(ChatMessageModel::RoleNameRole).toString(), QStringLiteral("user"));
        QVERIFY(completed.wait());
        QCOMPARE(seen, (QStringList{QStringLiteral("Hel"), QStringLiteral("Hello "), QStringLiteral("Hello there")}));
        // Settled: the rows are what the chat memory stored.
        QCOMPARE(model.rowCount(), 4);
        const QModelIndex answer = model.index(3);
        QCOMPARE(answer.data(ChatMessageModel::ContentRole).toString(), QStringLiteral("Hello there"));
        QCOMPARE(answer.data(ChatMessageModel::RoleNameRole).toString(), QStringLiteral("assistant"));
        QVERIFY(!answer.data(ChatMessageModel::StreamingRole).toBool());
        QCOMPARE(answer.data(ChatMessageModel::SeqRole).toLongLong(), 4);
        QVERIFY(!model.isBusy());

        // A failed turn keeps the user's message, with the error on the answer row.
        QSignalSpy failed(&model, &ChatMessageModel::errorOccurred);
        model.send(QStringLiteral("Please fail"));
        QVERIFY(failed.wait());
        QCOMPARE(model.rowCount(), 6);
        QVERIFY(model.index(5).data(ChatMessageModel::FailedRole).toBool());
        QVERIFY(!model.index(5).data(ChatMessageModel::ErrorRole).toString().isEmpty());
        QCOMPARE(model.get(4).value(QStringLiteral("content")).toString(), QStringLiteral("Please fail"));
        // Read again, the history holds what was stored: the failed turn was not.
        model.reload();
        QVERIFY(loaded.wait());
        QCOMPARE(model.rowCount(), 4);
    }
};

QTEST_GUILESS_MAIN(TestRunModels)
#include "test_run_models.moc"
