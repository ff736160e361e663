// Memory end to end over the real SQLite storage plugin (loaded through the PluginRegistry) and an
// embedder whose vectors the test controls. Case numbers follow the list of CrewAI behaviours these tests were written from.

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>

#include <QSemaphore>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::GateEmbedder;
using mneme::test::fields;
using mneme::test::TempStore;

namespace {

// Returns vectors of two lengths in one batch.
class RaggedEmbedder : public FakeEmbedder
{
public:
    RaggedEmbedder() : FakeEmbedder(4) {}
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        std::vector<Embedding> out;
        for (qsizetype i = 0; i < texts.size(); ++i)
            out.push_back(Embedding(i % 2 ? 8 : 4, 0.5f));
        return out;
    }
};

RecallOptions shallow(int limit = 10)
{
    RecallOptions o;
    o.depth = RecallDepth::Shallow;
    o.limit = limit;
    return o;
}

UpdateOptions newContent(const QString &content)
{
    UpdateOptions u;
    u.content = content;
    return u;
}

} // namespace

class TestMemory : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;

    MemoryConfig config(const QString &root = {}) const
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        c.rootScope = root;
        return c;
    }
    std::unique_ptr<Memory> open(std::shared_ptr<Embedder> e = nullptr, const QString &root = {})
    {
        if (!e)
            e = std::make_shared<FakeEmbedder>();
        return std::make_unique<Memory>(config(root), nullptr, e);
    }
    // Every record of the store, private ones included.
    static int count(Memory &m) { return m.info(QStringLiteral("/"), ReadContext::asCurator()).recordCount; }

