// The asynchronous forms of Memory's reads and writes (what a GUI calls), searchRecords /
// countRecords, and the recordsChanged() signal, over the real SQLite storage plugin.

#include "counting_storage.h"
#include "fake_embedder.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>

#include <QSemaphore>
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>
#include <thread>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::GateEmbedder;
using mneme::test::fields;
using mneme::test::TempStore;

namespace {

// A backend that sorts its listing in memory (StorageBackend::sortedPage) rather than where it stores.
class UnsortedStorage : public mneme::test::CountingStorage
{
public:
    using CountingStorage::CountingStorage;
    std::vector<MemoryRecord> browse(const ListRequest &request) override
    {
        ListRequest all = request;
        all.order = RecordOrder();
        all.limit = -1;
        all.offset = 0;
        return sortedPage(inner().browse(all), request.order, request.limit, request.offset);
    }
};

// The failure a future carries, or an Internal error saying there was none.
template<typename T>
Error failureOf(QFuture<T> future)
{
    return errorOf([&] { future.waitForFinished(); });
}

RecordQuery query(const QStringList &scopes = {}, int limit = 200)
{
    RecordQuery q;
    q.scopes = scopes;
    q.limit = limit;
    return q;
}

ForgetOptions byIds(const QStringList &ids)
{
    ForgetOptions o;
    o.ids = ids;
    return o;
}

ForgetOptions inScope(const QString &scope)
{
    ForgetOptions o;
    o.scope = scope;
    return o;
}

RecallOptions shallowRecall(int limit)
{
    RecallOptions o;
    o.limit = limit;
    o.depth = RecallDepth::Shallow;
    return o;
}

QStringList contents(const QList<MemoryRecord> &records)
{
    QStringList out;
    for (const MemoryRecord &r : records)
        out << r.content;
    return out;
}

} // namespace

class TestMemoryAsync : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;

    std::unique_ptr<Memory> open(std::shared_ptr<Embedder> e = nullptr, const QString &root = {}, bool readOnly = false,
                                 bool defaultSort = false)
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        c.rootScope = root;
        c.readOnly = readOnly;
        std::shared_ptr<StorageBackend> storage;
        if (defaultSort)
            storage = std::make_shared<UnsortedStorage>(
                PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_dir->path().toStdString()}}));
        return std::make_unique<Memory>(c, storage, e ? e : std::make_shared<FakeEmbedder>());
    }

    // Six records over three scopes with distinct fields and times, oldest first.
    static QList<MemoryRecord> seed(Memory &m)
    {
        struct Row
        {
            const char *content, *scope, *category, *source;
            double importance;
        };
        const Row rows[] = {
            {"Alpha uses PostgreSQL.", "/project/alpha", "decision", "user:ann", 0.9},
            {"Beta ships on Fridays.", "/project/beta", "schedule", "user:bob", 0.3},
            {"Über-fast caches in alpha.", "/project/alpha", "performance", "user:ann", 0.6},
            {"The office closes at six.", "/office", "schedule", "", 0.1},
            {"alpha's backups run nightly.", "/project/alpha/ops", "ops", "user:bob", 0.7},
            {"Coffee is on the second floor.", "/office", "facilities", "user:ann", 0.5},
        };
        QList<MemoryRecord> out;
        int day = 0;
        for (const Row &r : rows) {
            RememberOptions o = fields(QString::fromUtf8(r.scope), r.importance, {QString::fromUtf8(r.category)});
            o.source = QString::fromUtf8(r.source);
            o.createdAt = QDateTime(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC).addDays(day++);
            out << m.remember(QString::fromUtf8(r.content), o);
        }
        return out;
    }

