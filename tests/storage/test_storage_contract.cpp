// The StorageBackend contract (core/storage_backend.h, docs/plugins.md), the same cases for every
// backend: each test function runs once a backend named in MNEME_CONTRACT_BACKENDS ("sqlite",
// "postgres"; CTest registers one test a backend). SQLite stores are files in a temporary folder;
// PostgreSQL stores are fresh schemas on the cluster of the CTest fixture "postgres".

#include "temp_store.h"
#if MNEME_TEST_WITH_POSTGRES
#include "tests/postgres/pg_test_util.h"
#endif
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/storage_backend.h>

#include <QtTest>
#include <memory>

using namespace mneme;

namespace {

const QDateTime kBase = QDateTime(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC);

struct Caught
{
    bool thrown = false;
    ErrorKind kind = ErrorKind::Internal;
    QString message;
};

template<typename F>
Caught catchError(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return {true, e.kind(), e.message()};
    }
    return {};
}

MemoryRecord makeRecord(const QString &content, const QString &scope = QStringLiteral("/"), Embedding embedding = {}, int hours = 0)
{
    MemoryRecord r = MemoryRecord::create(content);
    r.scope = scope;
    r.embedding = std::move(embedding);
    r.createdAt = kBase.addSecs(3600LL * hours);
    r.updatedAt = r.createdAt;
    r.lastAccessed = r.createdAt;
    return r;
}

QStringList idsOf(const std::vector<MemoryRecord> &records)
{
    QStringList out;
    for (const MemoryRecord &r : records)
        out << r.id;
    return out;
}

QStringList contentsOf(const std::vector<ScoredRecord> &records)
{
    QStringList out;
    for (const ScoredRecord &r : records)
        out << r.record.content;
    return out;
}

} // namespace

class TestStorageContract : public QObject
{
    Q_OBJECT

    std::unique_ptr<test::TempStore> m_dir;

    std::unique_ptr<StorageBackend> open(const QString &backend, QString *config = nullptr)
    {
        Json c;
        if (backend == QLatin1String("sqlite")) {
            c = Json{{"path", m_dir->path(QUuid::createUuid().toString(QUuid::Id128) + QStringLiteral(".db")).toStdString()}};
        } else {
#if MNEME_TEST_WITH_POSTGRES
            c = Json{{"dsn", test::PgCluster::freshDsn().toStdString()}};
            // "postgres-pgvector": vector searches on the server, with pgvector (the fixture "pgvector").
            if (backend == QLatin1String("postgres-pgvector"))
                c["vector_search"] = "pgvector";
#endif
        }
        if (config)
            *config = QString::fromStdString(c.dump());
        return PluginRegistry::instance().createStorage(pluginOf(backend), c);
    }
    std::unique_ptr<StorageBackend> reopen(const QString &backend, const QString &config)
    {
        return PluginRegistry::instance().createStorage(pluginOf(backend), Json::parse(config.toStdString()));
    }
    static QString pluginOf(const QString &backend) { return backend.section(QLatin1Char('-'), 0, 0); }

