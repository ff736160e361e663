// The save path's use of an LLM: save analysis, consolidation, extraction, undo, and what happens
// when the LLM fails or talks nonsense. The LLM is the real `openai` plugin talking HTTP to a
// scripted server on loopback; storage is the SQLite plugin; the embedder is a test double whose
// vectors decide what counts as similar. Case numbers follow the same list as test_memory.cpp.

#include "counting_storage.h"
#include "fake_embedder.h"
#include "memory/offline_analyzer_p.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/vector_math.h>
#include <mneme/memory/memory.h>

#include <QMutex>
#include <QPromise>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

using namespace mneme;
using mneme::test::CountingStorage;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::ScriptedLlm;
using mneme::test::ScriptedReply;
using mneme::test::TempStore;

namespace {

const Embedding kTopic = {1, 0, 0, 0};
const Embedding kNearTopic = {0.95f, 0.31f, 0, 0}; // cosine 0.95 with kTopic
const Embedding kOther = {0, 0, 1, 0};

Json analysis(const QString &scope, const QStringList &categories = {}, double importance = 0.5)
{
    Json c = Json::array();
    for (const QString &s : categories)
        c.push_back(s.toStdString());
    return Json{{"scope", scope.toStdString()},
                {"categories", c},
                {"importance", importance},
                {"metadata", {{"entities", {"PostgreSQL"}}, {"dates", Json::array()}, {"topics", {"database"}}}}};
}

QStringList stepsOf(const QSignalSpy &spy, const QString &path = {})
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        if (path.isEmpty() || args.at(1).toString() == path)
            out << args.at(0).toString();
    return out;
}

// A provider whose replies the test hands out one by one, counting the requests in flight.
class GatedLlm : public LlmProvider
{
public:
    QString id() const override { return QStringLiteral("test/gated"); }
    Capabilities capabilities() const override { return Capability::JsonSchema; }
    QFuture<ChatResponse> chat(const ChatRequest &) override
    {
        auto promise = std::make_shared<QPromise<ChatResponse>>();
        promise->start();
        QMutexLocker lock(&mutex);
        pending << promise;
        maxInFlight = std::max(maxInFlight, int(pending.size()));
        return promise->future();
    }
    // Answers the oldest request; false when none is waiting.
    bool answerOne(const Json &structured)
    {
        std::shared_ptr<QPromise<ChatResponse>> p;
        {
            QMutexLocker lock(&mutex);
            if (pending.isEmpty())
                return false;
            p = pending.takeFirst();
        }
        ChatResponse r;
        r.text = QString::fromStdString(structured.dump());
        r.structured = structured;
        p->addResult(r);
        p->finish();
        return true;
    }
    QMutex mutex;
    QList<std::shared_ptr<QPromise<ChatResponse>>> pending;
    int maxInFlight = 0;
};

} // namespace

