// `mneme chat` and `mneme sessions`: a chat recorded through the replay plugin in front of a scripted
// model, the session continued by a second process, the same conversation replayed offline from the
// cassette, a chat flushed into its blocks, the sessions listed, shown, cleared and deleted, and the
// errors of each.

#include "cli_runner.h"
#include "scripted_llm.h"
#include "temp_store.h"

#include <QFile>
#include <QTest>

using Json = nlohmann::json;
using mneme::test::CliRun;
using mneme::test::ScriptedLlm;
using mneme::test::TempStore;

namespace {

// The scripted model: names the number of messages it was sent, and the user's name when the
// conversation holds it, so that what the history carried is visible in the answers.
mneme::test::ScriptedReply answer(const Json &body)
{
    QString said;
    for (const Json &m : body["messages"])
        said += QString::fromStdString(m.value("content", std::string())) + QLatin1Char('\n');
    const int count = int(body["messages"].size());
    if (said.contains(QLatin1String("My name is Ana")) && ScriptedLlm::messageOf(body, "user", true).contains(QLatin1String("my name")))
        return ScriptedLlm::completion(QStringLiteral("Your name is Ana (%1 messages).").arg(count));
    return ScriptedLlm::completion(QStringLiteral("Noted (%1 messages).").arg(count));
}

QString str(const Json &value)
{
    return value.is_string() ? QString::fromStdString(value.get<std::string>()) : QString::fromStdString(value.dump());
}

} // namespace