    void backends()
    {
        QTest::addColumn<QString>("backend");
        for (const QString &b : qEnvironmentVariable("MNEME_CONTRACT_BACKENDS", QStringLiteral("sqlite")).split(QLatin1Char(','), Qt::SkipEmptyParts))
            QTest::newRow(qPrintable(b)) << b;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_dir = std::make_unique<test::TempStore>();
#if MNEME_TEST_WITH_POSTGRES
        if (qEnvironmentVariable("MNEME_CONTRACT_BACKENDS").contains(QLatin1String("postgres")))
            QVERIFY2(test::PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no PostgreSQL cluster: run the test through CTest");
#endif
    }

    void savedRecordsReadBack_data() { backends(); }
    void savedRecordsReadBack()
    {
        QFETCH(QString, backend);
        QString config;
        auto s = open(backend, &config);
        MemoryRecord r = makeRecord(QStringLiteral("Ana's café opens at 7 — «ünïcode»"), QStringLiteral("/team/ana"), {0.25f, -1.5f, 3.0f, 1e-7f});
        r.categories = {QStringLiteral("places"), QStringLiteral("times")};
        r.importance = 0.8;
        r.source = QStringLiteral("ana");
        r.isPrivate = true;
        r.metadata = Json{{"entities", {"Ana"}}, {"nested", {{"n", 1.5}, {"ok", true}}}, {"big", 9007199254740993LL}};
        r.accessCount = 3;
        s->save({r});
        QCOMPARE(s->info().schemaVersion > 0, true);
        const std::optional<MemoryRecord> got = s->get(r.id, true);
        QVERIFY(got);
        QCOMPARE(*got, r);
        QCOMPARE(got->embedding, r.embedding);
        QVERIFY(s->get(r.id, false)->embedding.empty());
        QVERIFY(!s->get(QStringLiteral("no-such-id")));
        // Another connection to the same store reads the same.
        s->close();
        auto again = reopen(backend, config);
        QCOMPARE(*again->get(r.id), r);
        // Ids are unique.
        QVERIFY(catchError([&] { again->save({r}); }).thrown);
        QCOMPARE(again->count({}), 1);
    }

    void badRecordsAreRefused_data() { backends(); }
    void badRecordsAreRefused()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord noId = makeRecord(QStringLiteral("x"));
        noId.id.clear();
        QCOMPARE(catchError([&] { s->save({noId}); }).kind, ErrorKind::InvalidArgument);
        MemoryRecord badScope = makeRecord(QStringLiteral("x"), QStringLiteral("/a//b/"));
        QCOMPARE(catchError([&] { s->save({badScope}); }).kind, ErrorKind::InvalidArgument);
        // A batch is one transaction: a bad record saves none of it.
        QVERIFY(catchError([&] { s->save({makeRecord(QStringLiteral("good")), noId}); }).thrown);
        QCOMPARE(s->count({}), 0);
        QCOMPARE(catchError([&] { s->update(makeRecord(QStringLiteral("ghost"))); }).kind, ErrorKind::NotFound);
    }

    void filtersSelect_data() { backends(); }
    void filtersSelect()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord a = makeRecord(QStringLiteral("alpha"), QStringLiteral("/a"), {}, 1);
        MemoryRecord ab = makeRecord(QStringLiteral("alpha b"), QStringLiteral("/ab"), {}, 2);
        MemoryRecord ax = makeRecord(QStringLiteral("alpha x"), QStringLiteral("/a/x"), {}, 3);
        ax.categories = {QStringLiteral("cat")};
        ax.metadata = Json{{"user_id", "u1"}, {"n", 5}};
        MemoryRecord secret = makeRecord(QStringLiteral("secret % _"), QStringLiteral("/a_b"), {}, 4);
        secret.isPrivate = true;
        secret.source = QStringLiteral("ben");
        s->save({a, ab, ax, secret});