class TestMemoryIntelligence : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<ScriptedLlm> m_llm;
    std::shared_ptr<FakeEmbedder> m_embedder;

    MemoryConfig config(const QString &root = {}, bool withLlm = true) const
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        c.rootScope = root;
        if (withLlm)
            c.llm = m_llm->config();
        return c;
    }
    std::unique_ptr<Memory> open(const QString &root = {}, bool withLlm = true)
    {
        return std::make_unique<Memory>(config(root, withLlm), nullptr, m_embedder);
    }
    // Every record of the store, private ones included.
    static int count(Memory &m) { return m.info(QStringLiteral("/"), ReadContext::asCurator()).recordCount; }

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<TempStore>();
        m_llm = std::make_unique<ScriptedLlm>();
        m_embedder = std::make_shared<FakeEmbedder>(4);
    }
    void cleanup()
    {
        m_llm.reset();
        m_dir.reset();
    }

    // ---- Save analysis -------------------------------------------------------------------------

    // Cases 22 and 25: the LLM fails; the memory is stored with the fields the offline analyzer gives
    // (as without an LLM), not with bare defaults.
    void saveAnalysisFailureFallsBackOffline_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::newRow("http 500") << 500 << QString();
        QTest::newRow("http 401") << 401 << QString();
        QTest::newRow("prose, no json") << 200 << QStringLiteral("I would file this under databases, probably.");
        QTest::newRow("malformed json") << 200 << QStringLiteral("{\"scope\": \"/db\", \"categories\": [");
        QTest::newRow("missing scope") << 200 << QStringLiteral("{\"categories\": [\"decision\"], \"importance\": 0.9}");
        QTest::newRow("scope not a string") << 200 << QStringLiteral("{\"scope\": 42}");
        QTest::newRow("a list instead of an object") << 200 << QStringLiteral("[\"/db\"]");
    }
    void saveAnalysisFailureFallsBackOffline()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        if (status != 200)
            m_llm->onError(QStringLiteral("memory_analysis"), status);
        else
            m_llm->onText(QStringLiteral("memory_analysis"), reply);
        auto m = open();
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        QSignalSpy completed(m.get(), &Memory::llmCallCompleted);
        QSignalSpy failed(m.get(), &Memory::llmCallFailed);
        const MemoryRecord r = m->remember(QStringLiteral("We decided to use PostgreSQL."));
        QCOMPARE(r.scope, QStringLiteral("/"));
        QCOMPARE(r.categories, QStringList{QStringLiteral("decision")});
        QVERIFY2(r.importance > 0.5, qPrintable(QString::number(r.importance))); // a decision weighs more
        QCOMPARE(r.metadata.value("analysis", std::string()), std::string("offline"));
        QCOMPARE(count(*m), 1);
        QVERIFY(m_llm->calls(QStringLiteral("memory_analysis")) >= 1);
        QCOMPARE(stepsOf(paths, QStringLiteral("offline")), QStringList{QStringLiteral("save_analysis")});
        // One call, ending in a failure (HTTP error, unparseable reply) or in a reply with nothing usable.
        QCOMPARE(started.size(), 1);
        QCOMPARE(failed.size() + completed.size(), 1);
        QVERIFY(!paths.first().at(2).toString().isEmpty());
        for (const QList<QVariant> &f : std::as_const(failed))
            QVERIFY(!f.at(2).toString().contains(QStringLiteral("sk-test-secret-key")));
    }

    void saveAnalysisFillsMissingFields_data()
    {
        QTest::addColumn<QString>("reply");
        const QString json = QString::fromStdString(analysis(QStringLiteral("/infra/db"), {QStringLiteral("decision")}, 0.8).dump());
        QTest::newRow("plain json") << json;
        QTest::newRow("fenced") << QStringLiteral("```json\n%1\n```").arg(json);
        QTest::newRow("wrapped in prose") << QStringLiteral("Here is the analysis: %1 Hope it helps.").arg(json);
        QTest::newRow("importance on a 0-10 scale") << QStringLiteral("{\"scope\":\"/infra/db\",\"categories\":[\"decision\"],\"importance\":8}");
        QTest::newRow("reference field names") << QStringLiteral("{\"suggested_scope\":\"infra/db\",\"categories\":[\"decision\",\" \",\"decision\"],"
                                                                 "\"importance\":0.8,\"extracted_metadata\":{\"entities\":[\"PostgreSQL\"]}}");
    }
    void saveAnalysisFillsMissingFields()
    {
        QFETCH(QString, reply);
        m_llm->onText(QStringLiteral("memory_analysis"), reply);
        auto m = open();
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        QSignalSpy completed(m.get(), &Memory::llmCallCompleted);
        const MemoryRecord r = m->remember(QStringLiteral("We decided to use PostgreSQL."));
        QCOMPARE(r.scope, QStringLiteral("/infra/db"));
        QCOMPARE(r.categories, QStringList{QStringLiteral("decision")});
        QCOMPARE(r.importance, 0.8);
        QVERIFY(r.metadata.contains("entities"));
        QCOMPARE(m_llm->calls(QStringLiteral("memory_analysis")), 1);
        QCOMPARE(started.size(), 1);
        QCOMPARE(started.first().at(0).toString(), QStringLiteral("save_analysis"));
        QCOMPARE(completed.size(), 1);
        QCOMPARE(completed.first().at(3).toInt(), 11); // prompt tokens as the server reported them
        QCOMPARE(completed.first().at(4).toInt(), 7);
    }

    void givenFieldsAreKeptAndMetadataMerged()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/elsewhere"), {QStringLiteral("llm-cat")}, 0.9));
        auto m = open();
        RememberOptions o;
        o.scope = QStringLiteral("/mine");
        o.metadata = Json{{"topics", "caller's own"}, {"ticket", 7}};
        const MemoryRecord r = m->remember(QStringLiteral("We decided to use PostgreSQL."), o);
        QCOMPARE(r.scope, QStringLiteral("/mine")); // given: never replaced
        QCOMPARE(r.categories, QStringList{QStringLiteral("llm-cat")});
        QCOMPARE(r.importance, 0.9);
        QCOMPARE(r.metadata["topics"], Json("caller's own")); // the caller's keys win
        QCOMPARE(r.metadata["ticket"], Json(7));
        QCOMPARE(r.metadata["entities"], Json({"PostgreSQL"}));

        // Every field given: no analysis call at all.
        m->remember(QStringLiteral("Another fact entirely."), fields(QStringLiteral("/x")));
        QCOMPARE(m_llm->calls(QStringLiteral("memory_analysis")), 1);
    }

    void promptShowsExistingScopesAndCategories()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/")));
        auto m = open(QStringLiteral("/crew/a"));
        m_embedder->setVector(QStringLiteral("backend fact"), kOther);
        m->remember(QStringLiteral("backend fact"), fields(QStringLiteral("/project/backend"), 0.5, {QStringLiteral("architecture")}));
        m->remember(QStringLiteral("A new note."));
        const QString prompt = m_llm->lastPrompt(QStringLiteral("memory_analysis"));
        QVERIFY2(prompt.contains(QStringLiteral("\"/project\"")), qPrintable(prompt));
        QVERIFY(prompt.contains(QStringLiteral("\"/project/backend\"")));
        QVERIFY(!prompt.contains(QStringLiteral("/crew/a"))); // shown relative to the root
        QVERIFY(prompt.contains(QStringLiteral("\"architecture\"")));
        QVERIFY(prompt.contains(QStringLiteral("A new note.")));
    }

    // A batch whose items have other roots: each prompt shows its own root's scopes only.
    void promptsShowEachItemsOwnRoot()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/")));
        auto m = open(QString());
        m_embedder->setVector(QStringLiteral("alpha fact"), {1, 0, 0, 0});
        m_embedder->setVector(QStringLiteral("beta fact"), {0, 1, 0, 0});
        m_embedder->setVector(QStringLiteral("first note"), {0, 0, 1, 0});
        m_embedder->setVector(QStringLiteral("second note"), {0, 0, 0, 1});
        m->remember(QStringLiteral("alpha fact"), fields(QStringLiteral("/a/alpha-only")));
        m->remember(QStringLiteral("beta fact"), fields(QStringLiteral("/b/beta-only")));
        MemoryInput one{QStringLiteral("first note"), {}};
        one.options.rootScope = QStringLiteral("/a");
        MemoryInput two{QStringLiteral("second note"), {}};
        two.options.rootScope = QStringLiteral("/b");
        QCOMPARE(m->rememberMany(QList<MemoryInput>{one, two}).result().stored, 2);
        const QList<Json> requests = m_llm->requests(QStringLiteral("memory_analysis"));
        QCOMPARE(requests.size(), 2);
        for (const Json &r : requests) {
            const QString prompt = QString::fromStdString(r["messages"].back()["content"].get<std::string>());
            const bool first = prompt.contains(QStringLiteral("first note"));
            QVERIFY2(prompt.contains(first ? QStringLiteral("alpha-only") : QStringLiteral("beta-only")), qPrintable(prompt));
            QVERIFY2(!prompt.contains(first ? QStringLiteral("beta-only") : QStringLiteral("alpha-only")), qPrintable(prompt));
        }
    }

    // Case 31: three items without fields, three analysis calls, three records.
    void batchAnalysesEveryItem()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/inferred")));
        m_embedder->setVector(QStringLiteral("one"), {1, 0, 0, 0});
        m_embedder->setVector(QStringLiteral("two"), {0, 1, 0, 0});
        m_embedder->setVector(QStringLiteral("three"), {0, 0, 1, 0});
        auto m = open();
        const SaveResult res = m->rememberMany({QStringLiteral("one"), QStringLiteral("two"), QStringLiteral("three")}).result();
        QCOMPARE(res.stored, 3);
        QCOMPARE(m_llm->calls(QStringLiteral("memory_analysis")), 3);
        QCOMPARE(m->info(QStringLiteral("/inferred")).recordCount, 3);
    }

    // Case 38 and decision 4: a suggested scope always lands inside the root or the view.
    void suggestedScopesAreClamped_data()
    {
        QTest::addColumn<QString>("root");
        QTest::addColumn<QString>("view");
        QTest::addColumn<QString>("suggested");
        QTest::addColumn<QString>("expected");
        QTest::newRow("case 38") << "/flow/mypipeline"
                                 << ""
                                 << "/quarterly-results"
                                 << "/flow/mypipeline/quarterly-results";
        QTest::newRow("dot-dot escape") << "/crew/a"
                                        << ""
                                        << "/../../etc"
                                        << "/crew/a/etc";
        QTest::newRow("relative escape") << "/crew/a"
                                         << ""
                                         << "../../crew/b/secrets"
                                         << "/crew/a/crew/b/secrets";
        QTest::newRow("root repeated") << "/crew/a"
                                       << ""
                                       << "/crew/a/notes"
                                       << "/crew/a/notes";
        QTest::newRow("slash is the root") << "/crew/a"
                                           << ""
                                           << "/"
                                           << "/crew/a";
        QTest::newRow("only dots") << "/crew/a"
                                   << ""
                                   << "/./.."
                                   << "/crew/a";
        QTest::newRow("no root, messy") << ""
                                        << ""
                                        << "//Team//./notes/"
                                        << "/Team/notes";
        QTest::newRow("no root, escape") << ""
                                         << ""
                                         << "/../../etc/passwd"
                                         << "/etc/passwd";
        QTest::newRow("view") << ""
                              << "/team/a"
                              << "/other"
                              << "/team/a/other";
        QTest::newRow("view under root") << "/crew/x"
                                         << "/agent"
                                         << "/../../../root"
                                         << "/crew/x/agent/root";
        QTest::newRow("control characters") << "/r"
                                            << "" << QStringLiteral("/ok/bad\u0001seg/fine") << "/r/ok/fine";
    }
    void suggestedScopesAreClamped()
    {
        QFETCH(QString, root);
        QFETCH(QString, view);
        QFETCH(QString, suggested);
        QFETCH(QString, expected);
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(suggested));
        auto m = open(root);
        const MemoryRecord r = view.isEmpty() ? m->remember(QStringLiteral("Quarterly results are in."))
                                              : m->scope(view).remember(QStringLiteral("Quarterly results are in."));
        QCOMPARE(r.scope, expected);
    }

    // Case 30: one similarity search per item of a batch (with an LLM, for consolidation); case 43:
    // bounded by the item's scope under the root. Without an LLM and with every field given, none.
    void similaritySearchesPerItem_data()
    {
        QTest::addColumn<bool>("withLlm");
        QTest::addColumn<QString>("root");
        QTest::addColumn<QString>("scope");
        QTest::addColumn<int>("searches");
        QTest::addColumn<QString>("bound");
        QTest::newRow("llm, root and scope") << true << "/crew/a"
                                             << "/inner" << 3 << "/crew/a/inner";
        QTest::newRow("llm, no root") << true << ""
                                      << "/inner" << 3 << "/inner";
        QTest::newRow("no llm, all fields") << false << "/crew/a"
                                            << "/inner" << 0 << "";
    }
    void similaritySearchesPerItem()
    {
        QFETCH(bool, withLlm);
        QFETCH(QString, root);
        QFETCH(QString, scope);
        QFETCH(int, searches);
        QFETCH(QString, bound);
        auto storage = std::make_shared<CountingStorage>(
            PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_dir->path().toStdString()}}));
        Memory m(config(root, withLlm), storage, m_embedder);
        m_embedder->setVector(QStringLiteral("one"), {1, 0, 0, 0});
        m_embedder->setVector(QStringLiteral("two"), {0, 1, 0, 0});
        m_embedder->setVector(QStringLiteral("three"), {0, 0, 1, 0});
        const SaveResult res = m.rememberMany({QStringLiteral("one"), QStringLiteral("two"), QStringLiteral("three")},
                                              fields(scope))
                                   .result();
        QCOMPARE(res.stored, 3);
        const QList<RecordFilter> done = storage->searches();
        QCOMPARE(int(done.size()), searches);
        for (const RecordFilter &f : done)
            QCOMPARE(f.scopes, QStringList{bound});
    }

    // Without an LLM the similar records serve only the offline scope vote: an item whose scope is
    // given, or whose root has no scope below it, is saved without reading other records; plain items
    // under a root with scopes below it are compared with the newest records of each scope (one
    // sampling for the batch, no search) and take the scope of their neighbours.
    void offlineScopeVoteSearchesOnlyWhenItCanChooseAScope()
    {
        auto storage = std::make_shared<CountingStorage>(
            PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_dir->path().toStdString()}}));
        Memory m(config(QString(), false), storage, m_embedder);
        m_embedder->setVector(QStringLiteral("one"), {1, 0, 0, 0});
        m_embedder->setVector(QStringLiteral("two"), {0, 1, 0, 0});
        m_embedder->setVector(QStringLiteral("three"), {0, 0, 1, 0});
        m_embedder->setVector(QStringLiteral("three more"), {0, 0, 0.99f, 0.1f});
        RememberOptions scoped; // scope given, categories and importance inferred
        scoped.scope = QStringLiteral("/");
        QCOMPARE(m.rememberMany({QStringLiteral("one")}, scoped).result().stored, 1);
        QCOMPARE(m.rememberMany({QStringLiteral("two")}, RememberOptions()).result().stored, 1); // only "/" exists
        QCOMPARE(int(storage->searches().size() + storage->samplings().size()), 0);

        scoped.scope = QStringLiteral("/topic");
        QCOMPARE(m.rememberMany({QStringLiteral("three")}, scoped).result().stored, 1);
        QCOMPARE(int(storage->searches().size() + storage->samplings().size()), 0);
        const SaveResult voted = m.rememberMany({QStringLiteral("three more"), QStringLiteral("two more")}, RememberOptions()).result();
        QCOMPARE(voted.stored, 2);
        QCOMPARE(int(storage->samplings().size()), 1); // "/" has a scope below it now: one sampling for the batch
        QCOMPARE(int(storage->searches().size()), 0);
        QCOMPARE(m.get(voted.ids.first())->scope, QStringLiteral("/topic"));
        QCOMPARE(m.get(voted.ids.last())->scope, QStringLiteral("/"));
    }

    // ---- Consolidation -------------------------------------------------------------------------

    // Case 29: the plan says the new content is already covered.
    void consolidationCanSkipTheInsert()
    {
        for (const char *t : {"CrewAI is great.", "CrewAI is wonderful.", "CrewAI is good."})
            m_embedder->setVector(QString::fromLatin1(t), kTopic);
        auto m = open();
        const MemoryRecord stored = m->remember(QStringLiteral("CrewAI is good."), fields(QStringLiteral("/")));
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions", {{{"action", "keep"}, {"id", stored.id.toStdString()}}}}, {"insert_new", false}});
        const SaveResult res = m->rememberMany({QStringLiteral("CrewAI is great."), QStringLiteral("CrewAI is wonderful.")},
                                               fields(QStringLiteral("/")))
                                   .result();
        QCOMPARE(count(*m), 1);
        QCOMPARE(res.stored, 0);
        QCOMPARE(res.ids, QStringList{stored.id});
        QCOMPARE(m_llm->calls(QStringLiteral("consolidation_plan")), 1); // "wonderful" was an intra-batch duplicate
        const QString prompt = m_llm->lastPrompt(QStringLiteral("consolidation_plan"));
        QVERIFY(prompt.contains(stored.id));
        QVERIFY(prompt.contains(QStringLiteral("CrewAI is good.")));
    }

    void consolidationUpdates()
    {
        m_embedder->setVector(QStringLiteral("The team meets on Mondays."), kTopic);
        m_embedder->setVector(QStringLiteral("The team meeting moved to Tuesdays."), kNearTopic);
        m_embedder->setVector(QStringLiteral("The team meets on Tuesdays."), kOther);
        m_embedder->setVector(QStringLiteral("when"), kOther);
        auto m = open();
        RememberOptions o = fields(QStringLiteral("/team"), 0.7, {QStringLiteral("schedule")});
        o.createdAt = QDateTime(QDate(2024, 1, 2), QTime(9, 0), Qt::UTC);
        const MemoryRecord old = m->remember(QStringLiteral("The team meets on Mondays."), o);
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions", {{{"action", "update"}, {"id", old.id.toStdString()}, {"new_content", "The team meets on Tuesdays."}}}},
                           {"insert_new", false}});
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        const MemoryRecord r = m->remember(QStringLiteral("The team meeting moved to Tuesdays."), fields(QStringLiteral("/team")));
        QCOMPARE(r.id, old.id); // the updated record is the result
        QCOMPARE(r.content, QStringLiteral("The team meets on Tuesdays."));
        QCOMPARE(count(*m), 1);
        const MemoryRecord now = *m->get(old.id);
        QCOMPARE(now.createdAt, old.createdAt);
        QCOMPARE(now.categories, old.categories);
        QCOMPARE(now.importance, 0.7);
        const QList<HistoryEntry> h = m->history(old.id);
        QCOMPARE(h.size(), 2);
        QCOMPARE(h.last().event, HistoryEntry::Event::Update);
        QCOMPARE(h.last().oldContent, QStringLiteral("The team meets on Mondays."));
        QCOMPARE(stepsOf(paths, QStringLiteral("llm")), QStringList{QStringLiteral("consolidation")});
        // Recall finds the new wording (the record was re-embedded).
        RecallOptions shallow;
        shallow.depth = RecallDepth::Shallow;
        QCOMPARE(m->recall(QStringLiteral("when"), shallow).value(0).record.id, old.id);

        // Undo brings the old wording back, and undoing the undo re-applies the update.
        QCOMPARE(m->undo(old.id).content, QStringLiteral("The team meets on Mondays."));
        QCOMPARE(m->get(old.id)->content, QStringLiteral("The team meets on Mondays."));
        QCOMPARE(m->undo(old.id).content, QStringLiteral("The team meets on Tuesdays."));
    }

    void consolidationDeletesAndKeeps()
    {
        m_embedder->setVector(QStringLiteral("Alice leads the project."), kTopic);
        m_embedder->setVector(QStringLiteral("Alice is the project's sponsor."), kTopic);
        m_embedder->setVector(QStringLiteral("Bob leads the project now."), kNearTopic);
        auto m = open();
        const MemoryRecord stale = m->remember(QStringLiteral("Alice leads the project."), fields(QStringLiteral("/p")));
        const MemoryRecord kept = m->remember(QStringLiteral("Alice is the project's sponsor."), fields(QStringLiteral("/p")));
        QCOMPARE(count(*m), 2); // identical vectors, different contents: no consolidation without a plan...
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions",
                            {{{"action", "delete"}, {"id", stale.id.toStdString()}, {"reason", "superseded"}},
                             {{"action", "keep"}, {"id", kept.id.toStdString()}},
                             {{"action", "delete"}, {"id", "00000000-made-up"}},
                             {{"action", "update"}, {"id", "7"}, {"new_content", "nonsense"}}}},
                           {"insert_new", true}});
        const MemoryRecord r = m->remember(QStringLiteral("Bob leads the project now."), fields(QStringLiteral("/p")));
        QVERIFY(r.id != stale.id && r.id != kept.id);
        QVERIFY(!m->get(stale.id));
        QVERIFY(m->get(kept.id));
        QCOMPARE(count(*m), 2);
        QCOMPARE(m->history(stale.id).last().event, HistoryEntry::Event::Delete);
        // Undo of the delete restores the record with its id and time.
        const MemoryRecord back = m->undo(stale.id);
        QCOMPARE(back.id, stale.id);
        QCOMPARE(back.content, stale.content);
        QCOMPARE(back.createdAt, stale.createdAt);
        QCOMPARE(count(*m), 3);
    }

    void consolidationNeverLosesTheNewFact()
    {
        m_embedder->setVector(QStringLiteral("Old A."), kTopic);
        m_embedder->setVector(QStringLiteral("New A."), kTopic);
        auto m = open();
        const MemoryRecord old = m->remember(QStringLiteral("Old A."), fields(QStringLiteral("/")));
        // Deletes every similar record and says not to insert: the new fact is inserted anyway.
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions", {{{"action", "delete"}, {"id", old.id.toStdString()}}}}, {"insert_new", false}});
        const MemoryRecord r = m->remember(QStringLiteral("New A."), fields(QStringLiteral("/")));
        QCOMPARE(r.content, QStringLiteral("New A."));
        QCOMPARE(count(*m), 1);
    }

    void crossItemActionsDedup()
    {
        m_embedder->setVector(QStringLiteral("Stored fact."), kTopic);
        m_embedder->setVector(QStringLiteral("First news."), kNearTopic);
        m_embedder->setVector(QStringLiteral("Second news."), {0.95f, -0.31f, 0, 0}); // near the stored, not the first
        auto m = open();
        const MemoryRecord stored = m->remember(QStringLiteral("Stored fact."), fields(QStringLiteral("/")));
        m_llm->on(QStringLiteral("consolidation_plan"), [id = stored.id](const Json &body) {
            const QString prompt = QString::fromStdString(body["messages"].back()["content"].get<std::string>());
            const std::string text = prompt.contains(QStringLiteral("First news.")) ? "Rewritten by the first." : "Rewritten by the second.";
            return ScriptedLlm::completion(QString::fromStdString(
                Json{{"actions", {{{"action", "update"}, {"id", id.toStdString()}, {"new_content", text}}}}, {"insert_new", true}}.dump()));
        });
        const SaveResult res =
            m->rememberMany({QStringLiteral("First news."), QStringLiteral("Second news.")}, fields(QStringLiteral("/"))).result();
        QCOMPARE(res.stored, 2);
        QCOMPARE(res.updated, 1);
        QCOMPARE(m->get(stored.id)->content, QStringLiteral("Rewritten by the first."));
        QCOMPARE(m->history(stored.id).size(), 2); // one update, not two
    }

    // An item whose plan relied on an action another item's plan pre-empted is stored in its own right,
    // and a plan that says "covered" is believed only for a record at least consolidation_threshold close.
    void preemptedPlansStillStoreTheFact()
    {
        m_embedder->setVector(QStringLiteral("I live in Munich."), kTopic);
        m_embedder->setVector(QStringLiteral("I like pizza."), {0.6f, 0, 0.8f, 0}); // 0.6 from kTopic
        m_embedder->setVector(QStringLiteral("I moved to Berlin."), kNearTopic);
        m_embedder->setVector(QStringLiteral("My new address is Hauptstr 5 in Berlin."), {0.95f, -0.31f, 0, 0});
        auto m = open();
        const MemoryRecord munich = m->remember(QStringLiteral("I live in Munich."), fields(QStringLiteral("/")));
        const MemoryRecord pizza = m->remember(QStringLiteral("I like pizza."), fields(QStringLiteral("/")));
        m_llm->on(QStringLiteral("consolidation_plan"), [id = munich.id.toStdString()](const Json &body) {
            const std::string prompt = body["messages"].back()["content"].get<std::string>();
            const Json plan = prompt.find("I moved to Berlin.") != std::string::npos
                                ? Json{{"actions", {{{"action", "delete"}, {"id", id}}}}, {"insert_new", true}}
                                : Json{{"actions", {{{"action", "update"}, {"id", id}, {"new_content", "I live at Hauptstr 5 in Berlin."}}}},
                                       {"insert_new", false}};
            return ScriptedLlm::completion(QString::fromStdString(plan.dump()));
        });
        const SaveResult res = m->rememberMany({QStringLiteral("I moved to Berlin."), QStringLiteral("My new address is Hauptstr 5 in Berlin.")},
                                               fields(QStringLiteral("/")))
                                   .result();
        QCOMPARE(res.stored, 2);
        QCOMPARE(res.deleted, 1);
        QCOMPARE(res.updated, 0);
        QVERIFY(!m->get(munich.id));
        QVERIFY(!res.ids.contains(pizza.id));
        QCOMPARE(m->get(pizza.id)->content, QStringLiteral("I like pizza."));

        // "Covered" by a kept record below consolidation_threshold while the close one is deleted: not
        // believed, the fact is stored.
        m_embedder->setVector(QStringLiteral("Pizza night is on Friday."), kTopic);
        m_embedder->setVector(QStringLiteral("We order from Luigi's."), {0.6f, 0.8f, 0, 0});
        m_embedder->setVector(QStringLiteral("Pizza night moved to Saturday."), kNearTopic); // 0.95 and 0.82
        ForgetOptions pizzaOnly;
        pizzaOnly.ids = {pizza.id};
        m->forget(pizzaOnly);
        const MemoryRecord close = m->remember(QStringLiteral("Pizza night is on Friday."), fields(QStringLiteral("/food")));
        const MemoryRecord far = m->remember(QStringLiteral("We order from Luigi's."), fields(QStringLiteral("/food")));
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions", {{{"action", "delete"}, {"id", close.id.toStdString()}}, {{"action", "keep"}, {"id", far.id.toStdString()}}}},
                           {"insert_new", false}});
        const MemoryRecord r = m->remember(QStringLiteral("Pizza night moved to Saturday."), fields(QStringLiteral("/food")));
        QCOMPARE(r.content, QStringLiteral("Pizza night moved to Saturday."));
        QVERIFY(!m->get(close.id));
        QCOMPARE(m->info(QStringLiteral("/food")).recordCount, 2);
    }

    void belowThresholdNoConsolidation()
    {
        m_embedder->setVector(QStringLiteral("A"), kTopic);
        m_embedder->setVector(QStringLiteral("B"), {0.7f, 0.71f, 0, 0}); // cosine 0.70 < 0.85
        auto m = open();
        m->remember(QStringLiteral("A"), fields(QStringLiteral("/")));
        m->remember(QStringLiteral("B"), fields(QStringLiteral("/")));
        QCOMPARE(m_llm->calls(QStringLiteral("consolidation_plan")), 0);
        QCOMPARE(count(*m), 2);
    }

    void consolidationFailureInsertsAndTouchesNothing_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::newRow("http 503") << 503 << QString();
        QTest::newRow("garbage") << 200 << QStringLiteral("delete everything!!!");
        QTest::newRow("wrong shape") << 200 << QStringLiteral("{\"actions\": \"delete all\", \"insert_new\": \"no\"}");
    }
    void consolidationFailureInsertsAndTouchesNothing()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        if (status != 200)
            m_llm->onError(QStringLiteral("consolidation_plan"), status);
        else
            m_llm->onText(QStringLiteral("consolidation_plan"), reply);
        m_embedder->setVector(QStringLiteral("Stored."), kTopic);
        m_embedder->setVector(QStringLiteral("New."), kTopic);
        auto m = open();
        const MemoryRecord stored = m->remember(QStringLiteral("Stored."), fields(QStringLiteral("/")));
        const MemoryRecord r = m->remember(QStringLiteral("New."), fields(QStringLiteral("/")));
        QVERIFY(r.id != stored.id);
        QCOMPARE(count(*m), 2);
        QCOMPARE(m->get(stored.id)->content, QStringLiteral("Stored."));
    }

    // Re-remembering an identical fact creates nothing, deletes nothing and asks the LLM nothing.
    void identicalReAddIsANoOp_data()
    {
        QTest::addColumn<bool>("withScope");
        QTest::newRow("scope given") << true;
        QTest::newRow("scope chosen by the LLM") << false;
    }
    void identicalReAddIsANoOp()
    {
        QFETCH(bool, withScope);
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/db")));
        m_llm->onJson(QStringLiteral("consolidation_plan"), Json{{"actions", Json::array()}, {"insert_new", true}});
        auto m = open();
        const RememberOptions o = withScope ? fields(QStringLiteral("/db")) : RememberOptions();
        const MemoryRecord first = m->remember(QStringLiteral("We use PostgreSQL 16."), o);
        const int callsAfterFirst = m_llm->totalCalls();
        const MemoryRecord again = m->remember(QStringLiteral("We use PostgreSQL 16."), o);
        QCOMPARE(again.id, first.id);
        QCOMPARE(count(*m), 1);
        QCOMPARE(m_llm->totalCalls(), callsAfterFirst);
        QCOMPARE(m->history(first.id).size(), 1);
        const SaveResult res = m->rememberMany({QStringLiteral("We use PostgreSQL 16.")}, o).result();
        QCOMPARE(res.existing, 1);
        QCOMPARE(res.stored, 0);
    }

    // Decision 6: only records of the same source and privacy are compared.
    void consolidationRespectsSourceAndPrivacy()
    {
        m_embedder->setVector(QStringLiteral("Alice's salary is 100k."), kTopic);
        m_embedder->setVector(QStringLiteral("The salary band is 90-110k."), kTopic);
        auto m = open();
        RememberOptions priv = fields(QStringLiteral("/hr"));
        priv.source = QStringLiteral("user:alice");
        priv.isPrivate = true;
        const MemoryRecord secret = m->remember(QStringLiteral("Alice's salary is 100k."), priv);
        m_llm->onJson(QStringLiteral("consolidation_plan"),
                      Json{{"actions", {{{"action", "update"}, {"id", secret.id.toStdString()}, {"new_content", "leaked"}}}},
                           {"insert_new", false}});
        RememberOptions shared = fields(QStringLiteral("/hr"));
        shared.source = QStringLiteral("user:bob");
        m->remember(QStringLiteral("The salary band is 90-110k."), shared);
        QCOMPARE(m_llm->calls(QStringLiteral("consolidation_plan")), 0);
        QCOMPARE(m->get(secret.id, ReadContext::asCurator())->content, QStringLiteral("Alice's salary is 100k."));
        QCOMPARE(m->info(QStringLiteral("/"), ReadContext::asCurator()).recordCount, 2);
        // The same source but shared (not private): not compared either.
        RememberOptions alicePublic = fields(QStringLiteral("/hr"));
        alicePublic.source = QStringLiteral("user:alice");
        m_embedder->setVector(QStringLiteral("Alice works in HR."), kTopic);
        m->remember(QStringLiteral("Alice works in HR."), alicePublic);
        QCOMPARE(m_llm->calls(QStringLiteral("consolidation_plan")), 0);
        // Same source and privacy: compared; the update keeps the source and privacy.
        m_embedder->setVector(QStringLiteral("Alice's salary rose to 105k."), kTopic);
        m->remember(QStringLiteral("Alice's salary rose to 105k."), priv);
        QCOMPARE(m_llm->calls(QStringLiteral("consolidation_plan")), 1);
        const MemoryRecord updated = *m->get(secret.id, ReadContext::of(QStringLiteral("user:alice")));
        QCOMPARE(updated.content, QStringLiteral("leaked"));
        QVERIFY(updated.isPrivate);
        QCOMPARE(updated.source, QStringLiteral("user:alice"));
    }

    // ---- Extraction ----------------------------------------------------------------------------

    // Case 18.
    void extractionUsesTheLlm()
    {
        m_llm->onJson(QStringLiteral("extracted_memories"),
                      Json{{"memories", {"We use Python for the backend.", "API rate limit is 100/min.", " ", "We use Python for the backend."}}});
        auto m = open();
        const QStringList facts = m->extractMemories(QStringLiteral("Long meeting notes about Python and rate limits."));
        QCOMPARE(facts, (QStringList{QStringLiteral("We use Python for the backend."), QStringLiteral("API rate limit is 100/min.")}));
        QCOMPARE(m_llm->calls(QStringLiteral("extracted_memories")), 1);
        QVERIFY(m_llm->lastPrompt(QStringLiteral("extracted_memories")).contains(QStringLiteral("Long meeting notes")));
        // An empty list is an answer too: nothing worth keeping.
        m_llm->onJson(QStringLiteral("extracted_memories"), Json{{"memories", Json::array()}});
        QVERIFY(m->extractMemories(QStringLiteral("Hi there!")).isEmpty());
    }

    // Case 19.
    void extractionOfBlankTextCallsNothing()
    {
        auto m = open();
        QVERIFY(m->extractMemories(QString()).isEmpty());
        QVERIFY(m->extractMemories(QStringLiteral(" \n\t ")).isEmpty());
        QCOMPARE(m_llm->totalCalls(), 0);
    }

    // Case 23, and the offline splitter when the LLM fails: nothing is lost.
    void extractionFallsBackToTheSplitter_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::newRow("http 500") << 500 << QString();
        QTest::newRow("http 429") << 429 << QString();
        QTest::newRow("prose") << 200 << QStringLiteral("Sure! The memories are: Python, rate limits.");
        QTest::newRow("missing field") << 200 << QStringLiteral("{\"facts\": [\"x\"]}");
        QTest::newRow("malformed") << 200 << QStringLiteral("{\"memories\": [\"unterminated");
    }
    void extractionFallsBackToTheSplitter()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        if (status != 200)
            m_llm->onError(QStringLiteral("extracted_memories"), status);
        else
            m_llm->onText(QStringLiteral("extracted_memories"), reply);
        auto m = open();
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        QCOMPARE(m->extractMemories(QStringLiteral("We use Python for the backend.")),
                 QStringList{QStringLiteral("We use Python for the backend.")});
        QCOMPARE(m->extractMemories(QStringLiteral("We use Python. The limit is 100 per minute.")),
                 (QStringList{QStringLiteral("We use Python."), QStringLiteral("The limit is 100 per minute.")}));
        QCOMPARE(stepsOf(paths, QStringLiteral("offline")), (QStringList{QStringLiteral("extraction"), QStringLiteral("extraction")}));
        QVERIFY(!paths.first().at(2).toString().isEmpty());
    }

    // ---- Without an LLM: the offline analyzer ----------------------------------------------------

    void offlineAnalyzerFillsFieldsAndSaysSo()
    {
        m_embedder->setVector(QStringLiteral("The backend runs on PostgreSQL."), kTopic);
        m_embedder->setVector(QStringLiteral("PostgreSQL backups run nightly."), kNearTopic);
        m_embedder->setVector(QStringLiteral("Lunch was good."), kOther);
        auto m = open(QString(), false);
        m->remember(QStringLiteral("The backend runs on PostgreSQL."), fields(QStringLiteral("/project/db"), 0.5, {QStringLiteral("database")}));
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        const MemoryRecord near = m->remember(QStringLiteral("PostgreSQL backups run nightly."));
        QCOMPARE(near.scope, QStringLiteral("/project/db")); // the scope of its nearest neighbours
        QCOMPARE(near.metadata["analysis"], Json("offline"));
        QVERIFY(near.metadata.contains("topics"));
        const MemoryRecord far = m->remember(QStringLiteral("Lunch was good."));
        QCOMPARE(far.scope, QStringLiteral("/")); // nothing similar: the root
        QCOMPARE(stepsOf(paths, QStringLiteral("offline")), (QStringList{QStringLiteral("save_analysis"), QStringLiteral("save_analysis")}));
        QCOMPARE(paths.first().at(2).toString(), QStringLiteral("no LLM is configured"));
        QCOMPARE(started.size(), 0);
        QSignalSpy extraction(m.get(), &Memory::analysisCompleted);
        QCOMPARE(m->extractMemories(QStringLiteral("One. Two.")).size(), 2);
        QCOMPARE(stepsOf(extraction, QStringLiteral("offline")), QStringList{QStringLiteral("extraction")});
    }

    // The batch's offline analysis chooses what the analysis of each record against the whole store
    // chooses, where every scope holds at most the exemplars it reads of each (16): the scope voted by
    // the record's nearest stored records (exact cosines here), and the categories and importance
    // of OfflineAnalyzer.
    void offlineBatchAnalysisMatchesPerRecord()
    {
        Memory m(config(QString(), false));
        const QStringList db{QStringLiteral("We decided to use PostgreSQL for the user database."),
                             QStringLiteral("The database backups run nightly at two."),
                             QStringLiteral("PostgreSQL 16 is the version of the user database."),
                             QStringLiteral("The database schema has a users table and an orders table."),
                             QStringLiteral("Database migrations run with Flyway before each deploy.")};
        const QStringList acme{QStringLiteral("Acme Corp prefers email communication."),
                               QStringLiteral("Acme Corp pays invoices within thirty days."),
                               QStringLiteral("The Acme Corp contact is Jane Doe, their purchasing lead."),
                               QStringLiteral("Acme Corp asked for a discount on the annual plan.")};
        const QStringList travel{QStringLiteral("The team offsite is in Lisbon in May."),
                                 QStringLiteral("Flights to Lisbon are booked for the whole team."),
                                 QStringLiteral("The Lisbon hotel is near the river.")};
        RememberOptions given;
        given.importance = 0.5;
        given.categories = QStringList{QStringLiteral("database"), QStringLiteral("customer")};
        for (const auto &[scope, texts] : {std::pair{QStringLiteral("/project/db"), db}, std::pair{QStringLiteral("/customer/acme"), acme},
                                           std::pair{QStringLiteral("/team/travel"), travel}}) {
            given.scope = scope;
            QCOMPARE(m.rememberMany(texts, given).result().stored, int(texts.size()));
        }
        const QStringList items{QStringLiteral("The user database runs PostgreSQL with a replica."),
                                QStringLiteral("Acme Corp asked us to email the invoices."),
                                QStringLiteral("Lisbon flights leave on Friday morning."),
                                QStringLiteral("We must never drop the orders table of the database."),
                                QStringLiteral("Jane Doe from Acme Corp called about the customer discount."),
                                QStringLiteral("Lunch is at noon."),
                                QStringLiteral("maybe the river walk?"),
                                QStringLiteral("The hotel near the river in Lisbon has a pool.")};
        // Per record: every stored record, its cosine to the item, the five best vote (decision of
        // consolidation_limit) with the builtin embedder's bar.
        std::vector<MemoryRecord> stored;
        for (const MemoryRecord &r : m.storage().list({}, -1, 0))
            stored.push_back(*m.storage().get(r.id, true));
        const QStringList categories = m.storage().categories({}).keys();
        const std::vector<Embedding> vectors = m.embedder().embed(items);
        QStringList expectedScopes;
        for (const Embedding &v : vectors) {
            std::vector<std::pair<double, QString>> scored;
            for (const MemoryRecord &r : stored)
                scored.emplace_back(VectorMath::cosine(v, r.embedding), r.scope);
            std::stable_sort(scored.begin(), scored.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
            QList<QPair<QString, double>> neighbours;
            for (std::size_t k = 0; k < std::min<std::size_t>(5, scored.size()); ++k)
                neighbours << qMakePair(scored[k].second, scored[k].first);
            expectedScopes << OfflineAnalyzer::chooseScope(neighbours, QStringLiteral("/"), 0.3);
        }
        const SaveResult saved = m.rememberMany(items).result();
        QCOMPARE(saved.stored, int(items.size()));
        QStringList scopes;
        for (int i = 0; i < items.size(); ++i) {
            const MemoryRecord r = *m.get(saved.ids[i]);
            scopes << r.scope;
            QCOMPARE(r.categories, OfflineAnalyzer::categories(items[i], categories));
            QCOMPARE(r.importance, OfflineAnalyzer::importance(items[i], MemoryConfig().defaultImportance));
        }
        QCOMPARE(scopes, expectedScopes);
        // The fixed set does exercise the vote: related items join their topic, unrelated ones stay at the root.
        QCOMPARE(scopes.at(0), QStringLiteral("/project/db"));
        QCOMPARE(scopes.at(1), QStringLiteral("/customer/acme"));
        QCOMPARE(scopes.at(5), QStringLiteral("/"));
    }

    // Where it differs from a search of the whole store: a scope's older records (past the newest 16)
    // do not vote. A stored record's exact words are still found in any scope under the root, so
    // remembering them again stores nothing.
    void offlineBatchAnalysisReadsTheNewestOfEachScope()
    {
        Memory m(config(QString(), false));
        RememberOptions given;
        given.scope = QStringLiteral("/old");
        given.importance = 0.5;
        given.categories = QStringList();
        QCOMPARE(m.rememberMany({QStringLiteral("Kubernetes cluster upgrades happen on the first Monday.")}, given).result().stored, 1);
        QStringList filler;
        for (int i = 0; i < 20; ++i)
            filler << QStringLiteral("Garden note %1: water the tomatoes and the basil.").arg(i);
        QCOMPARE(m.rememberMany(filler, given).result().stored, 20);
        given.scope = QStringLiteral("/ops");
        QCOMPARE(m.rememberMany({QStringLiteral("The Kubernetes cluster runs on three nodes.")}, given).result().stored, 1);
        // The item is nearest to the record in /old, but that record is not among its 16 newest: /ops wins.
        const SaveResult voted = m.rememberMany({QStringLiteral("Kubernetes cluster upgrades happen on the first Monday of each month.")}).result();
        QCOMPARE(m.get(voted.ids.first())->scope, QStringLiteral("/ops"));
        // The same words as the old record: found, not stored again.
        const SaveResult again = m.rememberMany({QStringLiteral("Kubernetes cluster upgrades happen on the first Monday.")}).result();
        QCOMPARE(again.stored, 0);
        QCOMPARE(again.existing, 1);
        QCOMPARE(m.get(again.ids.first())->scope, QStringLiteral("/old"));
    }

    // With the builtin embedder (lower cosines for related sentences), a related note still finds its scope.
    void offlineScopeWithTheBuiltinEmbedder()
    {
        Memory m(config(QString(), false));
        QVERIFY(m.embedder().id().startsWith(QLatin1String("builtin/")));
        m.remember(QStringLiteral("We decided to use PostgreSQL for the user database."), fields(QStringLiteral("/project/db")));
        m.remember(QStringLiteral("Acme Corp prefers email communication."), fields(QStringLiteral("/customer/acme")));
        QCOMPARE(m.remember(QStringLiteral("The user database runs PostgreSQL 16.")).scope, QStringLiteral("/project/db"));
        QCOMPARE(m.remember(QStringLiteral("Acme Corp asked us to email the invoices.")).scope, QStringLiteral("/customer/acme"));
        QCOMPARE(m.remember(QStringLiteral("Lunch is at noon.")).scope, QStringLiteral("/"));
    }

    void brokenLlmConfigurationFallsBack()
    {
        MemoryConfig c = config();
        c.llm = Json{{"provider", "no-such-provider"}};
        Memory m(c, nullptr, m_embedder);
        QSignalSpy failed(&m, &Memory::llmCallFailed);
        const MemoryRecord r = m.remember(QStringLiteral("A fact."));
        QCOMPARE(r.scope, QStringLiteral("/"));
        QCOMPARE(failed.size(), 1);
        QVERIFY(failed.first().at(2).toString().contains(QStringLiteral("no-such-provider")));
        QCOMPARE(m.extractMemories(QStringLiteral("One fact. Another fact.")).size(), 2);
    }

    // Only storage and embedder failures raise.
    void embedderFailureStillRaises()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/x")));
        auto m = open();
        m_embedder->failWith(QStringLiteral("embedder down"));
        QCOMPARE(errorOf([&] { m->remember(QStringLiteral("A fact.")); }).kind(), ErrorKind::Embedder);
        m_embedder->failWith(QString());
        QCOMPARE(count(*m), 0);
    }

    // A batch's analysis calls run concurrently, but at most 8 at a time.
    void batchCallsAreBounded()
    {
        auto gated = std::make_shared<GatedLlm>();
        auto embedder = std::make_shared<FakeEmbedder>(64);
        Memory memory(config(QString(), false), nullptr, embedder);
        Memory *m = &memory;
        m->setLlm(gated);
        QStringList texts;
        for (int i = 0; i < 20; ++i) {
            Embedding v(64, 0.0f);
            v[size_t(i)] = 1; // 20 unrelated facts: no dedup, no consolidation
            texts << QStringLiteral("fact number %1").arg(i);
            embedder->setVector(texts.last(), v);
        }
        QFuture<SaveResult> saved = m->rememberMany(texts);
        int answered = 0;
        while (!saved.isFinished()) {
            if (gated->answerOne(analysis(QStringLiteral("/batch"))))
                ++answered;
            else
                QThread::msleep(1);
        }
        QCOMPARE(saved.result().stored, 20);
        QCOMPARE(answered, 20);
        QCOMPARE(gated->maxInFlight, 8);
        QCOMPARE(m->info(QStringLiteral("/batch")).recordCount, 20);
    }

    // Case 41, the memory part: a Memory can share the provider of its crew or agent.
    void sharedProviderIsUsed()
    {
        m_llm->onJson(QStringLiteral("memory_analysis"), analysis(QStringLiteral("/shared")));
        auto m = open(QString(), false);
        QVERIFY(!m->llm());
        const std::shared_ptr<LlmProvider> agentLlm = m_llm->provider();
        m->setLlm(agentLlm);
        QCOMPARE(m->llm().get(), agentLlm.get());
        QCOMPARE(m->remember(QStringLiteral("A fact.")).scope, QStringLiteral("/shared"));
        m->setLlm(nullptr); // back to the configuration's: none
        QVERIFY(!m->llm());
        QCOMPARE(m->remember(QStringLiteral("Another fact.")).metadata["analysis"], Json("offline"));
    }

    // ---- Undo ----------------------------------------------------------------------------------

    void undoRefusals()
    {
        auto m = open(QString(), false);
        const MemoryRecord r = m->remember(QStringLiteral("A fact."), fields(QStringLiteral("/")));
        QCOMPARE(errorOf([&] { m->undo(r.id); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(errorOf([&] { m->undo(QStringLiteral("no-such-id")); }).kind(), ErrorKind::NotFound);
        UpdateOptions u;
        u.importance = 0.9;
        m->update(r.id, u);
        m.reset();
        MemoryConfig ro = config(QString(), false);
        ro.readOnly = true;
        Memory reader(ro, nullptr, m_embedder);
        QCOMPARE(errorOf([&] { reader.undo(r.id); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(reader.get(r.id)->importance, 0.9);
    }

    void undoRestoresFieldsOfAnUpdate()
    {
        auto m = open(QString(), false);
        const MemoryRecord r = m->remember(QStringLiteral("A fact."), fields(QStringLiteral("/a"), 0.3, {QStringLiteral("x")}));
        UpdateOptions u;
        u.scope = QStringLiteral("/b");
        u.categories = QStringList{QStringLiteral("y")};
        u.importance = 0.9;
        m->update(r.id, u);
        const MemoryRecord back = m->undo(r.id);
        QCOMPARE(back.scope, QStringLiteral("/a"));
        QCOMPARE(back.categories, QStringList{QStringLiteral("x")});
        QCOMPARE(back.importance, 0.3);
        QCOMPARE(back.content, QStringLiteral("A fact."));
        QCOMPARE(m->history(r.id).size(), 3);
    }
};

QTEST_GUILESS_MAIN(TestMemoryIntelligence)
#include "test_memory_intelligence.moc"
