// The models over a Memory (scope tree, records, recall results, a record's history) on the real
// SQLite storage plugin, each checked by QAbstractItemModelTester while it loads, pages, filters,
// sorts and follows writes.

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/memory/memory.h>
#include <mneme/models/history_model.h>
#include <mneme/models/recall_result_model.h>
#include <mneme/models/record_list_model.h>
#include <mneme/models/scope_tree_model.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::TempStore;

namespace {

QStringList idsOf(const RecordListModel &model)
{
    QStringList out;
    for (int i = 0; i < model.rowCount(); ++i)
        out << model.recordAt(i).id;
    return out;
}

} // namespace

class TestMemoryModels : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<Memory> m_memory;

    Memory &memory()
    {
        if (!m_memory) {
            MemoryConfig c;
            c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
            m_memory = std::make_unique<Memory>(c, nullptr, std::make_shared<FakeEmbedder>());
        }
        return *m_memory;
    }

    // Six records over four scopes, one private to ann.
    void seed()
    {
        struct Row
        {
            const char *content, *scope, *category, *source;
            double importance;
            bool isPrivate;
        };
        const Row rows[] = {
            {"Alpha uses PostgreSQL for its ledger.", "/project/alpha", "decision", "user:ann", 0.9, false},
            {"Beta ships on Fridays.", "/project/beta", "schedule", "user:bob", 0.3, false},
            {"Über-fast caches in alpha.", "/project/alpha", "performance", "user:ann", 0.6, false},
            {"The office closes at six.", "/office", "schedule", "", 0.1, false},
            {"Alpha's backups run nightly.", "/project/alpha/ops", "ops", "user:bob", 0.7, false},
            {"Ann's salary review is in May.", "/office", "hr", "user:ann", 0.5, true},
        };
        int day = 0;
        for (const Row &r : rows) {
            RememberOptions o = fields(QString::fromUtf8(r.scope), r.importance, {QString::fromUtf8(r.category)});
            o.source = QString::fromUtf8(r.source);
            o.isPrivate = r.isPrivate;
            o.createdAt = QDateTime(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC).addDays(day++);
            memory().remember(QString::fromUtf8(r.content), o);
        }
    }

    static void waitIdle(RecordListModel &m)
    {
        QTRY_VERIFY(!m.isLoading() && m.totalCount() >= 0);
    }