        RecordFilter underA;
        underA.scopes = {QStringLiteral("/a")};
        QCOMPARE(idsOf(s->list(underA, -1, 0)), (QStringList{ax.id, a.id})); // newest first; not /ab, not /a_b
        RecordFilter cats;
        cats.categories = {QStringLiteral("cat")};
        QCOMPARE(idsOf(s->list(cats, -1, 0)), QStringList{ax.id});
        RecordFilter meta;
        meta.metadata = Json{{"n", {{"$gte", 5}}}};
        QCOMPARE(idsOf(s->list(meta, -1, 0)), QStringList{ax.id});
        RecordFilter privacy;
        privacy.applyPrivacy = true;
        QCOMPARE(s->count(privacy), 3);
        privacy.source = QStringLiteral("ben");
        QCOMPARE(s->count(privacy), 4);
        RecordFilter from;
        from.onlySource = QStringLiteral("ben");
        QCOMPARE(idsOf(s->list(from, -1, 0)), QStringList{secret.id});
        RecordFilter ids;
        ids.ids = {a.id, secret.id};
        QCOMPARE(s->count(ids), 2);
        RecordFilter time;
        time.createdAfter = kBase.addSecs(2 * 3600);
        time.createdBefore = kBase.addSecs(4 * 3600);
        QCOMPARE(idsOf(s->list(time, -1, 0)), (QStringList{ax.id, ab.id}));
        RecordFilter text;
        text.contentContains = QStringLiteral("ALPHA X");
        QCOMPARE(idsOf(s->list(text, -1, 0)), QStringList{ax.id});
        // Pages.
        QCOMPARE(idsOf(s->list({}, 2, 1)), (QStringList{ax.id, ab.id}));
        QCOMPARE(s->list({}, 0, 0).size(), std::size_t(0));
        // A sorted listing: RecordOrder's order, ties by id.
        for (const RecordOrder::Field field : {RecordOrder::Field::Content, RecordOrder::Field::Scope, RecordOrder::Field::CreatedAt}) {
            for (const bool descending : {false, true}) {
                const RecordOrder order{field, descending};
                const std::vector<MemoryRecord> all = s->list({}, -1, 0);
                QCOMPARE(idsOf(s->listOrdered({}, order, 3, 1)), idsOf(StorageBackend::sortedPage(all, order, 3, 1)));
            }
        }
        // A malformed metadata filter is refused.
        RecordFilter bad;
        bad.metadata = Json{{"n", {{"$nope", 1}}}};
        QCOMPARE(catchError([&] { s->count(bad); }).kind, ErrorKind::InvalidArgument);
    }

    void changesHaveHistory_data() { backends(); }
    void changesHaveHistory()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord r = makeRecord(QStringLiteral("first"), QStringLiteral("/h"), {1, 0});
        s->save({r});
        MemoryRecord changed = r;
        changed.content = QStringLiteral("second");
        changed.embedding.clear(); // keeps the stored one
        s->update(changed);
        QCOMPARE(s->get(r.id)->content, QStringLiteral("second"));
        QCOMPARE(s->get(r.id, true)->embedding, r.embedding);
        RecordFilter f;
        f.ids = {r.id};
        QCOMPARE(s->remove(f), 1);
        QVERIFY(!s->get(r.id));
        const std::vector<HistoryEntry> h = s->history(r.id);
        QCOMPARE(h.size(), std::size_t(3));
        QCOMPARE(h[0].event, HistoryEntry::Event::Add);
        QCOMPARE(h[1].event, HistoryEntry::Event::Update);
        QCOMPARE(h[1].oldContent, QStringLiteral("first"));
        QCOMPARE(h[1].newContent, QStringLiteral("second"));
        QCOMPARE(h[2].event, HistoryEntry::Event::Delete);
        QVERIFY(h[0].seq < h[1].seq && h[1].seq < h[2].seq);
        QCOMPARE(QString::fromStdString(h[2].oldRecord["content"].get<std::string>()), QStringLiteral("second"));
        // The undo of a delete: the record back as it was.
        MemoryRecord back = changed;
        back.embedding = r.embedding;
        s->restore(back);
        QCOMPARE(*s->get(r.id), back);
        QCOMPARE(s->history(r.id).back().event, HistoryEntry::Event::Add);
    }

    void identicalRecordsAreStoredOnce_data() { backends(); }
    void identicalRecordsAreStoredOnce()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord a = makeRecord(QStringLiteral("tea at five"), QStringLiteral("/t"));
        a.metadata = Json{{"user_id", "u1"}};
        s->save({a});
        MemoryRecord same = makeRecord(QStringLiteral("tea at five"), QStringLiteral("/t"));
        same.metadata = Json{{"user_id", "u1"}, {"other", 1}};
        MemoryRecord otherUser = makeRecord(QStringLiteral("tea at five"), QStringLiteral("/t"));
        otherUser.metadata = Json{{"user_id", "u2"}};
        MemoryRecord fresh = makeRecord(QStringLiteral("coffee at six"), QStringLiteral("/t"));
        MemoryRecord freshAgain = makeRecord(QStringLiteral("coffee at six"), QStringLiteral("/t"));
        const std::vector<QString> ids = s->saveUnlessIdentical({same, otherUser, fresh, freshAgain});
        QCOMPARE(ids, (std::vector<QString>{a.id, otherUser.id, fresh.id, fresh.id}));
        QCOMPARE(s->count({}), 3);
        QCOMPARE(s->findExact(QStringLiteral("tea at five"), QStringLiteral("/t"), QString(), false)->id, a.id);
        QVERIFY(!s->findExact(QStringLiteral("tea at five"), QStringLiteral("/u"), QString(), false));
        const auto found = s->findExact(std::vector<MemoryRecord>{same, makeRecord(QStringLiteral("nothing"))});
        QCOMPARE(found[0]->id, a.id);
        QVERIFY(!found[1]);
        MemoryRecord elsewhere = fresh;
        elsewhere.scope = QStringLiteral("/");
        QCOMPARE(s->findSameContent({elsewhere}, QStringLiteral("/t")).front()->id, fresh.id);
        QVERIFY(!s->findSameContent({elsewhere}, QStringLiteral("/x")).front());
    }

    void vectorSearchRanksByCosine_data() { backends(); }
    void vectorSearchRanksByCosine()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        s->save({makeRecord(QStringLiteral("east"), QStringLiteral("/v"), {1, 0, 0}), makeRecord(QStringLiteral("north"), QStringLiteral("/v"), {0, 1, 0}),
                 makeRecord(QStringLiteral("north-east"), QStringLiteral("/w"), {0.7f, 0.7f, 0}), makeRecord(QStringLiteral("no vector"), QStringLiteral("/v"))});
        const std::vector<ScoredRecord> hits = s->search({1, 0.1f, 0}, {}, 2);
        QCOMPARE(contentsOf(hits), (QStringList{QStringLiteral("east"), QStringLiteral("north-east")}));
        QVERIFY(hits[0].score > hits[1].score && hits[0].score <= 1.0001);
        QVERIFY(hits[0].record.embedding.empty());
        RecordFilter v;
        v.scopes = {QStringLiteral("/v")};
        QCOMPARE(contentsOf(s->search({1, 0.1f, 0}, v, 5)), (QStringList{QStringLiteral("east"), QStringLiteral("north")}));
        QCOMPARE(s->search({1, 0, 0}, {}, 0).size(), std::size_t(0));
        // Another dimension than the store's is refused.
        QCOMPARE(catchError([&] { s->save({makeRecord(QStringLiteral("4d"), QStringLiteral("/"), {1, 0, 0, 0})}); }).kind,
                 ErrorKind::EmbedderMismatch);
        // Records without hits keys: a backend without the capability declines, one with it answers.
        const std::optional<std::vector<SearchHit>> twoPhase = s->searchHits({1, 0, 0}, {}, 2);
        QCOMPARE(twoPhase.has_value(), s->info().has(StorageInfo::SearchHits));
    }

    void keywordSearchScoresWords_data() { backends(); }
    void keywordSearchScoresWords()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        std::vector<MemoryRecord> records;
        records.push_back(makeRecord(QStringLiteral("The lighthouse keeper lives on the island"), QStringLiteral("/k")));
        records.push_back(makeRecord(QStringLiteral("A keeper of bees"), QStringLiteral("/k")));
        records.push_back(makeRecord(QStringLiteral("Nothing relevant here"), QStringLiteral("/k")));
        MemoryRecord withContext = makeRecord(QStringLiteral("She said yes"), QStringLiteral("/other"));
        withContext.context = QStringLiteral("asked about the lighthouse");
        records.push_back(withContext);
        for (int i = 0; i < 20; ++i)
            records.push_back(makeRecord(QStringLiteral("filler note %1").arg(i), QStringLiteral("/k")));
        s->save(records);
        const std::vector<ScoredRecord> hits = s->keywordSearch(QStringLiteral("lighthouse keeper"), {}, 10);
        QCOMPARE(contentsOf(hits), (QStringList{records[0].content, records[1].content}));
        for (const ScoredRecord &h : hits)
            QVERIFY2(h.score > 0 && h.score <= 1, qPrintable(QString::number(h.score)));
        QVERIFY(hits[0].score > hits[1].score);
        // The context counts only with a weight.
        QVERIFY(!contentsOf(s->keywordSearch(QStringLiteral("lighthouse"), {}, 10)).contains(withContext.content));
        QVERIFY(contentsOf(s->keywordSearch(QStringLiteral("lighthouse"), {}, 10, 0.5)).contains(withContext.content));
        RecordFilter other;
        other.scopes = {QStringLiteral("/other")};
        QCOMPARE(s->keywordSearch(QStringLiteral("keeper"), other, 10).size(), std::size_t(0));
        QCOMPARE(s->keywordSearch(QStringLiteral("?! ..."), {}, 10).size(), std::size_t(0));
        QCOMPARE(s->keywordSearch(QStringLiteral("keeper"), {}, 1).size(), std::size_t(1));
    }

    void aggregatesCount_data() { backends(); }
    void aggregatesCount()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord a = makeRecord(QStringLiteral("a"), QStringLiteral("/p/x"), {1, 0}, 1);
        a.categories = {QStringLiteral("food"), QStringLiteral("food")};
        MemoryRecord b = makeRecord(QStringLiteral("b"), QStringLiteral("/p/y/z"), {0, 1}, 2);
        b.categories = {QStringLiteral("travel")};
        MemoryRecord c = makeRecord(QStringLiteral("c"), QStringLiteral("/p/x"), {1, 1}, 3);
        c.categories = {QStringLiteral("food")};
        MemoryRecord hidden = makeRecord(QStringLiteral("h"), QStringLiteral("/p/secret"), {}, 4);
        hidden.isPrivate = true;
        hidden.source = QStringLiteral("zed");
        s->save({a, b, c, hidden});
        RecordFilter visible;
        visible.applyPrivacy = true;
        const ScopeInfo info = s->scopeInfo(QStringLiteral("/p"), visible);
        QCOMPARE(info.path, QStringLiteral("/p"));
        QCOMPARE(info.recordCount, 3);
        QCOMPARE(info.categories, (QStringList{QStringLiteral("food"), QStringLiteral("travel")}));
        QCOMPARE(info.oldestRecord, a.createdAt);
        QCOMPARE(info.newestRecord, c.createdAt);
        QCOMPARE(info.childScopes, (QStringList{QStringLiteral("/p/x"), QStringLiteral("/p/y")}));
        QCOMPARE(s->childScopes(QStringLiteral("/p"), {}), (QStringList{QStringLiteral("/p/secret"), QStringLiteral("/p/x"), QStringLiteral("/p/y")}));
        QCOMPARE(s->scopeInfo(QStringLiteral("/nothing"), {}).recordCount, 0);
        const QMap<QString, int> cats = s->categories({});
        QCOMPARE(cats.value(QStringLiteral("food")), 2);
        QCOMPARE(cats.value(QStringLiteral("travel")), 1);
        const std::vector<MemoryRecord> samples = s->scopeSamples({}, 1);
        // Scopes sorted, the last stored record with an embedding of each (none in /p/secret).
        QCOMPARE(idsOf(samples), (QStringList{c.id, b.id}));
        QVERIFY(!samples[0].embedding.empty());
    }

    void touchCountsAccesses_data() { backends(); }
    void touchCountsAccesses()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        MemoryRecord r = makeRecord(QStringLiteral("t"));
        s->save({r});
        const QDateTime later = kBase.addDays(3);
        s->touch({r.id}, later);
        s->touch({r.id, QStringLiteral("gone")}, kBase.addDays(1)); // an unknown id is no error
        const MemoryRecord got = *s->get(r.id);
        QCOMPARE(got.accessCount, 2);
        QCOMPARE(got.lastAccessed, kBase.addDays(1));
        QVERIFY(later > got.lastAccessed);
        QCOMPARE(s->history(r.id).size(), std::size_t(1)); // no history
    }

    void stateDocuments_data() { backends(); }
    void stateDocuments()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        const Json doc = Json::parse(R"({"summary": "tea", "turns": 4, "n": -9007199254740993, "x": 0.1, "list": [1, "two", null]})");
        s->writeState(QStringLiteral("conversation/1"), doc);
        s->writeState(QStringLiteral("conversation/2"), Json("plain"));
        s->writeState(QStringLiteral("other"), Json(false));
        QCOMPARE(*s->readState(QStringLiteral("conversation/1")), doc);
        QCOMPARE(s->stateKeys(QStringLiteral("conversation/")), (QStringList{QStringLiteral("conversation/1"), QStringLiteral("conversation/2")}));
        QCOMPARE(s->stateKeys(QString()).size(), 3);
        s->writeState(QStringLiteral("conversation/2"), Json());
        QVERIFY(!s->readState(QStringLiteral("conversation/2")));
        s->writeState(QStringLiteral("missing"), Json()); // no error
        QCOMPARE(catchError([&] { s->writeState(QString(), Json(1)); }).kind, ErrorKind::InvalidArgument);
        QCOMPARE(catchError([&] { s->readState(QStringLiteral("a\nb")); }).kind, ErrorKind::InvalidArgument);
        QCOMPARE(catchError([&] { s->readState(QString(201, QLatin1Char('k'))); }).kind, ErrorKind::InvalidArgument);
        // A reset of a sub-tree keeps the state; a reset of everything clears it.
        s->reset(QStringLiteral("/a"));
        QVERIFY(s->readState(QStringLiteral("other")));
        s->reset(QStringLiteral("/"));
        QCOMPARE(s->stateKeys(QString()).size(), 0);
    }

    void embedderBinding_data() { backends(); }
    void embedderBinding()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        QVERIFY(!s->embedderBinding());
        s->bindEmbedder({QStringLiteral("test/a"), 2});
        s->bindEmbedder({QStringLiteral("test/a"), 2});
        QCOMPARE(s->embedderBinding()->embedderId, QStringLiteral("test/a"));
        const Caught other = catchError([&] { s->bindEmbedder({QStringLiteral("test/b"), 2}); });
        QCOMPARE(other.kind, ErrorKind::EmbedderMismatch);
        QVERIFY(other.message.contains(QLatin1String("test/a")) && other.message.contains(QLatin1String("test/b")));
        QCOMPARE(catchError([&] { s->bindEmbedder({QString(), 2}); }).kind, ErrorKind::InvalidArgument);
        s->save({makeRecord(QStringLiteral("in /a"), QStringLiteral("/a"), {1, 0}), makeRecord(QStringLiteral("in /b"), QStringLiteral("/b"), {0, 1})});
        QCOMPARE(s->reset(QStringLiteral("/a")), 1);
        QVERIFY(s->embedderBinding()); // a sub-tree's reset keeps the binding
        QCOMPARE(s->reset(QStringLiteral("/")), 1);
        QVERIFY(!s->embedderBinding());
        s->bindEmbedder({QStringLiteral("test/b"), 3}); // an empty store takes another embedder
        QCOMPARE(s->embedderBinding()->dimension, 3);
    }

    void closedStoreThrows_data() { backends(); }
    void closedStoreThrows()
    {
        QFETCH(QString, backend);
        auto s = open(backend);
        s->save({makeRecord(QStringLiteral("x"))});
        s->close();
        s->close(); // twice is harmless
        QCOMPARE(catchError([&] { s->count({}); }).kind, ErrorKind::Storage);
        QCOMPARE(catchError([&] { s->save({makeRecord(QStringLiteral("y"))}); }).kind, ErrorKind::Storage);
        QCOMPARE(catchError([&] { s->readState(QStringLiteral("k")); }).kind, ErrorKind::Storage);
    }
};

QTEST_GUILESS_MAIN(TestStorageContract)
#include "test_storage_contract.moc"