private Q_SLOTS:
    void init() { m_dir = std::make_unique<TempStore>(); }
    void cleanup() { m_dir.reset(); }

    void asyncReadsGiveWhatTheBlockingFormsGive()
    {
        auto m = open();
        const QList<MemoryRecord> stored = seed(*m);
        const QString id = stored.first().id;
        QCOMPARE(m->treeAsync().result(), m->tree());
        const ScopeNode tree = m->scopeTreeAsync(QStringLiteral("/project"), 2).result();
        QCOMPARE(tree.recordCount, 4);
        QCOMPARE(tree.children.size(), 2);
        QCOMPARE(m->infoAsync(QStringLiteral("/office")).result().recordCount, 2);
        QCOMPARE(m->listScopesAsync().result(), m->listScopes());
        QCOMPARE(m->listCategoriesAsync().result(), m->listCategories());
        QCOMPARE(contents(m->listRecordsAsync(QStringLiteral("/project"), 2, 1).result()),
                 contents(m->listRecords(QStringLiteral("/project"), 2, 1)));
        QCOMPARE(m->getAsync(id).result()->content, stored.first().content);
        QVERIFY(!m->getAsync(QStringLiteral("no-such-id")).result().has_value());
        QCOMPARE(m->historyAsync(id).result().size(), 1);
        QCOMPARE(contents(m->searchRecordsAsync(query({QStringLiteral("/office")})).result()),
                 contents(m->searchRecords(query({QStringLiteral("/office")}))));
        QCOMPARE(m->countRecordsAsync(query()).result(), 6);
    }

    void asyncReadsFailThroughTheirFuture()
    {
        auto m = open();
        QCOMPARE(failureOf(m->infoAsync(QStringLiteral("/a/../b"))).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(failureOf(m->scopeTreeAsync(QString(), -1)).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(failureOf(m->historyAsync(QStringLiteral("no-such-id"))).kind(), ErrorKind::NotFound);
        QCOMPARE(failureOf(m->listRecordsAsync(QString(), 0)).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(failureOf(m->searchRecordsAsync(query({}, 10001))).kind(), ErrorKind::InvalidArgument);
        m->close();
        QCOMPARE(errorOf([&] { m->treeAsync(); }).kind(), ErrorKind::Storage); // a closed memory refuses at the call
    }

    // The issue this answers: a scope tree waited seconds behind a bulk save, on the caller's thread.
    // Here the save is held by its embedder while every async call is made: had any call waited for
    // it, the test would never reach the line that lets the save go on.
    void asyncCallsReturnWhileSavesArePending()
    {
        auto e = std::make_shared<GateEmbedder>(16);
        auto m = open(e);
        QFuture<SaveResult> save = m->rememberMany({QStringLiteral("Pending fact one."), QStringLiteral("Pending fact two.")},
                                                   fields(QStringLiteral("/pending")));
        QFuture<ScopeNode> tree = m->scopeTreeAsync();
        QFuture<ScopeInfo> info = m->infoAsync(QStringLiteral("/pending"));
        QFuture<QList<MemoryRecord>> page = m->searchRecordsAsync(query());
        QFuture<int> count = m->countRecordsAsync(query());
        QVERIFY(!save.isFinished());
        QVERIFY(!tree.isFinished());

        e->gate.release(1); // the batch's one embedding call
        // Reads made after the save was submitted see it.
        QCOMPARE(save.result().stored, 2);
        QCOMPARE(tree.result().recordCount, 2);
        QCOMPARE(info.result().recordCount, 2);
        QCOMPARE(page.result().size(), 2);
        QCOMPARE(count.result(), 2);

        // A write behind a pending save returns at once too, and runs after it.
        QFuture<SaveResult> another = m->rememberMany({QStringLiteral("Pending fact three.")}, fields(QStringLiteral("/pending")));
        QFuture<int> forgotten = m->forgetAsync(inScope(QStringLiteral("/pending")));
        QVERIFY(!forgotten.isFinished());
        e->gate.release(100);
        QCOMPARE(another.result().stored, 1);
        QCOMPARE(forgotten.result(), 3);
        QCOMPARE(m->countRecords(query()), 0);
    }

    void asyncWritesRunInOrderAfterEarlierSaves()
    {
        auto e = std::make_shared<GateEmbedder>(16);
        auto m = open(e);
        e->gate.release(1);
        const MemoryRecord r = m->remember(QStringLiteral("The build uses ninja."), fields(QStringLiteral("/build")));
        // A save held at its embedder, then an update and an undo queued behind it.
        QFuture<SaveResult> save = m->rememberMany({QStringLiteral("Builds run on two cores.")}, fields(QStringLiteral("/build")));
        UpdateOptions u;
        u.importance = 0.95;
        QFuture<MemoryRecord> updated = m->updateAsync(r.id, u);
        QFuture<MemoryRecord> undone = m->undoAsync(r.id);
        QVERIFY(!updated.isFinished());
        e->gate.release(100);
        QCOMPARE(updated.result().importance, 0.95);
        QCOMPARE(undone.result().importance, 0.5);
        QCOMPARE(m->get(r.id)->importance, 0.5);
        QCOMPARE(save.result().stored, 1);
        QCOMPARE(m->resetAsync(QStringLiteral("/build")).result(), 2);
        QCOMPARE(m->countRecords(query()), 0);
    }

    void asyncWritesRefuseBadInputAtTheCall()
    {
        auto m = open();
        const MemoryRecord r = m->remember(QStringLiteral("Refusals are immediate."), fields(QStringLiteral("/")));
        QCOMPARE(errorOf([&] { m->forgetAsync(ForgetOptions()); }).kind(), ErrorKind::InvalidArgument);
        UpdateOptions bad;
        bad.importance = 1.5;
        QCOMPARE(errorOf([&] { m->updateAsync(r.id, bad); }).kind(), ErrorKind::InvalidArgument);
        UpdateOptions blank;
        blank.content = QStringLiteral("   ");
        QCOMPARE(errorOf([&] { m->updateAsync(r.id, blank); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(errorOf([&] { m->resetAsync(QStringLiteral("/a/../b")); }).kind(), ErrorKind::InvalidArgument);
        // What only the store can tell comes through the future.
        UpdateOptions fine;
        fine.importance = 0.2;
        QCOMPARE(failureOf(m->updateAsync(QStringLiteral("no-such-id"), fine)).kind(), ErrorKind::NotFound);
        QCOMPARE(failureOf(m->undoAsync(QStringLiteral("no-such-id"))).kind(), ErrorKind::NotFound);
        QCOMPARE(failureOf(m->undoAsync(r.id)).kind(), ErrorKind::InvalidArgument); // nothing to undo
        QCOMPARE(m->get(r.id)->importance, 0.5);                                    // nothing written

        m->close();
        auto ro = open(nullptr, {}, true);
        QCOMPARE(errorOf([&] { ro->forgetAsync(inScope(QStringLiteral("/"))); }).kind(),
                 ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { ro->updateAsync(r.id, fine); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { ro->undoAsync(r.id); }).kind(), ErrorKind::PermissionDenied);
        QCOMPARE(errorOf([&] { ro->resetAsync(); }).kind(), ErrorKind::PermissionDenied);
    }

    // The async forms apply the reader's privacy like the blocking ones: a private record is shown to
    // its source and the curator only, and a write by another caller does not find it.
    void asyncCallsApplyTheReadersPrivacy()
    {
        auto m = open();
        RememberOptions o = fields(QStringLiteral("/notes"));
        o.source = QStringLiteral("user:ann");
        o.isPrivate = true;
        const MemoryRecord secret = m->remember(QStringLiteral("Ann's private note."), o);
        m->remember(QStringLiteral("A shared note."), fields(QStringLiteral("/notes")));
        const ReadContext ann = ReadContext::of(QStringLiteral("user:ann"));
        QVERIFY(!m->getAsync(secret.id).result().has_value());
        QCOMPARE(m->getAsync(secret.id, ann).result()->content, secret.content);
        QCOMPARE(m->countRecordsAsync(query()).result(), 1);
        QCOMPARE(m->countRecordsAsync(query(), ann).result(), 2);
        QCOMPARE(m->searchRecordsAsync(query(), ReadContext::asCurator()).result().size(), 2);
        QCOMPARE(m->infoAsync(QStringLiteral("/notes")).result().recordCount, 1);
        QCOMPARE(m->infoAsync(QStringLiteral("/notes"), ann).result().recordCount, 2);
        QCOMPARE(failureOf(m->historyAsync(secret.id)).kind(), ErrorKind::NotFound);
        QCOMPARE(m->historyAsync(secret.id, ann).result().size(), 1);
        UpdateOptions u;
        u.importance = 0.9;
        QCOMPARE(failureOf(m->updateAsync(secret.id, u)).kind(), ErrorKind::NotFound);
        QCOMPARE(m->updateAsync(secret.id, u, ann).result().importance, 0.9);
        QCOMPARE(m->forgetAsync(byIds({secret.id})).result(), 0);
        QCOMPARE(m->forgetAsync(byIds({secret.id}), ann).result(), 1);
    }

    void asyncWritesStayInsideTheRootScope()
    {
        std::unique_ptr<Memory> whole = open();
        const MemoryRecord outside = whole->remember(QStringLiteral("Outside the root."), fields(QStringLiteral("/other")));
        whole->close();
        auto m = open(nullptr, QStringLiteral("/crew/a"));
        UpdateOptions u;
        u.importance = 0.1;
        QCOMPARE(failureOf(m->updateAsync(outside.id, u)).kind(), ErrorKind::NotFound);
        QVERIFY(!m->getAsync(outside.id).result().has_value());
        QCOMPARE(m->forgetAsync(byIds({outside.id})).result(), 0);
    }

    void recordsChangedAfterEveryWrite()
    {
        auto m = open();
        QSignalSpy changed(m.get(), &Memory::recordsChanged);
        const MemoryRecord r = m->remember(QStringLiteral("Signals follow writes."), fields(QStringLiteral("/s")));
        QCOMPARE(changed.size(), 1);
        m->rememberMany({QStringLiteral("One more."), QStringLiteral("And another.")}, fields(QStringLiteral("/s"))).waitForFinished();
        QCOMPARE(changed.size(), 2);
        UpdateOptions u;
        u.content = QStringLiteral("Signals follow every write.");
        m->updateAsync(r.id, u).waitForFinished();
        QCOMPARE(changed.size(), 3);
        m->undoAsync(r.id).waitForFinished();
        QCOMPARE(changed.size(), 4);
        m->forgetAsync(byIds({r.id})).waitForFinished();
        QCOMPARE(changed.size(), 5);
        MemoryRecord imported = MemoryRecord::create(QStringLiteral("Imported record."));
        m->importRecords({imported}, false);
        QCOMPARE(changed.size(), 6);
        m->resetAsync(QStringLiteral("/s")).waitForFinished();
        QCOMPARE(changed.size(), 7);

        // Reads and recalls (whose access statistics are written later) change nothing a view shows.
        m->recall(QStringLiteral("Imported"), shallowRecall(5));
        m->drainWrites(); // writes the accesses noted by the recall
        m->searchRecordsAsync(query()).waitForFinished();
        QCOMPARE(changed.size(), 7);
        // A failed write signals nothing.
        QVERIFY(failureOf(m->undoAsync(QStringLiteral("no-such-id"))).kind() == ErrorKind::NotFound);
        QCOMPARE(changed.size(), 7);
    }

    void searchRecordsFilters_data()
    {
        QTest::addColumn<QStringList>("scopes");
        QTest::addColumn<QStringList>("categories");
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected"); // newest first
        const QStringList none;
        QTest::newRow("everything") << none << none << QString() << QString()
                                    << QStringList{"Coffee is on the second floor.", "alpha's backups run nightly.",
                                                   "The office closes at six.", "Über-fast caches in alpha.",
                                                   "Beta ships on Fridays.", "Alpha uses PostgreSQL."};
        QTest::newRow("scope and below") << QStringList{"/project/alpha"} << none << QString() << QString()
                                         << QStringList{"alpha's backups run nightly.", "Über-fast caches in alpha.",
                                                        "Alpha uses PostgreSQL."};
        QTest::newRow("two scopes") << QStringList{"/office", "/project/beta"} << none << QString() << QString()
                                    << QStringList{"Coffee is on the second floor.", "The office closes at six.",
                                                   "Beta ships on Fridays."};
        QTest::newRow("category") << none << QStringList{"schedule"} << QString() << QString()
                                  << QStringList{"The office closes at six.", "Beta ships on Fridays."};
        QTest::newRow("any of two categories") << none << QStringList{"ops", "decision"} << QString() << QString()
                                               << QStringList{"alpha's backups run nightly.", "Alpha uses PostgreSQL."};
        QTest::newRow("source") << none << none << QStringLiteral("user:bob") << QString()
                                << QStringList{"alpha's backups run nightly.", "Beta ships on Fridays."};
        QTest::newRow("text ignores case") << none << none << QString() << QStringLiteral("ALPHA")
                                           << QStringList{"alpha's backups run nightly.", "Über-fast caches in alpha.",
                                                          "Alpha uses PostgreSQL."};
        QTest::newRow("text folds non-ASCII case") << none << none << QString() << QStringLiteral("über")
                                                   << QStringList{"Über-fast caches in alpha."};
        QTest::newRow("text with LIKE wildcards is literal") << none << none << QString() << QStringLiteral("%_")
                                                             << QStringList();
        QTest::newRow("everything at once") << QStringList{"/project"} << QStringList{"ops", "performance"}
                                            << QStringLiteral("user:ann") << QStringLiteral("caches")
                                            << QStringList{"Über-fast caches in alpha."};
        QTest::newRow("nothing") << QStringList{"/nowhere"} << none << QString() << QString() << QStringList();
    }

    void searchRecordsFilters()
    {
        QFETCH(QStringList, scopes);
        QFETCH(QStringList, categories);
        QFETCH(QString, source);
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        auto m = open();
        seed(*m);
        RecordQuery q = query(scopes);
        q.categories = categories;
        q.source = source;
        q.text = text;
        QCOMPARE(contents(m->searchRecords(q)), expected);
        QCOMPARE(m->countRecords(q), expected.size());
    }

    void searchRecordsSorts_data()
    {
        QTest::addColumn<int>("field");
        QTest::addColumn<bool>("descending");
        QTest::addColumn<bool>("defaultSort");
        const QList<QPair<const char *, RecordOrder::Field>> fields = {
            {"created", RecordOrder::Field::CreatedAt},
            {"updated", RecordOrder::Field::UpdatedAt},
            {"accessed", RecordOrder::Field::LastAccessed},
            {"importance", RecordOrder::Field::Importance},
            {"access count", RecordOrder::Field::AccessCount},
            {"scope", RecordOrder::Field::Scope},
            {"source", RecordOrder::Field::Source},
            {"content", RecordOrder::Field::Content},
        };
        for (const auto &[name, field] : fields) {
            for (const bool defaultSort : {false, true}) {
                const char *by = defaultSort ? "the default sort" : "SQLite";
                QTest::addRow("%s ascending, %s", name, by) << int(field) << false << defaultSort;
                QTest::addRow("%s descending, %s", name, by) << int(field) << true << defaultSort;
            }
        }
    }

    // The order is RecordOrder::before's, page after page, whether the store sorts (SQLite) or
    // StorageBackend::sortedPage does.
    void searchRecordsSorts()
    {
        QFETCH(int, field);
        QFETCH(bool, descending);
        QFETCH(bool, defaultSort);
        auto m = open(nullptr, {}, false, defaultSort);
        const QList<MemoryRecord> stored = seed(*m);
        UpdateOptions u;
        u.importance = 0.6; // a tie with "Über-fast caches", broken by id
        m->update(stored.last().id, u);
        m->recall(QStringLiteral("alpha"), shallowRecall(2)); // access counts differ
        m->drainWrites();

        RecordQuery q = query();
        q.order = RecordOrder{RecordOrder::Field(field), descending};
        QList<MemoryRecord> expected = m->searchRecords(query()); // every record, newest first
        std::sort(expected.begin(), expected.end(), [&](const MemoryRecord &a, const MemoryRecord &b) { return q.order.before(a, b); });

        QList<MemoryRecord> paged;
        for (q.offset = 0; q.offset < 8; q.offset += 4) {
            q.limit = 4;
            paged += m->searchRecords(q);
        }
        QCOMPARE(contents(paged), contents(expected));
    }

    void searchRecordsStaysInsideTheRootScope()
    {
        std::unique_ptr<Memory> whole = open();
        seed(*whole);
        whole->close();
        auto m = open(nullptr, QStringLiteral("/project"));
        QCOMPARE(m->countRecords(query()), 4);
        QCOMPARE(m->countRecords(query({QStringLiteral("/alpha")})), 3); // relative to the root
        QCOMPARE(m->countRecords(query({QStringLiteral("/office")})), 0);
        RecordQuery text = query();
        text.text = QStringLiteral("office");
        QCOMPARE(m->countRecords(text), 0);
    }

    void scopeTreeLimitsChildren()
    {
        auto m = open();
        for (int i = 0; i < 25; ++i)
            m->remember(QStringLiteral("Record number %1 of the wide tree.").arg(i),
                        fields(QStringLiteral("/wide/s%1").arg(i, 2, 10, QLatin1Char('0'))));
        QCOMPARE(m->scopeTree(QStringLiteral("/wide"), 1).children.size(), 20);
        const ScopeNode all = m->scopeTreeAsync(QStringLiteral("/wide"), 1, {}, -1).result();
        QCOMPARE(all.children.size(), 25);
        QCOMPARE(all.children.last().path, QStringLiteral("/wide/s24"));
        QCOMPARE(all.children.last().recordCount, 1);
        QCOMPARE(m->scopeTree(QStringLiteral("/wide"), 1, {}, 3).children.size(), 3);
    }

    // close() (and so the destructor) waits for the reads in flight, which use the store.
    void closeWaitsForAsyncReads()
    {
        auto e = std::make_shared<GateEmbedder>(16);
        auto m = open(e);
        QFuture<SaveResult> save = m->rememberMany({QStringLiteral("Held while closing.")}, fields(QStringLiteral("/")));
        QList<QFuture<ScopeInfo>> reads;
        for (int i = 0; i < 6; ++i)
            reads << m->infoAsync();
        std::thread opener([&] {
            QThread::msleep(50);
            e->gate.release(100);
        });
        m->close();
        opener.join();
        for (QFuture<ScopeInfo> &r : reads) {
            QVERIFY(r.isFinished());
            QCOMPARE(r.result().recordCount, 1);
        }
        QCOMPARE(save.result().stored, 1);
    }
};

QTEST_GUILESS_MAIN(TestMemoryAsync)
#include "test_memory_async.moc"