class TestCliChat : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<TempStore>();
        m_llm = std::make_unique<ScriptedLlm>();
        m_llm->setFallback(answer);
    }
    void cleanup()
    {
        m_llm.reset();
        m_dir.reset();
    }

    void recordedThenReplayedOffline()
    {
        const QString cassette = m_dir->path(QStringLiteral("chat.jsonl"));
        writeConfig(Json{{"llm", {{"provider", "replay"}, {"config", {{"mode", "record"}, {"cassette", cassette.toStdString()}, {"llm", m_llm->config()}}}}},
                         {"agent", {{"role", "Helper"}}},
                         {"chat_memory", {{"token_limit", 4000}}}});
        const QString db = m_dir->path(QStringLiteral("recorded.db"));
        const CliRun first = chat(db, "Hello there\n\nMy name is Ana.\n/exit\nnever sent\n");
        QVERIFY2(first.exitCode == 0 && first.isJson(), first.describe());
        const Json turns = first.json()["turns"];
        QCOMPARE(turns.size(), size_t(2));
        QCOMPARE(str(turns[0]["reply"]["text"]), QStringLiteral("Noted (2 messages)."));
        QCOMPARE(str(turns[1]["reply"]["text"]), QStringLiteral("Noted (4 messages).")); // the first turn went along
        QCOMPARE(turns[1]["reply"]["stored"].size(), size_t(2));
        // A second process continues the session from the store.
        const CliRun second = chat(db, "What is my name?\n");
        QVERIFY2(second.exitCode == 0, second.describe());
        QCOMPARE(str(second.json()["turns"][0]["reply"]["text"]), QStringLiteral("Your name is Ana (6 messages)."));
        const QString request = ScriptedLlm::messageOf(m_llm->requests(QStringLiteral("search_memory")).last(), "system");
        QVERIFY2(request.contains(QLatin1String("You are Helper.")), qPrintable(request));

        // Offline: the model is gone, the cassette answers the same conversation in a new store.
        m_llm.reset();
        writeConfig(Json{{"llm", {{"provider", "replay"}, {"config", {{"cassette", cassette.toStdString()}}}}},
                         {"agent", {{"role", "Helper"}}},
                         {"chat_memory", {{"token_limit", 4000}}}});
        const QString offline = m_dir->path(QStringLiteral("offline.db"));
        const CliRun again = chat(offline, "Hello there\nMy name is Ana.\n");
        QVERIFY2(again.exitCode == 0, again.describe());
        QCOMPARE(str(again.json()["turns"][1]["reply"]["text"]), QStringLiteral("Noted (4 messages)."));
        const CliRun human = run({QStringLiteral("chat"), QStringLiteral("--db"), offline, QStringLiteral("--config"), configPath()},
                                 "What is my name?\n");
        QVERIFY2(human.exitCode == 0, human.describe());
        QCOMPARE(human.out, QByteArray("Your name is Ana (6 messages).\n"));

        // The sessions of the store.
        const CliRun list = run({QStringLiteral("sessions"), QStringLiteral("list"), QStringLiteral("--db"), offline, QStringLiteral("--json")});
        QVERIFY2(list.exitCode == 0, list.describe());
        QCOMPARE(list.json().size(), size_t(1));
        QCOMPARE(str(list.json()[0]["id"]), QStringLiteral("default"));
        QCOMPARE(list.json()[0]["active_messages"].get<int>(), 6);
        const CliRun show = run({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("default"), QStringLiteral("--db"),
                                 offline, QStringLiteral("--json")});
        QVERIFY2(show.exitCode == 0, show.describe());
        QCOMPARE(show.json()["messages"].size(), size_t(6));
        QCOMPARE(str(show.json()["messages"][1]["role"]), QStringLiteral("assistant"));
        const CliRun table = run({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("default"), QStringLiteral("--db"), offline});
        QVERIFY2(table.out.contains("#2 assistant") && table.out.contains("Noted (2 messages)."), table.describe());
    }

    void flushedIntoItsBlocks()
    {
        m_llm->onJson(QStringLiteral("chat_facts"), Json{{"facts", {"The user is Ana, from Lisbon."}}});
        writeConfig(Json{{"llm", m_llm->config()},
                         {"chat_memory",
                          {{"token_limit", 600},
                           {"chat_history_token_ratio", 0.15},
                           {"token_flush_size", 30},
                           {"memory_blocks", Json::array({{{"type", "fact_extraction"}, {"name", "facts"}}})}}}});
        const QString db = m_dir->path();
        const CliRun r = chat(db, "My name is Ana and I live in Lisbon.\nI have a sister called Marta.\nWe travel to Porto in May.\n"
                                  "We both like vegetarian food.\nThe train leaves at nine.\nWe come back on Sunday.\nWhat is my name?\n");
        QVERIFY2(r.exitCode == 0, r.describe());
        // The facts the flush gave the block come back in the last request's system message.
        const QString last = ScriptedLlm::messageOf(m_llm->requests(QStringLiteral("search_memory")).last(), "system");
        QVERIFY2(last.contains(QLatin1String("<fact>The user is Ana, from Lisbon.</fact>")), qPrintable(last));
        const QString firstUser = ScriptedLlm::messageOf(m_llm->requests(QStringLiteral("search_memory")).last(), "user");
        QVERIFY2(firstUser != QLatin1String("My name is Ana and I live in Lisbon."), qPrintable(firstUser)); // flushed out of the history
        const Json listed = run({QStringLiteral("sessions"), QStringLiteral("list"), QStringLiteral("--db"), db, QStringLiteral("--json")}).json();
        QVERIFY(listed[0]["flushes"].get<int>() >= 1);
        QVERIFY(listed[0]["archived_messages"].get<int>() >= 2);
        const CliRun shown = run({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("default"), QStringLiteral("--db"), db});
        QVERIFY2(shown.exitCode == 0 && shown.out.contains(R"(block facts: {"facts":["The user is Ana, from Lisbon."]})"), shown.describe());
        const CliRun json = run({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("default"), QStringLiteral("--db"), db,
                                 QStringLiteral("--archived"), QStringLiteral("--json")});
        QVERIFY2(json.exitCode == 0, json.describe());
        const Json shownJson = json.json();
        QCOMPARE(str(shownJson["block_states"]["facts"]), QStringLiteral(R"({"facts":["The user is Ana, from Lisbon."]})"));
        QCOMPARE(str(shownJson["messages"][0]["content"]), QStringLiteral("My name is Ana and I live in Lisbon."));
        QCOMPARE(shownJson["messages"][0]["flush"].get<int>(), 1);
    }

    void sessionsClearAndDelete()
    {
        writeConfig(Json{{"llm", m_llm->config()}});
        const QString db = m_dir->path();
        QVERIFY(chat(db, "one\ntwo\n", QStringLiteral("a")).exitCode == 0);
        QVERIFY(chat(db, "three\n", QStringLiteral("b")).exitCode == 0);
        const CliRun refused = run({QStringLiteral("sessions"), QStringLiteral("clear"), QStringLiteral("a"), QStringLiteral("--db"), db});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("--yes"), refused.describe());
        const CliRun cleared = run({QStringLiteral("sessions"), QStringLiteral("clear"), QStringLiteral("a"), QStringLiteral("--yes"),
                                    QStringLiteral("--db"), db, QStringLiteral("--json")});
        QVERIFY2(cleared.exitCode == 0, cleared.describe());
        QCOMPARE(cleared.json()["cleared"].get<int>(), 4);
        const CliRun deleted = run({QStringLiteral("sessions"), QStringLiteral("delete"), QStringLiteral("b"), QStringLiteral("--yes"),
                                    QStringLiteral("--db"), db, QStringLiteral("--json")});
        QVERIFY2(deleted.exitCode == 0, deleted.describe());
        QVERIFY(deleted.json()["deleted"] == true);
        const Json sessions = run({QStringLiteral("sessions"), QStringLiteral("list"), QStringLiteral("--db"), db, QStringLiteral("--json")}).json();
        QCOMPARE(sessions.size(), size_t(1));
        QCOMPARE(str(sessions[0]["id"]), QStringLiteral("a"));
        QCOMPARE(sessions[0]["active_messages"].get<int>(), 0);
        // The chat's sections in --config do not trouble the other commands.
        writeConfig(Json{{"llm", nullptr}, {"chat_memory", {{"token_limit", 1000}}}, {"agent", {{"role", "X"}}}});
        const CliRun remember = run({QStringLiteral("remember"), QStringLiteral("A fact."), QStringLiteral("--db"), db,
                                     QStringLiteral("--config"), configPath()});
        QVERIFY2(remember.exitCode == 0, remember.describe());
    }

    void errors()
    {
        const QString db = m_dir->path();
        const auto fails = [&](const QStringList &args, const QByteArray &input, const char *text) {
            const CliRun r = run(args, input);
            QVERIFY2(r.exitCode == 2 && r.err.contains(text), r.describe());
            QVERIFY(r.out.isEmpty());
        };
        writeConfig(Json::object());
        fails({QStringLiteral("chat"), QStringLiteral("--db"), db, QStringLiteral("--config"), configPath()}, "hi\n", "needs an LLM");
        writeConfig(Json{{"llm", m_llm->config()}, {"chat_memory", {{"token_limit", 0}}}});
        fails({QStringLiteral("chat"), QStringLiteral("--db"), db, QStringLiteral("--config"), configPath()}, "hi\n", "token_limit");
        writeConfig(Json{{"llm", m_llm->config()}, {"agent", {{"persona", "x"}}}});
        fails({QStringLiteral("chat"), QStringLiteral("--db"), db, QStringLiteral("--config"), configPath()}, "hi\n", "unknown key \"persona\"");
        fails({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("nope"), QStringLiteral("--db"), db}, {}, "no chat session");
        fails({QStringLiteral("sessions"), QStringLiteral("rename"), QStringLiteral("x"), QStringLiteral("--db"), db}, {}, "list, show SESSION");
        fails({QStringLiteral("sessions"), QStringLiteral("show"), QStringLiteral("--db"), db}, {}, "needs the session's id");
        // Listing a store that does not exist creates none.
        const QString absent = m_dir->path(QStringLiteral("absent.db"));
        const CliRun list = run({QStringLiteral("sessions"), QStringLiteral("list"), QStringLiteral("--db"), absent, QStringLiteral("--json")});
        QVERIFY2(list.exitCode == 0 && list.json() == Json::array(), list.describe());
        QVERIFY(!QFile::exists(absent));
    }

private:
    QString configPath() const { return m_dir->path(QStringLiteral("config.json")); }
    void writeConfig(const Json &config)
    {
        QFile f(configPath());
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray::fromStdString(config.dump()));
    }
    CliRun run(const QStringList &args, const QByteArray &input = {})
    {
        return mneme::test::runCli(QStringLiteral(MNEME_CLI), args, m_dir->dir(), input);
    }
    CliRun chat(const QString &db, const QByteArray &input, const QString &session = QStringLiteral("default"))
    {
        return run({QStringLiteral("chat"), QStringLiteral("--session"), session, QStringLiteral("--db"), db, QStringLiteral("--config"),
                    configPath(), QStringLiteral("--json")},
                   input);
    }

    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<ScriptedLlm> m_llm;
};

QTEST_GUILESS_MAIN(TestCliChat)
#include "test_cli_chat.moc"