private Q_SLOTS:
    void init() { m_dir = std::make_unique<TempStore>(); }
    void cleanup() { m_dir.reset(); }

    void opensWithDefaultsThroughPlugins()
    {
        // No injected parts: SQLite and the builtin embedder come from the registry.
        Memory m(config());
        QVERIFY(m.embedder().id().startsWith(QLatin1String("builtin/hash-v"))); // the plugin's default model
        QVERIFY(m.storage().location().endsWith(QStringLiteral("memory.db")));
        const MemoryRecord r = m.remember(QStringLiteral("The API rate limit is 1000 requests per minute."));
        // Without an LLM the offline analyzer fills the missing fields, and says so.
        QCOMPARE(r.scope, QStringLiteral("/")); // nothing stored yet to take a scope from
        QCOMPARE(r.metadata["analysis"], Json("offline"));
        QVERIFY(r.importance > 0.5); // a fact with a number in it
        const auto matches = m.recall(QStringLiteral("What is the API rate limit?"), shallow());
        QCOMPARE(matches.size(), 1);
        QCOMPARE(matches.first().record.id, r.id);
    }

    // Case 8.
    void reranksByRecencyAndImportance()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("old fact"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("new fact"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("query"), {1, 0, 0, 0});
        auto m = open(e);
        RememberOptions old = fields(QStringLiteral("/"), 0.1);
        old.createdAt = nowUtc().addDays(-90);
        m->remember(QStringLiteral("old fact"), old);
        m->remember(QStringLiteral("new fact"), fields(QStringLiteral("/"), 1.0));
        const auto matches = m->recall(QStringLiteral("query"), shallow());
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].record.content, QStringLiteral("new fact"));
        QVERIFY(matches[0].score > matches[1].score);
        QCOMPARE(matches[0].signalValues.semantic, 1.0);
        QVERIFY(matches[0].matchReasons.contains(QStringLiteral("recency")));
        QVERIFY(!matches[1].matchReasons.contains(QStringLiteral("recency")));
    }

    // standing_exponent: recency orders records about as relevant as the best; a new record 80 % as
    // relevant as an old one passes it with the square, not with the default 8.
    void recencyWeighsAmongTheAboutAsRelevant_data()
    {
        QTest::addColumn<double>("exponent");
        QTest::addColumn<QString>("first");
        QTest::newRow("2") << 2.0 << QStringLiteral("new fact");
        QTest::newRow("8 (default)") << 8.0 << QStringLiteral("old fact");
    }

    void recencyWeighsAmongTheAboutAsRelevant()
    {
        QFETCH(double, exponent);
        QFETCH(QString, first);
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("old fact"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("new fact"), {0.8f, 0.6f, 0, 0});
        e->setVector(QStringLiteral("query"), {1, 0, 0, 0});
        MemoryConfig c = MemoryConfig::fromJson(Json{{"standing_exponent", exponent}});
        c.storage = config().storage;
        Memory m(c, nullptr, e);
        RememberOptions old = fields(QStringLiteral("/"), 0.5);
        old.createdAt = nowUtc().addDays(-90);
        m.remember(QStringLiteral("old fact"), old);
        m.remember(QStringLiteral("new fact"), fields(QStringLiteral("/"), 0.5));
        const auto matches = m.recall(QStringLiteral("query"), shallow());
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].record.content, first);
    }

    // Case 11.
    void listsScopes()
    {
        auto m = open();
        m->remember(QStringLiteral("root fact"), fields(QStringLiteral("/")));
        m->remember(QStringLiteral("team fact"), fields(QStringLiteral("/team")));
        const QStringList scopes = m->listScopes(QStringLiteral("/"));
        QVERIFY(scopes.contains(QStringLiteral("/team")));
        QVERIFY(!scopes.contains(QStringLiteral("/")));
        QCOMPARE(m->info(QStringLiteral("/")).recordCount, 2);
        QCOMPARE(m->info(QStringLiteral("/team")).recordCount, 1);
    }

    // Case 12.
    void remembersAndRecalls()
    {
        auto m = open();
        m->remember(QStringLiteral("We decided to use Python."), fields(QStringLiteral("/project"), 0.7, {QStringLiteral("decision")}));
        RecallOptions o = shallow();
        o.scopes = {QStringLiteral("/project")};
        const auto matches = m->recall(QStringLiteral("Python decision"), o);
        QVERIFY(!matches.isEmpty());
        QCOMPARE(matches.first().record.scope, QStringLiteral("/project"));
        QVERIFY(matches.first().record.content.contains(QStringLiteral("Python")));
        QCOMPARE(matches.first().record.categories, QStringList{QStringLiteral("decision")});
        QCOMPARE(matches.first().record.importance, 0.7);
    }

    // Case 13 and decision 2.
    void forgetsASubtreeOnly()
    {
        auto m = open();
        m->remember(QStringLiteral("at x"), fields(QStringLiteral("/x")));
        m->remember(QStringLiteral("below x"), fields(QStringLiteral("/x/y")));
        m->remember(QStringLiteral("at root"), fields(QStringLiteral("/")));
        m->remember(QStringLiteral("sibling xy"), fields(QStringLiteral("/xy")));
        ForgetOptions f;
        f.scope = QStringLiteral("/x");
        QCOMPARE(m->forget(f), 2);
        QCOMPARE(m->info(QStringLiteral("/x")).recordCount, 0);
        QCOMPARE(count(*m), 2); // root and /xy survive
        QCOMPARE(m->listRecords(QStringLiteral("/")).size(), 2);
    }

    void forgetsByIdCategoryAndAge()
    {
        auto m = open();
        const auto a = m->remember(QStringLiteral("alpha"), fields(QStringLiteral("/"), 0.5, {QStringLiteral("keep")}));
        const auto b = m->remember(QStringLiteral("beta"), fields(QStringLiteral("/"), 0.5, {QStringLiteral("drop")}));
        RememberOptions old = fields(QStringLiteral("/"));
        old.createdAt = QDateTime(QDate(2020, 1, 1), QTime(0, 0), Qt::UTC);
        m->remember(QStringLiteral("gamma"), old);
        ForgetOptions byCategory;
        byCategory.categories = {QStringLiteral("drop")};
        QCOMPARE(m->forget(byCategory), 1);
        ForgetOptions byAge;
        byAge.olderThan = QDateTime(QDate(2021, 1, 1), QTime(0, 0), Qt::UTC);
        QCOMPARE(m->forget(byAge), 1);
        ForgetOptions byId;
        byId.ids = {a.id};
        QCOMPARE(m->forget(byId), 1);
        QCOMPARE(count(*m), 0);
        const auto h = m->history(b.id);
        QCOMPARE(h.size(), 2);
        QCOMPARE(h.last().event, HistoryEntry::Event::Delete);
        QCOMPARE(h.last().oldContent, QStringLiteral("beta"));
    }

    // Case 14.
    void scopeViewRecalls()
    {
        auto m = open();
        MemoryScope view = m->scope(QStringLiteral("/crew/1"));
        const MemoryRecord r = view.remember(QStringLiteral("Found three relevant papers."), RememberOptions{});
        QCOMPARE(r.scope, QStringLiteral("/crew/1"));
        QVERIFY(!view.recall(QStringLiteral("papers"), shallow()).isEmpty());
        MemoryScope sub = view.subscope(QStringLiteral("project-alpha"));
        QCOMPARE(sub.path(), QStringLiteral("/crew/1/project-alpha"));
        const MemoryRecord s = sub.remember(QStringLiteral("alpha detail"), fields(QStringLiteral("/task")));
        QCOMPARE(s.scope, QStringLiteral("/crew/1/project-alpha/task"));
        // A view cannot escape its subtree.
        QCOMPARE(errorOf([&] { view.remember(QStringLiteral("x"), fields(QStringLiteral("/../../etc"))); }).kind(),
                 ErrorKind::InvalidArgument);
        m->remember(QStringLiteral("outside papers"), fields(QStringLiteral("/crew/2")));
        for (const auto &match : view.recall(QStringLiteral("papers"), shallow()))
            QVERIFY(match.record.scope.startsWith(QStringLiteral("/crew/1")));
        QCOMPARE(view.info().recordCount, 2);
        QCOMPARE(view.listScopes(), QStringList{QStringLiteral("/crew/1/project-alpha")});
    }

    // Case 15.
    void readOnlySliceRefusesWrites()
    {
        auto m = open();
        MemorySlice slice = m->slice({QStringLiteral("/a")}, {}, true);
        const Error e = errorOf([&] { slice.remember(QStringLiteral("x"), fields(QStringLiteral("/a"))); });
        QCOMPARE(e.kind(), ErrorKind::PermissionDenied);
        QCOMPARE(e.exitCode(), 3);
        QVERIFY(e.message().contains(QStringLiteral("read-only")));
        QVERIFY(slice.listRecords().isEmpty());
        QCOMPARE(count(*m), 0);
    }

    void sliceRecallsAcrossScopesAndWritesInside()
    {
        auto m = open();
        m->remember(QStringLiteral("security policy for agents"), fields(QStringLiteral("/agent/researcher")));
        m->remember(QStringLiteral("company security policy"), fields(QStringLiteral("/company/knowledge")));
        m->remember(QStringLiteral("secret security policy"), fields(QStringLiteral("/other")));
        MemorySlice view = m->slice({QStringLiteral("/agent/researcher"), QStringLiteral("/company/knowledge")});
        const auto matches = view.recall(QStringLiteral("security policy"), shallow(5));
        QCOMPARE(matches.size(), 2);
        for (const auto &match : matches)
            QVERIFY(match.record.scope != QStringLiteral("/other"));
        QCOMPARE(view.info().recordCount, 2);
        MemorySlice overlapping = m->slice({QStringLiteral("/agent"), QStringLiteral("/agent/researcher"), QStringLiteral("/agent/")});
        QCOMPARE(overlapping.scopes(), QStringList{QStringLiteral("/agent")});
        QCOMPARE(overlapping.info().recordCount, 1); // counted once
        MemorySlice writable = m->slice({QStringLiteral("/team/alpha"), QStringLiteral("/team/beta")}, {}, false);
        QCOMPARE(writable.remember(QStringLiteral("cross-team decision"), fields(QStringLiteral("/team/alpha"))).scope,
                 QStringLiteral("/team/alpha"));
        QCOMPARE(errorOf([&] { writable.remember(QStringLiteral("x"), RememberOptions{}); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(errorOf([&] { writable.remember(QStringLiteral("x"), fields(QStringLiteral("/team/gamma"))); }).kind(),
                 ErrorKind::PermissionDenied);
    }

    // Case 26.
    void batchEmbedsOnce()
    {
        auto e = std::make_shared<FakeEmbedder>();
        auto m = open(e);
        const QStringList items{QStringLiteral("first fact"), QStringLiteral("second thing"), QStringLiteral("third item")};
        const SaveResult r = m->rememberMany(items, fields(QStringLiteral("/b"), 0.6, {QStringLiteral("c")})).result();
        QCOMPARE(r.stored, 3);
        QCOMPARE(r.ids.size(), 3);
        QCOMPARE(e->calls(), 1);
        QCOMPARE(e->batches().first(), items);
        QCOMPARE(count(*m), 3);
    }

    // Case 27 and 28.
    void intraBatchDedup()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("A"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("B"), {0, 1, 0, 0});
        e->setVector(QStringLiteral("A nearly"), {0.999f, 0.01f, 0, 0});
        auto m = open(e);
        SaveResult r = m->rememberMany({QStringLiteral("A"), QStringLiteral("A"), QStringLiteral("A")}, fields(QStringLiteral("/"))).result();
        QCOMPARE(r.stored, 1);
        QCOMPARE(r.dropped, 2);
        QCOMPARE(count(*m), 1);
        m->resetAll();
        r = m->rememberMany({QStringLiteral("A"), QStringLiteral("B")}, fields(QStringLiteral("/"))).result();
        QCOMPARE(r.stored, 2);
        QCOMPARE(count(*m), 2);
        m->resetAll();
        r = m->rememberMany({QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("A nearly")}, fields(QStringLiteral("/"))).result();
        QCOMPARE(r.stored, 2); // the later near-duplicate is dropped, the first kept
        QCOMPARE(m->listRecords().size(), 2);
        for (const auto &rec : m->listRecords())
            QVERIFY(rec.content != QStringLiteral("A nearly"));
    }

    void identicalRememberCreatesNothing()
    {
        auto m = open();
        const auto a = m->remember(QStringLiteral("CrewAI ensures reliable operation"), fields(QStringLiteral("/p")));
        const auto b = m->remember(QStringLiteral("  CrewAI ensures reliable operation "), fields(QStringLiteral("/p")));
        QCOMPARE(b.id, a.id);
        QCOMPARE(count(*m), 1);
        const SaveResult r = m->rememberMany({QStringLiteral("CrewAI ensures reliable operation")}, fields(QStringLiteral("/p"))).result();
        QCOMPARE(r.stored, 0);
        QCOMPARE(r.existing, 1);
        QCOMPARE(r.ids, QList<QString>{a.id});
        // The same words in another scope, or from another source, are another memory.
        m->remember(QStringLiteral("CrewAI ensures reliable operation"), fields(QStringLiteral("/q")));
        QCOMPARE(count(*m), 2);
    }

    // Case 32.
    void rememberManyDoesNotBlock()
    {
        auto e = std::make_shared<GateEmbedder>(16);
        auto m = open(e);
        QFuture<SaveResult> f = m->rememberMany({QStringLiteral("Fact one."), QStringLiteral("Fact two.")}, fields(QStringLiteral("/")));
        QVERIFY(!f.isFinished()); // the embedder is still held
        e->gate.release(1);
        m->drainWrites();
        QVERIFY(f.isFinished());
        e->gate.release(100);
        QCOMPARE(count(*m), 2);
    }

    // Case 33.
    void recallWaitsForPendingSaves()
    {
        auto m = open();
        m->rememberMany({QStringLiteral("Python is great.")}, fields(QStringLiteral("/")));
        const auto matches = m->recall(QStringLiteral("Python"), shallow());
        QCOMPARE(matches.size(), 1);
    }

    // Case 34.
    void backgroundFailureIsReportedNotThrown()
    {
        auto e = std::make_shared<FakeEmbedder>();
        auto m = open(e);
        QSignalSpy failed(m.get(), &Memory::saveFailed);
        e->failWith(QStringLiteral("invalid model ID"));
        QFuture<SaveResult> f = m->rememberMany({QStringLiteral("x")}, fields(QStringLiteral("/")));
        m->drainWrites(); // must not throw
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.first().at(0).toString(), QStringLiteral("background save"));
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("invalid model ID")));
        QVERIFY_THROWS_EXCEPTION(Error, f.result());
        e->failWith({});
        QCOMPARE(count(*m), 0);
    }

    void rememberFailureThrowsAndStoresNothing()
    {
        auto e = std::make_shared<FakeEmbedder>();
        auto m = open(e);
        e->failWith(QStringLiteral("embedder down"));
        const Error err = errorOf([&] { m->remember(QStringLiteral("x"), fields(QStringLiteral("/"))); });
        QCOMPARE(err.kind(), ErrorKind::Embedder);
        e->failWith({});
        QCOMPARE(count(*m), 0);
    }

    // Case 35.
    void closeDrains()
    {
        {
            auto m = open();
            m->rememberMany({QStringLiteral("kept after close")}, fields(QStringLiteral("/")));
            m->close();
            QCOMPARE(errorOf([&] { m->remember(QStringLiteral("late"), fields(QStringLiteral("/"))); }).kind(), ErrorKind::Storage);
        }
        auto again = open();
        QCOMPARE(count(*again), 1);
    }

    // Cases 37 and 39.
    void rootScopeJoins()
    {
        auto m = open(nullptr, QStringLiteral("/crew/research-crew"));
        QCOMPARE(m->remember(QStringLiteral("trend"), fields(QStringLiteral("/market-trends"))).scope,
                 QStringLiteral("/crew/research-crew/market-trends"));
        QCOMPARE(m->remember(QStringLiteral("at root"), RememberOptions{}).scope, QStringLiteral("/crew/research-crew"));
        RememberOptions o = fields(QStringLiteral("/inner"));
        o.rootScope = QStringLiteral("/override/path");
        QCOMPARE(m->remember(QStringLiteral("override"), o).scope, QStringLiteral("/override/path/inner"));
        o.rootScope = QStringLiteral("/override/many");
        const SaveResult r = m->rememberMany({QStringLiteral("batch item")}, o).result();
        MemoryConfig plain = config();
        Memory all(plain, nullptr, std::make_shared<FakeEmbedder>());
        QCOMPARE(all.get(r.ids.first())->scope, QStringLiteral("/override/many/inner"));
    }

    // Case 40.
    void rootScopeIsolatesReads()
    {
        {
            auto m = open();
            m->remember(QStringLiteral("shared fact"), fields(QStringLiteral("/other/scope")));
            m->remember(QStringLiteral("shared fact"), fields(QStringLiteral("/crew/crew-a/inner")));
            m->remember(QStringLiteral("shared fact"), fields(QStringLiteral("/crew/crew-b/inner")));
            m->remember(QStringLiteral("shared fact"), fields(QStringLiteral("/crew/crew-ab")));
        }
        auto a = open(nullptr, QStringLiteral("/crew/crew-a"));
        const auto matches = a->recall(QStringLiteral("shared fact"), shallow());
        QCOMPARE(matches.size(), 1);
        QCOMPARE(matches.first().record.scope, QStringLiteral("/crew/crew-a/inner"));
        QCOMPARE(a->listRecords().size(), 1);
        QCOMPARE(a->listScopes(), QStringList{QStringLiteral("/crew/crew-a/inner")});
        QCOMPARE(a->info().recordCount, 1);
        QCOMPARE(a->info().path, QStringLiteral("/crew/crew-a"));
        // get() and update() cannot reach outside the root either.
        auto all = open();
        const QString outsideId = all->listRecords(QStringLiteral("/other")).first().id;
        QVERIFY(!a->get(outsideId));
        QCOMPARE(errorOf([&] { a->update(outsideId, newContent(QStringLiteral("hijack"))); }).kind(), ErrorKind::NotFound);
        // recall(scope) is joined under the root and finds deeper records.
        all->remember(QStringLiteral("deep note"), fields(QStringLiteral("/crew/test/inner/deep")));
        auto t = open(nullptr, QStringLiteral("/crew/test"));
        RecallOptions o = shallow();
        o.scopes = {QStringLiteral("/inner")};
        QCOMPARE(t->recall(QStringLiteral("deep note"), o).size(), 1);
        // reset() defaults to the root.
        QCOMPARE(a->reset(), 1);
        QCOMPARE(count(*all), 4);
        QCOMPARE(all->info(QStringLiteral("/crew/crew-b")).recordCount, 1);
    }

    // Case 43, without an LLM: the save pipeline compares an item only with records of its resolved
    // scope (root joined with the item's scope), never with the same words elsewhere.
    void saveComparesWithinTheResolvedScope()
    {
        QString atInner, underRoot;
        {
            auto plain = open();
            atInner = plain->remember(QStringLiteral("same words"), fields(QStringLiteral("/inner"))).id;
            underRoot = plain->remember(QStringLiteral("same words"), fields(QStringLiteral("/crew/a/inner"))).id;
            QVERIFY(atInner != underRoot);
            QCOMPARE(plain->remember(QStringLiteral("same words"), fields(QStringLiteral("/inner"))).id, atInner);
        }
        auto rooted = open(nullptr, QStringLiteral("/crew/a"));
        QCOMPARE(rooted->remember(QStringLiteral("same words"), fields(QStringLiteral("/inner"))).id, underRoot);
        QCOMPARE(rooted->remember(QStringLiteral("same words"), fields(QStringLiteral("/other"))).scope, QStringLiteral("/crew/a/other"));
        auto all = open();
        QCOMPARE(count(*all), 3);
    }

    // Case 44 and decision 10.
    void refusesAChangedEmbedder()
    {
        {
            auto m = open(std::make_shared<FakeEmbedder>(4));
            m->remember(QStringLiteral("four dims"), fields(QStringLiteral("/")));
        }
        const Error dim = errorOf([&] { open(std::make_shared<FakeEmbedder>(8)); });
        QCOMPARE(dim.kind(), ErrorKind::EmbedderMismatch);
        QVERIFY2(dim.message().contains(QStringLiteral("4-dimensional")), qPrintable(dim.message()));
        QVERIFY2(dim.message().contains(QStringLiteral("8-dimensional")), qPrintable(dim.message()));
        QVERIFY2(dim.message().contains(QStringLiteral("mneme reset")), qPrintable(dim.message()));
        QVERIFY2(dim.message().contains(QStringLiteral("--reembed")), qPrintable(dim.message()));
        const Error id = errorOf([&] { open(std::make_shared<FakeEmbedder>(4, QStringLiteral("other/model"))); });
        QCOMPARE(id.kind(), ErrorKind::EmbedderMismatch);
        QVERIFY2(id.message().contains(QStringLiteral("other/model")), qPrintable(id.message()));
        {
            auto m = open(std::make_shared<FakeEmbedder>(4));
            QCOMPARE(count(*m), 1); // the store is as it was
            m->resetAll();
        }
        auto fresh = open(std::make_shared<FakeEmbedder>(8));
        fresh->remember(QStringLiteral("eight dims"), fields(QStringLiteral("/")));
        QCOMPARE(count(*fresh), 1);
    }

    void refusesARaggedBatch()
    {
        auto m = open(std::make_shared<RaggedEmbedder>());
        QSignalSpy failed(m.get(), &Memory::saveFailed);
        QFuture<SaveResult> f = m->rememberMany({QStringLiteral("a"), QStringLiteral("b")}, fields(QStringLiteral("/")));
        m->drainWrites();
        QCOMPARE(failed.count(), 1);
        const Error e = errorOf([&] { f.result(); });
        QCOMPARE(e.kind(), ErrorKind::EmbedderMismatch);
        QCOMPARE(count(*m), 0);
    }

    void privacy()
    {
        auto m = open();
        RememberOptions priv = fields(QStringLiteral("/"));
        priv.source = QStringLiteral("user:alice");
        priv.isPrivate = true;
        m->remember(QStringLiteral("Alice's API key is in the vault"), priv);
        RememberOptions pub = fields(QStringLiteral("/"));
        pub.source = QStringLiteral("admin");
        m->remember(QStringLiteral("The API key rotation is monthly"), pub);
        auto contents = [&](RecallOptions o) {
            QStringList out;
            for (const auto &match : m->recall(QStringLiteral("API key"), o))
                out << match.record.content;
            out.sort();
            return out;
        };
        RecallOptions o = shallow();
        QCOMPARE(contents(o).size(), 1);
        o.source = QStringLiteral("user:bob");
        QCOMPARE(contents(o).size(), 1);
        o.source = QStringLiteral("user:alice");
        QCOMPARE(contents(o).size(), 2);
        o.source.clear();
        o.includePrivate = true;
        QCOMPARE(contents(o).size(), 2);
        RecallOptions only = shallow();
        only.onlySource = QStringLiteral("admin");
        QCOMPARE(contents(only), QStringList{QStringLiteral("The API key rotation is monthly")});
        // Decision 5: a private record must have a source.
        RememberOptions orphan = fields(QStringLiteral("/"));
        orphan.isPrivate = true;
        const Error e = errorOf([&] { m->remember(QStringLiteral("nobody's secret"), orphan); });
        QCOMPARE(e.kind(), ErrorKind::PermissionDenied);
        QVERIFY(e.message().contains(QStringLiteral("source")));
        QCOMPARE(count(*m), 2);
    }

    void badInputLeavesTheStoreAsItWas_data()
    {
        QTest::addColumn<QString>("content");
        QTest::addColumn<QString>("scope");
        QTest::addColumn<double>("importance");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("empty") << ""
                               << "/" << 0.5 << "empty";
        QTest::newRow("white space") << " \n\t "
                                     << "/" << 0.5 << "empty";
        QTest::newRow("1 MB") << QString(1 << 20, QLatin1Char('x')) << "/" << 0.5 << "max_content_chars";
        QTest::newRow("dotdot scope") << "x"
                                      << "/a/../b" << 0.5 << "..";
        QTest::newRow("empty segment") << "x"
                                       << "/a//b" << 0.5 << "empty segment";
        QTest::newRow("control char") << "x"
                                      << "/a\x01" << 0.5 << "control character";
        QTest::newRow("importance above 1") << "x"
                                            << "/" << 1.5 << "between 0 and 1";
        QTest::newRow("importance below 0") << "x"
                                            << "/" << -0.1 << "between 0 and 1";
        QTest::newRow("importance NaN") << "x"
                                        << "/" << std::nan("") << "between 0 and 1";
        QTest::newRow("importance inf") << "x"
                                        << "/" << std::numeric_limits<double>::infinity() << "between 0 and 1";
    }
    void badInputLeavesTheStoreAsItWas()
    {
        QFETCH(QString, content);
        QFETCH(QString, scope);
        QFETCH(double, importance);
        QFETCH(QString, mentions);
        auto m = open();
        m->remember(QStringLiteral("existing"), fields(QStringLiteral("/")));
        const Error e = errorOf([&] { m->remember(content, fields(scope, importance)); });
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(mentions), qPrintable(e.message()));
        // rememberMany refuses the same input before anything is submitted.
        if (!content.trimmed().isEmpty()) {
            const Error batch = errorOf([&] { m->rememberMany({QStringLiteral("fine"), content}, fields(scope, importance)); });
            QCOMPARE(batch.kind(), ErrorKind::InvalidArgument);
        }
        m->drainWrites();
        QCOMPARE(count(*m), 1);
    }

    void blankItemsInABatchAreDropped()
    {
        auto m = open();
        const SaveResult r = m->rememberMany({QStringLiteral("real"), QStringLiteral("   ")}, fields(QStringLiteral("/"))).result();
        QCOMPARE(r.stored, 1);
        QCOMPARE(r.dropped, 1);
    }

    void unknownIds()
    {
        auto m = open();
        QVERIFY(!m->get(QStringLiteral("no-such-id")));
        QCOMPARE(errorOf([&] { m->update(QStringLiteral("no-such-id"), newContent(QStringLiteral("x"))); }).kind(), ErrorKind::NotFound);
        QCOMPARE(errorOf([&] { m->history(QStringLiteral("no-such-id")); }).kind(), ErrorKind::NotFound);
    }

    void updateReembedsAndRecordsHistory()
    {
        auto e = std::make_shared<FakeEmbedder>();
        auto m = open(e);
        const MemoryRecord r = m->remember(QStringLiteral("We use MySQL."), fields(QStringLiteral("/db")));
        UpdateOptions u;
        u.content = QStringLiteral("We use PostgreSQL.");
        u.importance = 0.9;
        u.categories = QStringList{QStringLiteral("database")};
        const MemoryRecord after = m->update(r.id, u);
        QCOMPARE(after.content, QStringLiteral("We use PostgreSQL."));
        QCOMPARE(after.importance, 0.9);
        QCOMPARE(after.createdAt, r.createdAt);
        QVERIFY(after.updatedAt >= r.updatedAt);
        const auto matches = m->recall(QStringLiteral("PostgreSQL"), shallow());
        QCOMPARE(matches.first().record.id, r.id);
        QVERIFY(matches.first().signalValues.semantic > 0.5); // the new content was embedded
        const auto h = m->history(r.id);
        QCOMPARE(h.size(), 2);
        QCOMPARE(h[0].event, HistoryEntry::Event::Add);
        QCOMPARE(h[1].event, HistoryEntry::Event::Update);
        QCOMPARE(h[1].oldContent, QStringLiteral("We use MySQL."));
        QCOMPARE(h[1].newContent, QStringLiteral("We use PostgreSQL."));
        u = UpdateOptions{};
        u.importance = 2.0;
        QCOMPARE(errorOf([&] { m->update(r.id, u); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(m->get(r.id)->importance, 0.9);
    }

    void events()
    {
        auto m = open();
        QSignalSpy saveStarted(m.get(), &Memory::saveStarted);
        QSignalSpy saveCompleted(m.get(), &Memory::saveCompleted);
        QSignalSpy queryStarted(m.get(), &Memory::queryStarted);
        QSignalSpy queryCompleted(m.get(), &Memory::queryCompleted);
        RememberOptions o = fields(QStringLiteral("/"));
        o.metadata = Json{{"origin", "test"}};
        m->remember(QStringLiteral("event fact"), o);
        QTRY_COMPARE(saveCompleted.count(), 1);
        QCOMPARE(saveStarted.count(), 1);
        QCOMPARE(saveStarted.first().at(0).toString(), QStringLiteral("event fact"));
        QCOMPARE(saveStarted.first().at(1).toJsonObject().value(QStringLiteral("origin")).toString(), QStringLiteral("test"));
        QVERIFY(saveCompleted.first().at(2).toDouble() >= 0);
        m->recall(QStringLiteral("event"), shallow(3));
        QCOMPARE(queryStarted.count(), 1);
        QCOMPARE(queryStarted.first().at(0).toString(), QStringLiteral("event"));
        QCOMPARE(queryStarted.first().at(1).toInt(), 3);
        QCOMPARE(queryCompleted.count(), 1);
        QCOMPARE(queryCompleted.first().at(1).value<QList<MemoryMatch>>().size(), 1);
        QVERIFY(queryCompleted.first().at(2).toDouble() >= 0);
        m->rememberMany({QStringLiteral("one"), QStringLiteral("two")}, fields(QStringLiteral("/"))).waitForFinished();
        QTRY_COMPARE(saveCompleted.count(), 2);
        QCOMPARE(saveStarted.last().at(0).toString(), QStringLiteral("2 memories (background)"));
        QCOMPARE(saveCompleted.last().at(0).toString(), QStringLiteral("2 memories saved"));
    }

    void queryFailureEvent()
    {
        auto e = std::make_shared<FakeEmbedder>();
        auto m = open(e);
        QSignalSpy failed(m.get(), &Memory::queryFailed);
        e->failWith(QStringLiteral("no embeddings today"));
        QCOMPARE(errorOf([&] { m->recall(QStringLiteral("q"), shallow()); }).kind(), ErrorKind::Embedder);
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("no embeddings today")));
    }

    // Accesses are noted by each recall and written in batches: within the batch interval on their
    // own, at once by drainWrites() (and so by get()), each recall counting once.
    void accessesAreWrittenInBatches()
    {
        auto m = open();
        m->remember(QStringLiteral("the only note about databases"), fields(QStringLiteral("/n")));
        const QString id = m->recall(QStringLiteral("databases"), shallow(1)).first().record.id;
        m->recall(QStringLiteral("databases"), shallow(1));
        m->recall(QStringLiteral("databases"), shallow(1));
        // Written by the writer on its own, without any further call on the Memory.
        QTRY_COMPARE_WITH_TIMEOUT(m->storage().get(id)->accessCount, 3, 5000);
        QVERIFY(m->storage().get(id)->lastAccessed.isValid());
        m->recall(QStringLiteral("databases"), shallow(1));
        QCOMPARE(m->get(id)->accessCount, 4); // get() drains, which writes the noted access
    }

    void recallDetails()
    {
        auto m = open();
        for (int i = 0; i < 15; ++i)
            m->remember(QStringLiteral("note number %1 about databases").arg(i), fields(QStringLiteral("/n")));
        QCOMPARE(m->recall(QStringLiteral("databases"), shallow(5)).size(), 5);
        QVERIFY(m->recall(QStringLiteral("   "), shallow()).isEmpty());
        QCOMPARE(errorOf([&] { m->recall(QStringLiteral("x"), shallow(0)); }).kind(), ErrorKind::InvalidArgument);
        // Recall counts accesses.
        const auto top = m->recall(QStringLiteral("note number 3"), shallow(1)).first();
        QTRY_VERIFY(m->get(top.record.id)->accessCount >= 1); // written in the background
        // Recency is measured to the given time.
        RecallOptions later = shallow(1);
        later.now = nowUtc().addDays(60);
        const auto aged = m->recall(QStringLiteral("note number 3"), later).first();
        QVERIFY(aged.signalValues.recency < 0.3);
        QVERIFY(!aged.matchReasons.contains(QStringLiteral("recency")));
        // Categories narrow recall (any-of).
        m->remember(QStringLiteral("databases decision"), fields(QStringLiteral("/n"), 0.5, {QStringLiteral("decision")}));
        RecallOptions cat = shallow();
        cat.categories = {QStringLiteral("decision"), QStringLiteral("other")};
        QCOMPARE(m->recall(QStringLiteral("databases"), cat).size(), 1);
    }

    void unrelatedRecordsAreNotReturned()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("related"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("orthogonal"), {0, 1, 0, 0});
        e->setVector(QStringLiteral("opposite"), {-1, 0, 0, 0});
        e->setVector(QStringLiteral("query"), {1, 0, 0, 0});
        auto m = open(e);
        m->remember(QStringLiteral("related"), fields(QStringLiteral("/"), 0.1));
        m->remember(QStringLiteral("orthogonal"), fields(QStringLiteral("/"), 1.0));
        m->remember(QStringLiteral("opposite"), fields(QStringLiteral("/"), 1.0));
        const auto matches = m->recall(QStringLiteral("query"), shallow());
        QCOMPARE(matches.size(), 1); // important and recent, but not about the query
        QCOMPARE(matches.first().record.content, QStringLiteral("related"));
    }

    void conversationTurnsBorrowTheirNeighboursMeaning()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("Mel: Did you go to the support group?"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("Caroline: Yes, last Tuesday!"), {0, 1, 0, 0});
        e->setVector(QStringLiteral("Mel: Nice."), {0, 0, 1, 0});
        e->setVector(QStringLiteral("support group"), {1, 0, 0, 0});
        auto m = open(e);
        const QDateTime t0 = QDateTime(QDate(2023, 5, 8), QTime(13, 56), Qt::UTC);
        QList<ConversationTurn> turns{
            {QStringLiteral("Mel"), QStringLiteral("Did you go to the support group?"), t0, Json{{"dia_id", "D1:1"}}},
            {QStringLiteral("Caroline"), QStringLiteral("Yes, last Tuesday!"), t0.addSecs(60), Json{{"dia_id", "D1:2"}}},
            {QStringLiteral("Mel"), QStringLiteral("Nice."), t0.addSecs(120), Json{{"dia_id", "D1:3"}}},
            {QStringLiteral("Mel"), QStringLiteral("   "), t0.addSecs(180), Json::object()},
        };
        ConversationOptions o;
        o.defaults = fields(QStringLiteral("/chat"));
        o.contextWindow = 1;
        const SaveResult r = m->rememberConversation(turns, o).result();
        QCOMPARE(r.stored, 3);
        QCOMPARE(r.dropped, 1); // the blank turn
        RecallOptions q = shallow();
        q.now = t0.addDays(1);
        const auto matches = m->recall(QStringLiteral("support group"), q);
        QCOMPARE(matches.size(), 2); // the question, and the answer through its context; not "Nice."
        QCOMPARE(matches[0].record.metadata["dia_id"], "D1:1");
        QCOMPARE(matches[1].record.content, QStringLiteral("Caroline: Yes, last Tuesday!"));
        QCOMPARE(matches[1].record.metadata["dia_id"], "D1:2");
        QCOMPARE(matches[1].record.createdAt, t0.addSecs(60));
        QCOMPARE(matches[1].record.scope, QStringLiteral("/chat"));
        // y + 1.5x + 0.5z, normalised: the question it answers counts three times a neighbour.
        QVERIFY(qAbs(matches[1].signalValues.semantic - 1.5 / std::sqrt(3.5)) < 1e-5);
        QCOMPARE(matches[1].record.metadata["speaker"], "Caroline");

        m->resetAll();
        o.contextWindow = 0;
        m->rememberConversation(turns, o).waitForFinished();
        QCOMPARE(m->recall(QStringLiteral("support group"), q).size(), 1);
        o.contextWeight = 2;
        QCOMPARE(errorOf([&] { m->rememberConversation(turns, o); }).kind(), ErrorKind::InvalidArgument);
    }

    // Turns keep their speaker in metadata.speaker (unless their own metadata names one). Among turns
    // equally related to a query, the turn of the speaker the query names comes first, and a turn that
    // asks comes after the reply it gets.
    void conversationTurnsOfTheNamedSpeakerAndRepliesComeFirst()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("Ann: I paint landscapes."), {1, 0, 0, 0});
        e->setVector(QStringLiteral("Bob: I paint portraits."), {1, 0, 0, 0});
        e->setVector(QStringLiteral("Ann: What do you paint?"), {0, 0, 1, 0});
        e->setVector(QStringLiteral("Bob: Mostly birds."), {0, 0, 0, 1});
        e->setVector(QStringLiteral("What does Robert paint?"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("What does anyone paint?"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("what do you paint"), {0, 0, 1, 0});
        auto m = open(e);
        const QDateTime t0 = QDateTime(QDate(2024, 5, 1), QTime(9, 0), Qt::UTC);
        ConversationOptions o;
        o.defaults = fields(QStringLiteral("/chat"));
        o.contextWindow = 0; // each turn alone: the vectors above are the stored ones
        m->rememberConversation({{QStringLiteral("Ann"), QStringLiteral("I paint landscapes."), t0, Json::object()},
                                 {QStringLiteral("Bob"), QStringLiteral("I paint portraits."), t0, Json{{"speaker", "Robert"}}}},
                                o)
            .waitForFinished();
        RecallOptions q = shallow();
        q.now = t0;
        q.minRelevance = 0;
        // Equally related to a query that names no speaker; Bob's own metadata names him Robert.
        QList<MemoryMatch> matches = m->recall(QStringLiteral("What does anyone paint?"), q);
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].score, matches[1].score);
        QStringList speakers{QString::fromStdString(matches[0].record.metadata.value("speaker", "")),
                             QString::fromStdString(matches[1].record.metadata.value("speaker", ""))};
        speakers.sort();
        QCOMPARE(speakers, (QStringList{QStringLiteral("Ann"), QStringLiteral("Robert")}));
        const double equal = matches[0].score;
        matches = m->recall(QStringLiteral("What does Robert paint?"), q);
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].record.content, QStringLiteral("Bob: I paint portraits."));
        QVERIFY(qAbs(matches[0].score - std::min(1.0, equal * (1 + 0.2))) < 1e-9);
        QCOMPARE(matches[1].score, equal);

        // A question and its reply: the reply's vector holds the question at three times a neighbour's
        // weight (1.5, against 0.5 for the reply in the question's vector), its keyword context holds
        // the question's words, and the question, a turn that asks, is lowered: the reply comes first
        // though the question is the closer vector. On relevance alone (recency and importance, equal
        // here, weigh only 0.867^standing_exponent of the reply's, which is 87 % as relevant as the
        // question: with the default 8 they would put the question first).
        m.reset();
        MemoryConfig relevanceOnly = config();
        relevanceOnly.recencyWeight = 0;
        relevanceOnly.importanceWeight = 0;
        m = std::make_unique<Memory>(relevanceOnly, nullptr, e);
        m->resetAll();
        o.contextWindow = 1;
        o.contextWeight = 0.5;
        m->rememberConversation({{QStringLiteral("Ann"), QStringLiteral("What do you paint?"), t0, Json::object()},
                                 {QStringLiteral("Bob"), QStringLiteral("Mostly birds."), t0, Json::object()}},
                                o)
            .waitForFinished();
        matches = m->recall(QStringLiteral("what do you paint"), q);
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].record.content, QStringLiteral("Bob: Mostly birds."));
        QVERIFY(qAbs(matches[0].signalValues.semantic - 1.5 / std::sqrt(1 + 1.5 * 1.5)) < 1e-5);
        QCOMPARE(matches[1].record.content, QStringLiteral("Ann: What do you paint?"));
        QVERIFY(matches[1].signalValues.semantic > matches[0].signalValues.semantic);
    }

    // A short turn says less: of two turns as related to the query (the same vector, no word of the
    // query in either), the one that tells the story ranks first and the one-line reaction keeps half
    // its score (Scoring::shortTurnFactor), with its relevance, which the floor judges, unchanged.
    // Records that are not conversation turns are not weighed by their length.
    void shortConversationTurnsRankBelowLongerOnes()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        const QString story = QStringLiteral("We drove up to the lake on Saturday, pitched the tent by the water, and the "
                                             "kids swam until the sun went down.");
        const QString reaction = QStringLiteral("Sounds lovely!");
        for (const QString &text : {story, reaction, QStringLiteral("Ann: ") + story, QStringLiteral("Bob: ") + reaction})
            e->setVector(text, {1, 0, 0, 0});
        e->setVector(QStringLiteral("Where did they go camping?"), {1, 0, 0, 0});
        const QDateTime t0 = QDateTime(QDate(2024, 7, 1), QTime(9, 0), Qt::UTC);
        RecallOptions q = shallow();
        q.now = t0;
        {
            auto m = open(e);
            ConversationOptions o;
            o.defaults = fields(QStringLiteral("/chat"));
            o.contextWindow = 0; // each turn alone: the vectors above are the stored ones
            m->rememberConversation({{QStringLiteral("Ann"), story, t0, Json::object()},
                                     {QStringLiteral("Bob"), reaction, t0, Json::object()}},
                                    o)
                .waitForFinished();
            const QList<MemoryMatch> matches = m->recall(QStringLiteral("Where did they go camping?"), q);
            QCOMPARE(matches.size(), 2);
            QCOMPARE(matches[0].record.content, QStringLiteral("Ann: ") + story);
            QCOMPARE(matches[1].record.content, QStringLiteral("Bob: ") + reaction);
            QCOMPARE(matches[1].signalValues.relevance, matches[0].signalValues.relevance);
            QVERIFY(qAbs(matches[1].score - matches[0].score * 0.5) < 1e-9); // three words: the floor, a half
        }
        // The same texts as plain records: equal scores, whatever their length.
        auto m = open(e);
        RememberOptions plain = fields(QStringLiteral("/notes"));
        plain.createdAt = t0;
        m->remember(story, plain);
        m->remember(reaction, plain);
        q.scopes = {QStringLiteral("/notes")};
        const QList<MemoryMatch> matches = m->recall(QStringLiteral("Where did they go camping?"), q);
        QCOMPARE(matches.size(), 2);
        QCOMPARE(matches[0].score, matches[1].score);
    }

    void conversationTurnsAreFoundByTheirNeighboursWords()
    {
        // Vectors that relate no turn to the query: only the keyword signal finds a turn.
        auto e = std::make_shared<FakeEmbedder>(8);
        const QStringList said{QStringLiteral("Have you ever been to the lighthouse?"), QStringLiteral("Yes, twice!"),
                               QStringLiteral("Cool."), QStringLiteral("Anyway, how is work?"), QStringLiteral("Busy.")};
        const QDateTime t0 = QDateTime(QDate(2024, 3, 1), QTime(9, 0), Qt::UTC);
        QList<ConversationTurn> turns;
        for (int i = 0; i < said.size(); ++i) {
            const QString speaker = i % 2 == 0 ? QStringLiteral("Ann") : QStringLiteral("Bob");
            Embedding v(8, 0.0f);
            v[size_t(i)] = 1;
            e->setVector(speaker + QStringLiteral(": ") + said[i], v);
            turns << ConversationTurn{speaker, said[i], t0, Json{{"turn", i}}};
        }
        e->setVector(QStringLiteral("lighthouse"), {0, 0, 0, 0, 0, 0, 0, 1});
        ConversationOptions o;
        o.defaults = fields(QStringLiteral("/chat"));
        o.contextWeight = 0; // vectors of the turns alone
        {
            auto m = open(e);
            m->rememberConversation(turns, o).waitForFinished();
            RecallOptions q = shallow();
            q.now = t0;
            q.minRelevance = 0; // what the keyword context finds, however weak (the floor has tests of its own)
            const auto matches = m->recall(QStringLiteral("lighthouse"), q);
            // The turn that says it, then the two after it through their keyword context
            // (conversation_context_window 2; the shorter context first); not the turns further away.
            QCOMPARE(matches.size(), 3);
            QCOMPARE(matches[0].record.metadata["turn"], 0);
            QCOMPARE(matches[1].record.metadata["turn"], 1);
            QCOMPARE(matches[2].record.metadata["turn"], 2);
            QVERIFY(matches[1].signalValues.keyword < matches[0].signalValues.keyword);
            QCOMPARE(matches[1].signalValues.semantic, 0.0);
        }
        // keyword_context_weight 0: the content alone.
        MemoryConfig c = config();
        c.keywordContextWeight = 0;
        Memory m(c, nullptr, e);
        RecallOptions q = shallow();
        q.now = t0;
        const auto matches = m.recall(QStringLiteral("lighthouse"), q);
        QCOMPARE(matches.size(), 1);
        QCOMPARE(matches[0].record.metadata["turn"], 0);
    }

    void defaultEmbedderFollowsTheStore()
    {
        MemoryConfig c = config();
        c.embedder = Json{{"provider", "builtin"}, {"config", {{"model", "hash-v1"}, {"dimension", 128}}}};
        {
            Memory m(c);
            m.remember(QStringLiteral("written by hash-v1 at 128 dimensions"));
        }
        Memory reopened(config()); // no embedder named: the store's own builtin model is used
        QCOMPARE(reopened.embedder().id(), QStringLiteral("builtin/hash-v1"));
        QCOMPARE(reopened.embedder().dimension(), 128);
        QCOMPARE(reopened.recall(QStringLiteral("hash-v1 dimensions"), shallow()).size(), 1);
    }

    void handlersOnTheWriterCannotDeadlock()
    {
        auto m = open();
        std::atomic<int> refused{0};
        connect(
            m.get(), &Memory::saveCompleted, m.get(), [&] {
                try {
                    ForgetOptions f;
                    f.scope = QStringLiteral("/x");
                    m->forget(f); // on the writer thread: would wait for itself
                } catch (const Error &e) {
                    if (e.kind() == ErrorKind::Internal)
                        ++refused;
                }
            },
            Qt::DirectConnection);
        m->rememberMany({QStringLiteral("one"), QStringLiteral("two")}, fields(QStringLiteral("/")));
        m->close(); // returns: the handler was refused instead of blocking the writer
        QCOMPARE(refused.load(), 1);
    }

    void aSaveFromTheWriterIsRefusedWhileCloseWaits()
    {
        // close() holds the submit lock while it waits for the writer; a save's handler on the writer
        // that saves again must be refused at once, not wait for that lock.
        auto m = open();
        std::atomic<bool> closing{false};
        std::atomic<int> refused{0};
        connect(
            m.get(), &Memory::saveCompleted, m.get(), [&] {
                while (!closing)
                    QThread::msleep(1);
                QThread::msleep(100); // close() is now waiting for this job
                try {
                    m->rememberMany({QStringLiteral("three")}, fields(QStringLiteral("/")));
                } catch (const Error &e) {
                    if (e.kind() == ErrorKind::Internal)
                        ++refused;
                }
            },
            Qt::DirectConnection);
        m->rememberMany({QStringLiteral("one"), QStringLiteral("two")}, fields(QStringLiteral("/")));
        closing = true;
        m->close();
        QCOMPARE(refused.load(), 1);
    }

    void closeWaitsForAsyncRecalls()
    {
        auto m = open();
        for (int i = 0; i < 50; ++i)
            m->remember(QStringLiteral("fact number %1").arg(i), fields(QStringLiteral("/")));
        QList<QFuture<QList<MemoryMatch>>> running;
        for (int i = 0; i < 8; ++i)
            running << m->recallAsync(QStringLiteral("fact number %1").arg(i), shallow());
        m.reset(); // the destructor closes, after the recalls are done with the store
        for (auto &f : running)
            QCOMPARE(f.result().size(), 10);
    }

    void rootScopeConfinesHistoryAndImport()
    {
        QString outsideId;
        QList<MemoryRecord> outside;
        {
            auto all = open();
            outsideId = all->remember(QStringLiteral("tenant b secret"), fields(QStringLiteral("/tenant/b"))).id;
            outside = all->exportRecords(0, 10);
        }
        auto a = open(nullptr, QStringLiteral("/tenant/a"));
        QCOMPARE(errorOf([&] { a->history(outsideId); }).kind(), ErrorKind::NotFound);
        outside.first().id = QStringLiteral("another-id");
        QCOMPARE(errorOf([&] { a->importRecords(outside, true); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(a->info().recordCount, 0);
    }

    void forgetNeedsACondition()
    {
        auto m = open();
        m->remember(QStringLiteral("kept"), fields(QStringLiteral("/")));
        QCOMPARE(errorOf([&] { m->forget(ForgetOptions{}); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(count(*m), 1);
        QCOMPARE(errorOf([&] { m->recall(QStringLiteral("kept"), shallow(2000000000)); }).kind(), ErrorKind::InvalidArgument);
    }

    void repeatedConversationTurnsAreKept()
    {
        auto m = open();
        const QDateTime t0 = QDateTime(QDate(2023, 5, 8), QTime(13, 0), Qt::UTC);
        QList<ConversationTurn> turns{
            {QStringLiteral("Mel"), QStringLiteral("Thanks!"), t0, Json{{"dia_id", "D1:1"}}},
            {QStringLiteral("Mel"), QStringLiteral("Thanks!"), t0.addDays(30), Json{{"dia_id", "D2:1"}}},
        };
        const SaveResult r = m->rememberConversation(turns).result();
        QCOMPARE(r.stored, 2);
        QCOMPARE(r.existing, 0);
        QCOMPARE(m->rememberConversation(turns).result().stored, 2); // a log: replayed turns are new events
        QCOMPARE(count(*m), 4);
    }

    void keywordSignalFindsRareWords()
    {
        auto e = std::make_shared<FakeEmbedder>(4);
        e->setVector(QStringLiteral("The staging server is zeta-9"), {0, 1, 0, 0});
        e->setVector(QStringLiteral("Deploys happen on Fridays"), {1, 0, 0, 0});
        e->setVector(QStringLiteral("zeta-9"), {1, 0, 0, 0}); // the embedder is no help here
        MemoryConfig c = config();
        c.keywordWeight = 0.6; // above the semantic weight: an exact word beats a wrong neighbour
        Memory m(c, nullptr, e);
        m.remember(QStringLiteral("The staging server is zeta-9"), fields(QStringLiteral("/")));
        m.remember(QStringLiteral("Deploys happen on Fridays"), fields(QStringLiteral("/")));
        const auto matches = m.recall(QStringLiteral("zeta-9"), shallow());
        QCOMPARE(matches.first().record.content, QStringLiteral("The staging server is zeta-9"));
        QVERIFY(matches.first().signalValues.keyword > 0.8); // the whole query, in a record a little longer than the average
        QVERIFY(matches.first().matchReasons.contains(QStringLiteral("keyword")));
    }

    void treeInfoCategories()
    {
        auto m = open();
        m->remember(QStringLiteral("a1"), fields(QStringLiteral("/project/alpha"), 0.5, {QStringLiteral("architecture")}));
        m->remember(QStringLiteral("a2"), fields(QStringLiteral("/project/alpha"), 0.5, {QStringLiteral("database")}));
        m->remember(QStringLiteral("b1"), fields(QStringLiteral("/project/beta"), 0.5, {QStringLiteral("database")}));
        m->remember(QStringLiteral("r1"), fields(QStringLiteral("/agent/researcher")));
        QCOMPARE(m->tree(),
                 QStringLiteral("/ (4 records)\n  /agent (1 records)\n    /agent/researcher (1 records)\n"
                                "  /project (3 records)\n    /project/alpha (2 records)\n    /project/beta (1 records)"));
        QCOMPARE(m->tree(QStringLiteral("/project"), 0), QStringLiteral("/project (3 records)"));
        QCOMPARE(m->tree(QStringLiteral("/nothing")), QStringLiteral("/nothing (0 records)"));
        const ScopeNode node = m->scopeTree(QStringLiteral("/"), 1);
        QCOMPARE(node.children.size(), 2);
        QVERIFY(node.children[1].children.isEmpty());
        const Json j = node;
        QCOMPARE(j["record_count"], 4);
        QCOMPARE(j["children"][1]["path"], "/project");
        const ScopeInfo info = m->info(QStringLiteral("/project/alpha"));
        QCOMPARE(info.recordCount, 2);
        QCOMPARE(info.categories, (QStringList{"architecture", "database"}));
        QVERIFY(info.oldestRecord <= info.newestRecord);
        QVERIFY(info.childScopes.isEmpty());
        const QMap<QString, int> cats = m->listCategories();
        QCOMPARE(cats.value(QStringLiteral("database")), 2);
        QCOMPARE(cats.value(QStringLiteral("architecture")), 1);
        QCOMPARE(m->listCategories(QStringLiteral("/project/beta")).value(QStringLiteral("database")), 1);
        const auto records = m->listRecords(QStringLiteral("/project"), 2, 0);
        QCOMPARE(records.size(), 2);
        QVERIFY(records[0].createdAt >= records[1].createdAt);
        QCOMPARE(m->listRecords(QStringLiteral("/project"), 2, 2).size(), 1);
    }

    void exportImportRoundTrip()
    {
        QList<MemoryRecord> exported;
        {
            auto m = open();
            RememberOptions o = fields(QStringLiteral("/x"), 0.8, {QStringLiteral("c")});
            o.metadata = Json{{"k", "v"}};
            m->remember(QStringLiteral("first"), o);
            m->remember(QStringLiteral("second"), fields(QStringLiteral("/y")));
            exported = m->exportRecords(0, 100);
            QCOMPARE(exported.size(), 2);
            QVERIFY(!exported.first().embedding.empty());
            m->resetAll();
        }
        auto m = open();
        SaveResult r = m->importRecords(exported, true);
        QCOMPARE(r.stored, 2);
        r = m->importRecords(exported, false);
        QCOMPARE(r.stored, 0);
        QCOMPARE(r.existing, 2);
        for (const MemoryRecord &orig : exported) {
            const auto back = m->get(orig.id);
            QVERIFY(back);
            QCOMPARE(back->content, orig.content);
            QCOMPARE(back->createdAt, orig.createdAt);
            QCOMPARE(back->metadata, orig.metadata);
        }
        QList<MemoryRecord> wrong = exported;
        wrong.first().id = QStringLiteral("new-id");
        wrong.first().embedding = {1, 2};
        QCOMPARE(errorOf([&] { m->importRecords(wrong, true); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(count(*m), 2);
    }

    void readOnlyMemory()
    {
        {
            auto m = open();
            m->remember(QStringLiteral("kept"), fields(QStringLiteral("/")));
        }
        MemoryConfig c = config();
        c.readOnly = true;
        Memory m(c, nullptr, std::make_shared<FakeEmbedder>());
        QVERIFY(m.isReadOnly());
        QCOMPARE(errorOf([&] { m.remember(QStringLiteral("x"), fields(QStringLiteral("/"))); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { m.rememberMany({QStringLiteral("x")}); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { m.forget(ForgetOptions{}); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { m.reset(); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(m.recall(QStringLiteral("kept"), shallow()).size(), 1);
    }

    void corruptFileIsRefusedAndUntouched()
    {
        QFile f(m_dir->path());
        QVERIFY(f.open(QIODevice::WriteOnly));
        const QByteArray garbage(4096, '\x5a');
        f.write(garbage);
        f.close();
        const Error e = errorOf([&] { open(); });
        QCOMPARE(e.kind(), ErrorKind::Corrupt);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), garbage);
    }

    void extractWithoutLlm()
    {
        auto m = open();
        QVERIFY(m->extractMemories(QStringLiteral("  ")).isEmpty());
        QCOMPARE(m->extractMemories(QStringLiteral(" One fact. ")), QStringList{QStringLiteral("One fact.")});
    }

    void asyncRecallOnAnotherThread()
    {
        auto m = open();
        m->remember(QStringLiteral("asynchronous fact"), fields(QStringLiteral("/")));
        QFuture<QList<MemoryMatch>> f = m->recallAsync(QStringLiteral("asynchronous"), shallow());
        QCOMPARE(f.result().size(), 1);
        QCOMPARE(m->rememberAsync(QStringLiteral("another"), fields(QStringLiteral("/"))).result().content, QStringLiteral("another"));
    }
};

QTEST_GUILESS_MAIN(TestMemory)
#include "test_memory.moc"