private Q_SLOTS:
    void init() { m_dir = std::make_unique<TempStore>(); }
    void cleanup()
    {
        m_memory.reset();
        m_dir.reset();
    }

    // ---- ScopeTreeModel -------------------------------------------------------------------------

    void scopeTreeLoadsLazilyWithCounts()
    {
        seed();
        ScopeTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &ScopeTreeModel::childrenLoaded);
        model.setMemory(&memory());
        QVERIFY(loaded.wait());
        QCOMPARE(model.rowCount(), 1);
        const QModelIndex top = model.index(0, 0);
        QCOMPARE(top.data(ScopeTreeModel::PathRole).toString(), QStringLiteral("/"));
        QCOMPARE(top.data(ScopeTreeModel::RecordCountRole).toInt(), 5); // the anonymous reader: shared only
        QCOMPARE(model.rowCount(top), 2);                               // /office, /project
        const QModelIndex project = model.indexOfPath(QStringLiteral("/project"));
        QVERIFY(project.isValid());
        QCOMPARE(project.data(ScopeTreeModel::NameRole).toString(), QStringLiteral("project"));
        QCOMPARE(model.index(project.row(), ScopeTreeModel::CountColumn, top).data().toString(), QLocale().toString(4));
        // /project's children are read when it is expanded (fetchMore), one level ahead.
        QVERIFY(model.hasChildren(project));
        QVERIFY(model.canFetchMore(project));
        model.fetchMore(project);
        QVERIFY(loaded.wait());
        QCOMPARE(model.rowCount(project), 2);
        const QModelIndex alpha = model.indexOfPath(QStringLiteral("/project/alpha"));
        QCOMPARE(alpha.data(ScopeTreeModel::RecordCountRole).toInt(), 3);
        QVERIFY(model.hasChildren(alpha)); // ops below it
        QVERIFY(!model.hasChildren(model.indexOfPath(QStringLiteral("/project/beta"))));
        QVERIFY(model.roleNames().values().contains("recordCount"));
    }

    void scopeTreeFollowsWritesAndTheReader()
    {
        seed();
        ScopeTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &ScopeTreeModel::childrenLoaded);
        model.setMemory(&memory());
        QVERIFY(loaded.wait());
        const QModelIndex top = model.index(0, 0);
        // A new scope appears, and the counts above it change, without a reload.
        memory().rememberMany({QStringLiteral("Lunch is at noon."), QStringLiteral("Parking is free.")}, fields(QStringLiteral("/campus")));
        QTRY_COMPARE(model.rowCount(top), 3);
        QTRY_COMPARE(top.data(ScopeTreeModel::RecordCountRole).toInt(), 7);
        QVERIFY(model.indexOfPath(QStringLiteral("/campus")).isValid());
        // ...and goes when its records do.
        ForgetOptions gone;
        gone.scope = QStringLiteral("/campus");
        memory().forgetAsync(gone);
        QTRY_COMPARE(model.rowCount(top), 2);
        // The curator sees ann's private record too.
        model.setReader(ReadContext::asCurator());
        QVERIFY(loaded.wait());
        QCOMPARE(model.index(0, 0).data(ScopeTreeModel::RecordCountRole).toInt(), 6);
        model.setMemory(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }

    // ---- RecordListModel ------------------------------------------------------------------------

    void recordsArePagedLazily()
    {
        // Imported as given: remembered, such alike records would be consolidated.
        QList<MemoryRecord> records;
        for (int i = 0; i < 450; ++i) {
            MemoryRecord r = MemoryRecord::create(QStringLiteral("Paged record number %1.").arg(i));
            r.scope = QStringLiteral("/bulk");
            records << r;
        }
        QCOMPARE(memory().importRecords(records, false).stored, 450);
        RecordListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMemory(&memory());
        waitIdle(model);
        QCOMPARE(model.totalCount(), 450);
        QCOMPARE(model.rowCount(), 200); // one page, not the store
        QVERIFY(model.canFetchMore(QModelIndex()));
        model.fetchMore(QModelIndex());
        QVERIFY(!model.canFetchMore(QModelIndex())); // one page at a time
        QTRY_COMPARE(model.rowCount(), 400);
        model.fetchMore(QModelIndex());
        QTRY_COMPARE(model.rowCount(), 450);
        QTRY_VERIFY(!model.isLoading());
        QVERIFY(!model.canFetchMore(QModelIndex()));
        const QStringList ids = idsOf(model);
        QCOMPARE(QSet<QString>(ids.begin(), ids.end()).size(), 450); // no row twice
    }

    void recordsAreFiltered_data()
    {
        QTest::addColumn<QStringList>("scopes");
        QTest::addColumn<QStringList>("categories");
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected"); // contents, newest first

        QTest::newRow("everything") << QStringList() << QStringList() << QString() << QString()
                                    << QStringList{QStringLiteral("Alpha's backups run nightly."), QStringLiteral("The office closes at six."),
                                                   QStringLiteral("Über-fast caches in alpha."), QStringLiteral("Beta ships on Fridays."),
                                                   QStringLiteral("Alpha uses PostgreSQL for its ledger.")};
        QTest::newRow("scope and below") << QStringList{QStringLiteral("/project/alpha")} << QStringList() << QString() << QString()
                                         << QStringList{QStringLiteral("Alpha's backups run nightly."), QStringLiteral("Über-fast caches in alpha."),
                                                        QStringLiteral("Alpha uses PostgreSQL for its ledger.")};
        QTest::newRow("two scopes") << QStringList{QStringLiteral("/office"), QStringLiteral("/project/beta")} << QStringList() << QString()
                                    << QString() << QStringList{QStringLiteral("The office closes at six."), QStringLiteral("Beta ships on Fridays.")};
        QTest::newRow("category") << QStringList() << QStringList{QStringLiteral("schedule")} << QString() << QString()
                                  << QStringList{QStringLiteral("The office closes at six."), QStringLiteral("Beta ships on Fridays.")};
        QTest::newRow("source") << QStringList() << QStringList() << QStringLiteral("user:bob") << QString()
                                << QStringList{QStringLiteral("Alpha's backups run nightly."), QStringLiteral("Beta ships on Fridays.")};
        QTest::newRow("text ignores case") << QStringList() << QStringList() << QString() << QStringLiteral("ALPHA")
                                           << QStringList{QStringLiteral("Alpha's backups run nightly."), QStringLiteral("Über-fast caches in alpha."),
                                                          QStringLiteral("Alpha uses PostgreSQL for its ledger.")};
        QTest::newRow("text beyond ASCII") << QStringList() << QStringList() << QString() << QStringLiteral("über")
                                           << QStringList{QStringLiteral("Über-fast caches in alpha.")};
        QTest::newRow("private stays hidden") << QStringList() << QStringList() << QString() << QStringLiteral("salary") << QStringList();
        QTest::newRow("all conditions") << QStringList{QStringLiteral("/project")} << QStringList{QStringLiteral("ops")}
                                        << QStringLiteral("user:bob") << QStringLiteral("nightly")
                                        << QStringList{QStringLiteral("Alpha's backups run nightly.")};
    }

    void recordsAreFiltered()
    {
        QFETCH(QStringList, scopes);
        QFETCH(QStringList, categories);
        QFETCH(QString, source);
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        seed();
        RecordListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMemory(&memory());
        model.setScopes(scopes);
        model.setCategories(categories);
        model.setSource(source);
        model.setText(text);
        waitIdle(model);
        QStringList shown;
        for (int i = 0; i < model.rowCount(); ++i)
            shown << model.index(i, RecordListModel::ContentColumn).data().toString();
        QCOMPARE(shown, expected);
        QCOMPARE(model.totalCount(), expected.size());
    }

    void recordsAreSortedByTheStore_data()
    {
        QTest::addColumn<int>("column");
        QTest::addColumn<int>("order");
        QTest::addColumn<QString>("first");
        QTest::newRow("importance ascending") << int(RecordListModel::ImportanceColumn) << int(Qt::AscendingOrder)
                                              << QStringLiteral("The office closes at six.");
        QTest::newRow("importance descending") << int(RecordListModel::ImportanceColumn) << int(Qt::DescendingOrder)
                                               << QStringLiteral("Alpha uses PostgreSQL for its ledger.");
        QTest::newRow("created ascending") << int(RecordListModel::CreatedColumn) << int(Qt::AscendingOrder)
                                           << QStringLiteral("Alpha uses PostgreSQL for its ledger.");
        QTest::newRow("content ascending") << int(RecordListModel::ContentColumn) << int(Qt::AscendingOrder)
                                           << QStringLiteral("Alpha uses PostgreSQL for its ledger.");
        QTest::newRow("scope descending") << int(RecordListModel::ScopeColumn) << int(Qt::DescendingOrder)
                                          << QStringLiteral("Beta ships on Fridays.");
        QTest::newRow("categories do not sort") << int(RecordListModel::CategoriesColumn) << int(Qt::AscendingOrder)
                                                << QStringLiteral("Alpha's backups run nightly.");
    }

    void recordsAreSortedByTheStore()
    {
        QFETCH(int, column);
        QFETCH(int, order);
        QFETCH(QString, first);
        seed();
        RecordListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMemory(&memory());
        model.setPageSize(2); // the order holds across pages: the store sorts, not the page
        model.sort(column, Qt::SortOrder(order));
        waitIdle(model);
        QVERIFY(model.rowCount() >= 2);
        QCOMPARE(model.recordAt(0).content, first);
    }

    void recordsFollowWritesKeepingRows()
    {
        seed();
        RecordListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMemory(&memory());
        waitIdle(model);
        const QStringList before = idsOf(model);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        // A new record comes first (newest first); the other rows stay.
        RememberOptions o = fields(QStringLiteral("/office"));
        o.createdAt = QDateTime(QDate(2025, 1, 1), QTime(9, 0), Qt::UTC);
        const MemoryRecord fresh = memory().remember(QStringLiteral("The new hire starts Monday."), o);
        QTRY_COMPARE(model.rowCount(), 6);
        QCOMPARE(model.recordAt(0).id, fresh.id);
        QCOMPARE(idsOf(model).mid(1), before);
        QCOMPARE(reset.size(), 0);
        QCOMPARE(inserted.size(), 1);
        QTRY_COMPARE(model.totalCount(), 6);
        // An edit changes its row in place.
        UpdateOptions u;
        u.content = QStringLiteral("The new hire starts Tuesday.");
        memory().updateAsync(fresh.id, u);
        QTRY_COMPARE(model.index(0, RecordListModel::ContentColumn).data().toString(), u.content.value());
        // A forgotten record's row goes.
        ForgetOptions f;
        f.ids = {before.first()};
        memory().forgetAsync(f);
        QTRY_COMPARE(model.rowCount(), 5);
        QVERIFY(model.rowOf(before.first()) < 0);
        QCOMPARE(reset.size(), 0);
        // Roles for QML.
        const QVariantMap row = model.get(0);
        QCOMPARE(row.value(QStringLiteral("content")).toString(), u.content.value());
        QCOMPARE(row.value(QStringLiteral("scope")).toString(), QStringLiteral("/office"));
        QVERIFY(model.roleNames().values().contains("recordId"));
    }

    void recordsReportBadQueries()
    {
        seed();
        RecordListModel model;
        QSignalSpy failed(&model, &RecordListModel::errorOccurred);
        model.setMemory(&memory());
        model.setScopes({QStringLiteral("/a/../b")});
        QTRY_VERIFY(!failed.isEmpty());
        QVERIFY(!model.lastError().isEmpty());
        QCOMPARE(model.rowCount(), 0);
    }

    // ---- RecallResultModel ----------------------------------------------------------------------

    void recallResultsCarryScoresSignalsAndReasons()
    {
        seed();
        RecallResultModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy finished(&model, &RecallResultModel::finished);
        model.setMemory(&memory());
        model.search(QStringLiteral("PostgreSQL ledger"), 5);
        QVERIFY(finished.wait());
        QVERIFY(model.rowCount() > 0);
        QCOMPARE(model.query(), QStringLiteral("PostgreSQL ledger"));
        const QModelIndex best = model.index(0, 0);
        QCOMPARE(best.data(RecordRoles::ContentRole).toString(), QStringLiteral("Alpha uses PostgreSQL for its ledger."));
        const double score = best.data(RecallResultModel::ScoreRole).toDouble();
        QVERIFY(score > 0 && score <= 1);
        QCOMPARE(score, model.matchAt(0).score);
        QCOMPARE(best.data(RecallResultModel::KeywordRole).toDouble(), model.matchAt(0).signalValues.keyword);
        QVERIFY(best.data(RecallResultModel::KeywordRole).toDouble() > 0);
        QCOMPARE(best.data(RecallResultModel::RecencyRole).toDouble(), model.matchAt(0).signalValues.recency);
        QCOMPARE(best.data(RecallResultModel::ImportanceSignalRole).toDouble(), model.matchAt(0).signalValues.importance);
        QVERIFY(best.data(RecallResultModel::ReasonsRole).toStringList().contains(QStringLiteral("keyword")));
        QCOMPARE(model.index(0, RecallResultModel::KeywordColumn).data(Qt::UserRole).toDouble(),
                 model.matchAt(0).signalValues.keyword);
        const QVariantMap forQml = model.get(0);
        QCOMPARE(forQml.value(QStringLiteral("score")).toDouble(), score);
        QVERIFY(forQml.contains(QStringLiteral("semantic")) && forQml.contains(QStringLiteral("reasons")));
        // The private record is found by the curator only.
        model.search(QStringLiteral("salary review"), 5);
        QVERIFY(finished.wait());
        for (int i = 0; i < model.rowCount(); ++i)
            QVERIFY(!model.matchAt(i).record.isPrivate);
        model.search(QStringLiteral("salary review"), 5, QString(), QString(), true);
        QVERIFY(finished.wait());
        QCOMPARE(model.matchAt(0).record.content, QStringLiteral("Ann's salary review is in May."));
        // Bad options fail without touching the rows.
        QSignalSpy failed(&model, &RecallResultModel::errorOccurred);
        const int rows = model.rowCount();
        model.search(QStringLiteral("anything"), 0);
        QTRY_VERIFY(!failed.isEmpty());
        QCOMPARE(model.rowCount(), rows);
    }

    // ---- HistoryModel ---------------------------------------------------------------------------

    void historyShowsEveryChangeLive()
    {
        const MemoryRecord r = memory().remember(QStringLiteral("The launch is in March."), fields(QStringLiteral("/plans")));
        HistoryModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &HistoryModel::loaded);
        model.setMemory(&memory());
        model.setRecordId(r.id);
        QVERIFY(loaded.wait());
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, 0).data(HistoryModel::EventRole).toString(), QStringLiteral("ADD"));
        UpdateOptions u;
        u.content = QStringLiteral("The launch is in April.");
        memory().updateAsync(r.id, u);
        QTRY_COMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(1, HistoryModel::EventColumn).data().toString(), QStringLiteral("UPDATE"));
        QCOMPARE(model.index(1, 0).data(HistoryModel::OldContentRole).toString(), QStringLiteral("The launch is in March."));
        QCOMPARE(model.index(1, 0).data(HistoryModel::NewContentRole).toString(), QStringLiteral("The launch is in April."));
        memory().undoAsync(r.id);
        QTRY_COMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(2, HistoryModel::NewContentColumn).data().toString(), QStringLiteral("The launch is in March."));
        // An unknown id is an error, and no rows.
        QSignalSpy failed(&model, &HistoryModel::errorOccurred);
        model.setRecordId(QStringLiteral("no-such-id"));
        QVERIFY(failed.wait());
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestMemoryModels)
#include "test_memory_models.moc"
