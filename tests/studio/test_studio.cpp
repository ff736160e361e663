// Mneme Studio's main paths driven as a user drives them (keys, clicks) against a SQLite store on
// disk, under QT_QPA_PLATFORM=offscreen.
#include "chat_page.h"
#include "main_window.h"
#include "provider_box.h"
#include "recall_panel.h"
#include "record_details.h"
#include "records_page.h"
#include "run_page.h"
#include "signal_bar_delegate.h"
#include "store_session.h"
#include "transfer_job.h"

#include "tests/support/temp_store.h"

#include <mneme/memory/memory.h>
#include <mneme/memory/record_file.h>
#include <mneme/models/chat_message_model.h>
#include <mneme/models/event_log_model.h>
#include <mneme/models/history_model.h>
#include <mneme/models/recall_result_model.h>
#include <mneme/models/record_list_model.h>
#include <mneme/models/scope_tree_model.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHeaderView>
#include <QImage>
#include <QLineEdit>
#include <QMessageBox>
#include <QPainter>
#include <QPlainTextEdit>
#include <QProgressDialog>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTreeView>
#include <functional>

using namespace mneme;
using namespace mneme::studio;

namespace {

struct Seed
{
    const char *content;
    const char *scope;
    const char *category;
    const char *source;
};

const Seed kSeeds[] = {
    {"We decided to use PostgreSQL for the user database.", "/project/alpha", "decision", ""},
    {"Our staging environment uses port 8080.", "/project/alpha/infra", "ops", ""},
    {"Acme renews their contract in March.", "/customer/acme", "contract", "user:alice"},
    {"Bo prefers short meetings on Mondays.", "/team", "preference", ""},
    {"The billing service retries a failed charge three times.", "/project/beta", "ops", ""},
};
constexpr int kSeedCount = int(std::size(kSeeds));

QPushButton *buttonNamed(QWidget *root, const QString &accessibleName)
{
    for (QPushButton *b : root->findChildren<QPushButton *>())
        if (b->accessibleName() == accessibleName)
            return b;
    return nullptr;
}

void clickRow(QTableView *view, int row, int column = 0)
{
    const QModelIndex index = view->model()->index(row, column);
    view->scrollTo(index);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(index).center());
}

} // namespace

class TestStudio : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void opensAStoreFromDisk();
    void aMissingStoreIsNamedAndNotCreated();
    void aSessionGoneWhileOpeningClosesTheStore();
    void newStoreCreatesTheFile();
    void scopeTreeChoosesTheRecords();
    void filtersByTextCategoryAndSource();
    void sortsByAClickOnAColumn();
    void editSaveForgetAndUndo();
    void undoLastChangeRevertsTheRecordsLastChange();
    void recallShowsEachSignalAsABar();
    void signalBarIsAsLongAsItsValue_data();
    void signalBarIsAsLongAsItsValue();
    void everyControlHasAnAccessibleName();
    void exportWritesWhatImportReads();
    void importCancelledKeepsTheBatchesBefore();
    void importOfABadFileStoresNothing();
    void runsTheExampleCrewOfflineWithItsEvents();
    void runsTheExampleFlowOffline();
    void badInputsAreRefusedSayingWhy();
    void theProviderIsKeptWithoutItsKey();
    void chatsWithTheExampleAgentStreaming();

private:
    void openSeeded();
    int rowOfContent(const QString &content) const;
    int storedCount() const;

    test::TempStore m_dir;
    QString m_seed;  // the seeded store, made once
    QString m_store; // this test's copy of it
    int m_copies = 0;
    std::unique_ptr<QSettings> m_settings;
    std::unique_ptr<MainWindow> m_window;
};

void TestStudio::initTestCase()
{
    // One store on disk, made the way any program would make it; each test opens it in a new window.
    m_seed = m_dir.path(QStringLiteral("seed.db"));
    MemoryConfig config;
    config.storage = Json(m_seed.toStdString());
    Memory memory(config);
    for (const Seed &s : kSeeds) {
        RememberOptions o;
        o.scope = QString::fromUtf8(s.scope);
        o.categories = QStringList{QString::fromUtf8(s.category)};
        o.source = QString::fromUtf8(s.source);
        memory.remember(QString::fromUtf8(s.content), o);
    }
}

void TestStudio::init()
{
    // Each test edits its own copy of the seeded store (closed, so the file is the whole store).
    m_store = m_dir.path(QStringLiteral("studio-%1.db").arg(++m_copies));
    QVERIFY(QFile::copy(m_seed, m_store));
    m_settings = std::make_unique<QSettings>(m_dir.path(QStringLiteral("studio-%1.ini").arg(m_copies)), QSettings::IniFormat);
    m_window = std::make_unique<MainWindow>(*m_settings);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

void TestStudio::cleanup()
{
    m_window.reset();
    m_settings.reset();
}

void TestStudio::openSeeded()
{
    m_window->openStore(m_store);
    QTRY_VERIFY(m_window->session()->memory() != nullptr);
    RecordListModel *records = m_window->recordsPage()->recordModel();
    QTRY_COMPARE(records->totalCount(), kSeedCount);
    QTRY_COMPARE(records->rowCount(), kSeedCount);
}

int TestStudio::rowOfContent(const QString &content) const
{
    const RecordListModel *records = m_window->recordsPage()->recordModel();
    for (int row = 0; row < records->rowCount(); ++row)
        if (records->recordAt(row).content == content)
            return row;
    return -1;
}

int TestStudio::storedCount() const
{
    return m_window->session()->memory()->countRecords(RecordQuery(), ReadContext::asCurator());
}

void TestStudio::opensAStoreFromDisk()
{
    openSeeded();
    QCOMPARE(m_window->session()->path(), m_store);
    QVERIFY(m_window->windowTitle().contains(QFileInfo(m_store).fileName()));
    QCOMPARE(m_window->recentStores(), QStringList{m_store});
    QCOMPARE(m_settings->value(QStringLiteral("recentStores")).toStringList(), QStringList{m_store});
    // The scope tree shows the root with every record, opened one level.
    ScopeTreeModel *scopes = m_window->recordsPage()->scopeModel();
    QTRY_VERIFY(scopes->indexOfPath(QStringLiteral("/project")).isValid());
    const QModelIndex root = scopes->index(0, ScopeTreeModel::CountColumn);
    QCOMPARE(root.data(ScopeTreeModel::RecordCountRole).toInt(), kSeedCount);
    QVERIFY(m_window->recordsPage()->scopeView()->isExpanded(scopes->index(0, 0)));
}

void TestStudio::aSessionGoneWhileOpeningClosesTheStore()
{
    // The window closed while the store was still opening: the Memory the open made is closed, not
    // left open for the rest of the process (its write-ahead log is removed only at the last close).
    {
        StoreSession session;
        session.open(m_store, false);
        QVERIFY(session.isOpening());
    }
    QVERIFY(!QFile::exists(m_store + QStringLiteral("-wal")));
    // and the store opens as usual afterwards
    openSeeded();
}

void TestStudio::aMissingStoreIsNamedAndNotCreated()
{
    const QString missing = m_dir.path(QStringLiteral("nowhere/missing.db"));
    m_window->openStore(missing);
    QTRY_VERIFY(m_window->lastMessage().contains(QStringLiteral("There is no store at")));
    QVERIFY(m_window->lastMessage().contains(QStringLiteral("New Store")));
    QVERIFY(!QFileInfo::exists(missing));
    QVERIFY(m_window->session()->memory() == nullptr);
    QVERIFY(!m_window->recordsPage()->isEnabled());
}

void TestStudio::newStoreCreatesTheFile()
{
    const QString fresh = m_dir.path(QStringLiteral("made/here/new.db"));
    m_window->openStore(fresh, true);
    QTRY_VERIFY(m_window->session()->memory() != nullptr);
    QVERIFY(QFileInfo::exists(fresh));
    QTRY_VERIFY(!m_window->recordsPage()->recordModel()->isLoading());
    QCOMPARE(m_window->recordsPage()->recordModel()->rowCount(), 0);
    // Opening the seeded store afterwards replaces it; the recent list holds both, newest first.
    openSeeded();
    QCOMPARE(m_window->recentStores(), (QStringList{m_store, fresh}));
}

void TestStudio::scopeTreeChoosesTheRecords()
{
    openSeeded();
    RecordsPage *page = m_window->recordsPage();
    QTreeView *tree = page->scopeView();
    ScopeTreeModel *scopes = page->scopeModel();
    QTRY_VERIFY(scopes->indexOfPath(QStringLiteral("/project")).isValid());
    const QModelIndex project = scopes->indexOfPath(QStringLiteral("/project"));
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, tree->visualRect(project).center());
    QTRY_COMPARE(page->recordModel()->totalCount(), 3);
    QTRY_COMPARE(page->recordModel()->rowCount(), 3);

    // The keyboard moves through the tree: Up goes back to the root, every record again.
    tree->setFocus();
    QTest::keyClick(tree, Qt::Key_Home);
    QTRY_COMPARE(page->recordModel()->totalCount(), kSeedCount);
    // Right opens /customer (its children are read on demand), Down then chooses it.
    QTest::keyClick(tree, Qt::Key_Down);
    QCOMPARE(scopes->pathAt(tree->currentIndex()), QStringLiteral("/customer"));
    QTRY_COMPARE(page->recordModel()->totalCount(), 1);
    QTest::keyClick(tree, Qt::Key_Right);
    QTRY_VERIFY(scopes->indexOfPath(QStringLiteral("/customer/acme")).isValid());
    QTest::keyClick(tree, Qt::Key_Down);
    QCOMPARE(scopes->pathAt(tree->currentIndex()), QStringLiteral("/customer/acme"));
    QTRY_COMPARE(page->recordModel()->rowCount(), 1);
    QCOMPARE(page->recordModel()->recordAt(0).content, QStringLiteral("Acme renews their contract in March."));
}

void TestStudio::filtersByTextCategoryAndSource()
{
    openSeeded();
    RecordsPage *page = m_window->recordsPage();
    RecordListModel *records = page->recordModel();

    QTest::keyClicks(page->textFilter(), QStringLiteral("STAGING"));
    QTRY_COMPARE(records->totalCount(), 1);
    // The count and the first page are read apart: either may arrive first.
    QTRY_COMPARE(records->recordAt(0).content, QStringLiteral("Our staging environment uses port 8080."));
    page->textFilter()->clear();
    QTRY_COMPARE(records->totalCount(), kSeedCount);

    // The category list is read from the store, with counts; choosing one by keyboard filters.
    QComboBox *category = page->categoryFilter();
    QTRY_VERIFY(category->findData(QStringLiteral("ops")) > 0);
    QCOMPARE(category->itemText(category->findData(QStringLiteral("ops"))), QStringLiteral("ops (2)"));
    category->setFocus();
    while (category->currentData().toString() != QStringLiteral("ops"))
        QTest::keyClick(category, Qt::Key_Down);
    QTRY_COMPARE(records->totalCount(), 2);
    QTest::keyClick(category, Qt::Key_Home);
    QTRY_COMPARE(records->totalCount(), kSeedCount);

    QTest::keyClicks(page->sourceFilter(), QStringLiteral("user:alice"));
    QTRY_COMPARE(records->totalCount(), 1);
    QTRY_COMPARE(records->recordAt(0).source, QStringLiteral("user:alice"));
}

void TestStudio::sortsByAClickOnAColumn()
{
    openSeeded();
    QTableView *table = m_window->recordsPage()->recordView();
    RecordListModel *records = m_window->recordsPage()->recordModel();
    QHeaderView *header = table->horizontalHeader();
    const QPoint contentHeader(header->sectionViewportPosition(RecordListModel::ContentColumn) + 10, header->height() / 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, contentHeader);
    QTRY_COMPARE(records->recordAt(0).content, QStringLiteral("Acme renews their contract in March."));
    const Qt::SortOrder first = header->sortIndicatorOrder();
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, contentHeader);
    QCOMPARE_NE(header->sortIndicatorOrder(), first);
    QTRY_COMPARE(records->recordAt(0).content, QStringLiteral("We decided to use PostgreSQL for the user database."));
}

void TestStudio::editSaveForgetAndUndo()
{
    openSeeded();
    RecordsPage *page = m_window->recordsPage();
    RecordDetails *details = page->details();
    RecordListModel *records = page->recordModel();
    const QString before = QStringLiteral("Bo prefers short meetings on Mondays.");
    const QString after = QStringLiteral("Bo prefers short meetings on Tuesdays.");

    const int row = rowOfContent(before);
    QVERIFY(row >= 0);
    clickRow(page->recordView(), row);
    const QString id = records->recordAt(row).id;
    QCOMPARE(details->recordId(), id);
    auto *history = details->findChild<HistoryModel *>();
    QVERIFY(history);
    QTRY_COMPARE(history->rowCount(), 1); // ADD

    // Edit the content with the keyboard and save with the button.
    auto *content = details->findChild<QPlainTextEdit *>();
    QCOMPARE(content->toPlainText(), before);
    content->setFocus();
    QTest::keyClick(content, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(content, after);
    QVERIFY(details->hasUnsavedEdits());
    QPushButton *save = buttonNamed(details, QStringLiteral("Save the edits"));
    QVERIFY(save && save->isEnabled());
    QTest::mouseClick(save, Qt::LeftButton);
    QTRY_COMPARE(history->rowCount(), 2); // ADD, UPDATE
    QCOMPARE(history->entryAt(1).event, HistoryEntry::Event::Update);
    QTRY_VERIFY(rowOfContent(after) >= 0);
    QVERIFY(!details->hasUnsavedEdits());
    QCOMPARE(m_window->session()->memory()->get(id, ReadContext::asCurator())->content, after);

    // Forget it: the row goes, Edit > Undo (Ctrl+Z) brings it back, chosen again.
    QPushButton *forget = buttonNamed(details, QStringLiteral("Forget the record"));
    QTest::mouseClick(forget, Qt::LeftButton);
    QTRY_COMPARE(records->totalCount(), kSeedCount - 1);
    QTRY_COMPARE(rowOfContent(after), -1);
    QVERIFY(details->recordId() != id); // the row after it is chosen
    QVERIFY(!m_window->session()->memory()->get(id, ReadContext::asCurator()).has_value());
    QVERIFY(m_window->undoAction()->isEnabled());
    m_window->activateWindow();
    QTest::keyClick(m_window.get(), Qt::Key_Z, Qt::ControlModifier);
    QTRY_COMPARE(records->totalCount(), kSeedCount);
    QTRY_COMPARE(details->recordId(), id);
    QTRY_COMPARE(page->recordView()->currentIndex().row(), rowOfContent(after));
    QCOMPARE(m_window->session()->memory()->get(id, ReadContext::asCurator())->content, after);

    // Ctrl+Z again reverts the save (its fields written back; the history keeps every step).
    QTest::keyClick(m_window.get(), Qt::Key_Z, Qt::ControlModifier);
    QTRY_VERIFY(rowOfContent(before) >= 0);
    QTRY_COMPARE(content->toPlainText(), before);
    QVERIFY(!m_window->undoAction()->isEnabled());
    QCOMPARE(m_window->session()->memory()->get(id, ReadContext::asCurator())->content, before);
}

void TestStudio::undoLastChangeRevertsTheRecordsLastChange()
{
    openSeeded();
    RecordsPage *page = m_window->recordsPage();
    RecordDetails *details = page->details();
    const QString before = QStringLiteral("Our staging environment uses port 8080.");
    clickRow(page->recordView(), rowOfContent(before));
    auto *history = details->findChild<HistoryModel *>();
    QTRY_COMPARE(history->rowCount(), 1);
    QPushButton *undo = buttonNamed(details, QStringLiteral("Undo the record's last change"));
    QVERIFY(undo && undo->isEnabled());

    // Its only change is its creation: nothing to undo, and the window says so.
    QTest::mouseClick(undo, Qt::LeftButton);
    QTRY_VERIFY(!m_window->lastMessage().isEmpty() && !m_window->lastMessage().startsWith(QStringLiteral("Opened")));
    QCOMPARE(history->rowCount(), 1);
    if (auto *box = m_window->findChild<QMessageBox *>())
        box->close();

    // The importance changed with the keyboard and saved, then undone with the button.
    auto *importance = details->findChild<QDoubleSpinBox *>();
    const double stored = importance->value();
    QVERIFY(stored != 0.95);
    importance->setFocus();
    importance->selectAll();
    QTest::keyClicks(importance, QStringLiteral("0.95"));
    QTest::mouseClick(buttonNamed(details, QStringLiteral("Save the edits")), Qt::LeftButton);
    QTRY_COMPARE(history->rowCount(), 2);
    const QString id = details->recordId();
    QCOMPARE(m_window->session()->memory()->get(id, ReadContext::asCurator())->importance, 0.95);
    QTRY_VERIFY(undo->isEnabled());
    QTest::mouseClick(undo, Qt::LeftButton);
    QTRY_COMPARE(history->rowCount(), 3);
    QTRY_COMPARE(importance->value(), stored);
    QCOMPARE(m_window->session()->memory()->get(id, ReadContext::asCurator())->importance, stored);
}

void TestStudio::recallShowsEachSignalAsABar()
{
    openSeeded();
    RecallPanel *recall = m_window->recallPanel();
    QTest::keyClick(m_window.get(), Qt::Key_2, Qt::ControlModifier); // View > Recall
    QCOMPARE(m_window->tabs()->currentWidget(), recall);
    QTest::keyClicks(recall->queryEdit(), QStringLiteral("Which database did we choose?"));
    QTest::keyClick(recall->queryEdit(), Qt::Key_Return);
    RecallResultModel *results = recall->resultModel();
    QTRY_VERIFY(results->rowCount() > 0);
    QVERIFY(!results->isLoading());
    const MemoryMatch best = results->matchAt(0);
    QCOMPARE(best.record.content, QStringLiteral("We decided to use PostgreSQL for the user database."));
    QVERIFY(!best.matchReasons.isEmpty());
    QVERIFY(results->index(0, RecallResultModel::ReasonsColumn).data().toString().contains(best.matchReasons.first()));

    // Each signal column of the matches is drawn as a bar in the palette's highlight colour.
    QTableView *view = recall->resultView();
    view->clearSelection();
    view->setCurrentIndex({});
    const QImage shot = view->viewport()->grab().toImage();
    const QColor bar = view->palette().color(QPalette::Highlight);
    const QModelIndex semantic = results->index(0, RecallResultModel::SemanticColumn);
    QVERIFY(best.signalValues.semantic > 0.05);
    const QRect cell = view->visualRect(semantic);
    int barPixels = 0;
    for (int x = cell.left(); x <= cell.right(); ++x)
        barPixels += shot.pixelColor(x, cell.center().y()) == bar;
    QVERIFY2(barPixels > 2, qPrintable(QStringLiteral("%1 bar pixels").arg(barPixels)));

    // Choosing a match shows it whole with its reasons; a narrower scope finds nothing there.
    clickRow(view, 0, RecallResultModel::ContentColumn);
    QVERIFY(recall->matchView()->toPlainText().contains(QStringLiteral("Matched by: ")));
    QTest::keyClicks(recall->scopeEdit(), QStringLiteral("/customer"));
    QTest::keyClick(recall->queryEdit(), Qt::Key_Return);
    QTRY_VERIFY(!results->isLoading());
    for (int row = 0; row < results->rowCount(); ++row)
        QVERIFY(results->matchAt(row).record.scope.startsWith(QStringLiteral("/customer")));
}

void TestStudio::signalBarIsAsLongAsItsValue_data()
{
    QTest::addColumn<double>("value");
    QTest::newRow("none") << 0.0;
    QTest::newRow("quarter") << 0.25;
    QTest::newRow("half") << 0.5;
    QTest::newRow("all") << 1.0;
    QTest::newRow("over one is full") << 1.7;
}

void TestStudio::signalBarIsAsLongAsItsValue()
{
    QFETCH(double, value);
    QStandardItemModel model(1, 1);
    model.setData(model.index(0, 0), value, Qt::UserRole);
    model.setData(model.index(0, 0), QString::number(value, 'f', 2), Qt::DisplayRole);
    QTableView view;
    view.setModel(&model);
    SignalBarDelegate delegate;
    QStyleOptionViewItem option;
    option.initFrom(&view);
    option.rect = QRect(0, 0, 160, 24);
    option.state |= QStyle::State_Enabled;
    QImage image(option.rect.size(), QImage::Format_ARGB32);
    image.fill(option.palette.color(QPalette::Base));
    {
        QPainter painter(&image);
        delegate.paint(&painter, option, model.index(0, 0));
    }
    const QRect track = SignalBarDelegate::trackRect(option);
    QVERIFY(track.width() > 50);
    const QColor bar = option.palette.color(QPalette::Highlight);
    int filled = 0;
    for (int x = track.left(); x <= track.right(); ++x)
        filled += image.pixelColor(x, track.center().y()) == bar;
    const double expected = qBound(0.0, value, 1.0) * track.width();
    QVERIFY2(qAbs(filled - expected) <= 1.0, qPrintable(QStringLiteral("%1 filled, %2 expected").arg(filled).arg(expected)));
}

void TestStudio::everyControlHasAnAccessibleName()
{
    openSeeded();
    // A part of a compound control (a combo box's list, a table's headers, a spin box's line edit)
    // is named by the control it belongs to.
    const auto isPart = [](const QWidget *w) {
        if (w->inherits("QHeaderView") || w->inherits("QTabBar") || w->inherits("QToolButton")
            || qstrcmp(w->metaObject()->className(), "QTableCornerButton") == 0)
            return true;
        for (const QWidget *p = w->parentWidget(); p; p = p->parentWidget())
            if (qobject_cast<const QComboBox *>(p) || qobject_cast<const QAbstractSpinBox *>(p) || qobject_cast<const QLineEdit *>(p))
                return true;
        return false;
    };
    QStringList unnamed;
    for (QWidget *w : m_window->findChildren<QWidget *>()) {
        const bool control = qobject_cast<QLineEdit *>(w) || qobject_cast<QAbstractButton *>(w) || qobject_cast<QComboBox *>(w)
                          || qobject_cast<QAbstractItemView *>(w) || qobject_cast<QPlainTextEdit *>(w)
                          || qobject_cast<QAbstractSpinBox *>(w);
        if (control && !isPart(w) && w->accessibleName().isEmpty())
            unnamed << QStringLiteral("%1 %2").arg(QString::fromLatin1(w->metaObject()->className()), w->objectName());
    }
    QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed.join(QStringLiteral(", "))));
    // Every control is reached with Tab: the records page's order runs tree, filters, table, details.
    RecordsPage *page = m_window->recordsPage();
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    page->scopeView()->setFocus();
    QTest::keyClick(page->scopeView(), Qt::Key_Tab);
    QCOMPARE(QApplication::focusWidget(), page->textFilter());
    QTest::keyClick(page->textFilter(), Qt::Key_Tab);
    QCOMPARE(QApplication::focusWidget(), page->categoryFilter());
}

void TestStudio::exportWritesWhatImportReads()
{
    openSeeded();
    const QString file = m_dir.path(QStringLiteral("export-%1.jsonl").arg(m_copies));
    m_window->exportTo(file);
    QVERIFY(m_window->transferJob());
    QVERIFY(m_window->progressDialog());
    QTRY_VERIFY(m_window->transferJob() == nullptr);
    QVERIFY2(m_window->lastMessage().startsWith(QStringLiteral("Exported 5 records")), qPrintable(m_window->lastMessage()));

    // The lines are the command line's format: read back, with the store's embeddings kept.
    QFile in(file);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = in.readAll().split('\n');
    QCOMPARE(lines.size(), kSeedCount + 1); // the last line ends with a line break
    RecordFileReader reader(RecordFileReader::optionsFor(*m_window->session()->memory(), true));
    QStringList contents;
    for (int i = 0; i < kSeedCount; ++i) {
        const MemoryRecord r = reader.read(i + 1, QString::fromUtf8(lines[i]));
        QCOMPARE(r, *m_window->session()->memory()->get(r.id, ReadContext::asCurator()));
        QVERIFY(!r.embedding.empty());
        contents << r.content;
    }
    QVERIFY(contents.contains(QStringLiteral("Acme renews their contract in March."))); // the private-capable source's too

    // Imported into a new store, the same records; imported again, all skipped.
    m_window->openStore(m_dir.path(QStringLiteral("imported-%1.db").arg(m_copies)), true);
    QTRY_VERIFY(m_window->session()->path().contains(QStringLiteral("imported-")));
    m_window->importFile(file);
    QTRY_VERIFY(m_window->transferJob() == nullptr);
    QVERIFY2(m_window->lastMessage().startsWith(QStringLiteral("Imported 5 records (0 skipped")), qPrintable(m_window->lastMessage()));
    QCOMPARE(storedCount(), kSeedCount);
    QTRY_COMPARE(m_window->recordsPage()->recordModel()->totalCount(), kSeedCount);
    m_window->importFile(file);
    QTRY_VERIFY(m_window->transferJob() == nullptr);
    QVERIFY2(m_window->lastMessage().startsWith(QStringLiteral("Imported 0 records (5 skipped")), qPrintable(m_window->lastMessage()));
}

void TestStudio::importCancelledKeepsTheBatchesBefore()
{
    // 20 batches: Cancel, clicked when the first batch is reported, lands long before the last.
    const int lines = 20 * RecordFile::kBatchSize;
    const QString file = m_dir.path(QStringLiteral("many-%1.jsonl").arg(m_copies));
    {
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly));
        for (int i = 0; i < lines; ++i) {
            MemoryRecord r = MemoryRecord::create(QStringLiteral("Imported note %1 about topic %2").arg(i).arg(i % 97));
            r.scope = QStringLiteral("/imported");
            out.write(RecordFile::line(r, QStringLiteral("builtin/hash-v2")));
        }
    }
    openSeeded();
    m_window->importFile(file);
    TransferJob *job = m_window->transferJob();
    QVERIFY(job);
    QProgressDialog *dialog = m_window->progressDialog();
    QVERIFY(dialog);
    QSignalSpy progress(job, &TransferJob::progress);
    QTRY_VERIFY_WITH_TIMEOUT(dialog->value() >= RecordFile::kBatchSize, 60000);
    QPushButton *cancel = dialog->findChild<QPushButton *>();
    QVERIFY(cancel);
    QTest::mouseClick(cancel, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(m_window->transferJob() == nullptr, 60000);
    QVERIFY(progress.size() > 0);

    const int imported = storedCount() - kSeedCount;
    QVERIFY2(imported >= RecordFile::kBatchSize && imported < lines, qPrintable(QString::number(imported)));
    QCOMPARE(imported % RecordFile::kBatchSize, 0); // whole batches only
    QCOMPARE(m_window->lastMessage(), QStringLiteral("Import cancelled: %1 records imported before it stopped.").arg(QLocale().toString(imported)));
    QTRY_COMPARE(m_window->recordsPage()->recordModel()->totalCount(), kSeedCount + imported);
}

void TestStudio::importOfABadFileStoresNothing()
{
    const QString file = m_dir.path(QStringLiteral("bad-%1.jsonl").arg(m_copies));
    {
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(RecordFile::line(MemoryRecord::create(QStringLiteral("a good first line")), QStringLiteral("builtin/hash-v2")));
        out.write("\n{\"content\": \"importance too high\", \"importance\": 3}\n");
    }
    openSeeded();
    m_window->importFile(file);
    QTRY_VERIFY(m_window->transferJob() == nullptr);
    QVERIFY2(m_window->lastMessage().startsWith(QFileInfo(file).fileName() + QStringLiteral(" line 3: ")), qPrintable(m_window->lastMessage()));
    QVERIFY(m_window->lastMessage().endsWith(QStringLiteral("(nothing was imported)")));
    QCOMPARE(storedCount(), kSeedCount);
    // The failure is shown in a message box too, which Return closes.
    auto *box = m_window->findChild<QMessageBox *>();
    QVERIFY(box);
    QTRY_VERIFY(box->isVisible());
    QTest::keyClick(box, Qt::Key_Return);
    QTRY_VERIFY(m_window->findChild<QMessageBox *>() == nullptr);
}

void TestStudio::runsTheExampleCrewOfflineWithItsEvents()
{
    RunPage *run = m_window->runPage();
    QTest::keyClick(m_window.get(), Qt::Key_3, Qt::ControlModifier); // View > Run
    QCOMPARE(m_window->tabs()->currentWidget(), run);
    run->provider()->providerChoice()->setCurrentIndex(run->provider()->providerChoice()->findData(ProviderBox::replayChoice()));
    QCOMPARE(run->exampleChoice()->currentIndex(), int(RunPage::ResearchCrew));
    QCOMPARE(run->inputsChoice()->currentText(), QStringLiteral("{\"topic\":\"residential heat pumps\"}"));
    QSignalSpy finished(run, &RunPage::finished);
    QPushButton *start = buttonNamed(run, QStringLiteral("Run the example"));
    QVERIFY(start && start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY2(run->isRunning(), qPrintable(run->lastError()));
    QVERIFY(!start->isEnabled());
    QVERIFY(buttonNamed(run, QStringLiteral("Cancel the run"))->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QVERIFY2(finished.first().first().toBool(), qPrintable(run->lastError()));

    // The timeline: the kickoff is one top-level row, completed, with its tasks nested inside.
    EventLogModel *log = run->eventModel();
    QModelIndex kickoff;
    for (int row = 0; row < log->rowCount(); ++row)
        if (log->index(row, 0).data(EventLogModel::TypeRole).toString() == QLatin1String("crew_kickoff_started"))
            kickoff = log->index(row, 0);
    QVERIFY(kickoff.isValid());
    QCOMPARE(kickoff.data(EventLogModel::StatusRole).toString(), QStringLiteral("completed"));
    QStringList families;
    std::function<void(const QModelIndex &)> walk = [&](const QModelIndex &parent) {
        for (int row = 0; row < log->rowCount(parent); ++row) {
            const QModelIndex child = log->index(row, 0, parent);
            families << child.data(EventLogModel::FamilyRole).toString();
            walk(child);
        }
    };
    walk(kickoff);
    QVERIFY2(families.contains(QStringLiteral("task")) && families.contains(QStringLiteral("llm")), qPrintable(families.join(QLatin1Char(','))));
    QVERIFY(families.contains(QStringLiteral("memory")));
    // The answers of both agents, from the cassette.
    const QString output = run->outputView()->toPlainText();
    QVERIFY2(output.contains(QStringLiteral("[Researcher] ")) && output.contains(QStringLiteral("[Writer] ")), qPrintable(output));
    QVERIFY(output.contains(QStringLiteral("heat pump"), Qt::CaseInsensitive));

    // The family filter narrows the timeline to the LLM calls.
    log->setFamilies({QStringLiteral("llm")});
    QVERIFY(log->rowCount() > 0);
    for (int row = 0; row < log->rowCount(); ++row)
        QCOMPARE(log->index(row, 0).data(EventLogModel::FamilyRole).toString(), QStringLiteral("llm"));
}

void TestStudio::runsTheExampleFlowOffline()
{
    RunPage *run = m_window->runPage();
    m_window->tabs()->setCurrentWidget(run);
    run->provider()->providerChoice()->setCurrentIndex(run->provider()->providerChoice()->findData(ProviderBox::replayChoice()));
    // The example chosen with the keyboard; its recorded inputs come with it.
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    run->exampleChoice()->setFocus();
    QTest::keyClick(run->exampleChoice(), Qt::Key_Down);
    QCOMPARE(run->exampleChoice()->currentIndex(), int(RunPage::LaunchFlow));
    QVERIFY(run->inputsChoice()->currentText().contains(QStringLiteral("solar-powered e-bike charger")));
    QSignalSpy finished(run, &RunPage::finished);
    QTest::mouseClick(buttonNamed(run, QStringLiteral("Run the example")), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QVERIFY2(finished.first().first().toBool(), qPrintable(run->lastError()));

    // Each step's output, and the result: the tagline kept in the flow's memory.
    const QString output = run->outputView()->toPlainText();
    QVERIFY2(output.contains(QStringLiteral("step plan")) && output.contains(QStringLiteral("step research"))
                 && output.contains(QStringLiteral("step publish")),
             qPrintable(output));
    QVERIFY2(output.contains(QStringLiteral("Result: Stored \"Charge on the ride, not at the wall.\" at /flow/launchflow/taglines")),
             qPrintable(output));
    // The timeline: the flow's kickoff holds its steps, the crew's kickoff nested inside "research".
    EventLogModel *log = run->eventModel();
    QStringList types;
    std::function<void(const QModelIndex &, int)> walk = [&](const QModelIndex &parent, int depth) {
        for (int row = 0; row < log->rowCount(parent); ++row) {
            const QModelIndex child = log->index(row, 0, parent);
            types << QStringLiteral("%1:%2").arg(depth).arg(child.data(EventLogModel::TypeRole).toString());
            walk(child, depth + 1);
        }
    };
    walk({}, 0);
    QVERIFY2(types.contains(QStringLiteral("0:flow_started")), qPrintable(types.join(QLatin1Char(' '))));
    bool crewNested = false;
    for (const QString &t : types)
        crewNested = crewNested || (t.endsWith(QStringLiteral(":crew_kickoff_started")) && !t.startsWith(QStringLiteral("0:")));
    QVERIFY2(crewNested, qPrintable(types.join(QLatin1Char(' '))));
}

void TestStudio::badInputsAreRefusedSayingWhy()
{
    RunPage *run = m_window->runPage();
    QSignalSpy finished(run, &RunPage::finished);
    run->inputsChoice()->setCurrentText(QStringLiteral("topic: heat pumps"));
    run->run();
    QCOMPARE(finished.size(), 1);
    QVERIFY(!finished.first().first().toBool());
    QVERIFY2(run->lastError().startsWith(QStringLiteral("The inputs must be a JSON object")), qPrintable(run->lastError()));
    QVERIFY(!run->isRunning());
}

void TestStudio::theProviderIsKeptWithoutItsKey()
{
    const QByteArray secret = "sk-studio-test-secret-123";
    qputenv("OPENAI_API_KEY", secret);
    RunPage *run = m_window->runPage();
    const int openai = run->provider()->providerChoice()->findData(QStringLiteral("openai"));
    QVERIFY2(openai > 0, "the openai plugin is listed by its key");
    run->provider()->providerChoice()->setCurrentIndex(openai);
    QVERIFY(run->provider()->modelEdit()->isEnabled());
    run->provider()->modelEdit()->setFocus();
    QTest::keyClicks(run->provider()->modelEdit(), QStringLiteral("gpt-4o-mini"));
    QTest::keyClick(run->provider()->modelEdit(), Qt::Key_Return);
    m_settings->sync();
    QFile ini(m_settings->fileName());
    QVERIFY(ini.open(QIODevice::ReadOnly));
    const QByteArray stored = ini.readAll();
    QVERIFY(stored.contains("openai"));
    QVERIFY(stored.contains("gpt-4o-mini"));
    QVERIFY(!stored.contains(secret));
    qunsetenv("OPENAI_API_KEY");

    // A new window starts with the provider chosen before.
    m_window = std::make_unique<MainWindow>(*m_settings);
    QCOMPARE(m_window->runPage()->provider()->providerChoice()->currentData().toString(), QStringLiteral("openai"));
    QCOMPARE(m_window->runPage()->provider()->modelEdit()->text(), QStringLiteral("gpt-4o-mini"));
}

void TestStudio::chatsWithTheExampleAgentStreaming()
{
    ChatPage *chat = m_window->chatPage();
    QTest::keyClick(m_window.get(), Qt::Key_4, Qt::ControlModifier); // View > Chat
    QCOMPARE(m_window->tabs()->currentWidget(), chat);
    QComboBox *provider = chat->provider()->providerChoice();
    provider->setCurrentIndex(provider->findData(ProviderBox::replayChoice()));
    ChatMessageModel *messages = chat->messageModel();
    QSignalSpy finished(chat, &ChatPage::turnFinished);
    QSignalSpy changed(messages, &QAbstractItemModel::dataChanged);

    // The first example turn, chosen with the keyboard, then sent with Enter.
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    chat->exampleTurns()->setFocus();
    QTest::keyClick(chat->exampleTurns(), Qt::Key_Down);
    const QString turn = QStringLiteral("Hi! I'm Logan. I'm planning a trip to Lisbon in May with my sister Ana.");
    QCOMPARE(chat->messageEdit()->text(), turn);
    QTest::keyClick(chat->messageEdit(), Qt::Key_Return);
    QVERIFY(chat->hasSession());
    QVERIFY(!chat->provider()->isEnabled()); // the session keeps its provider
    QTRY_VERIFY(messages->rowCount() >= 1);  // the user's message shows when its turn starts
    QCOMPARE(messages->index(0).data(ChatMessageModel::ContentRole).toString(), turn);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QVERIFY2(finished.first().first().toBool(), qPrintable(chat->lastError()));

    // The answer streamed into its row (it changed before the turn ended), then the turn as stored.
    QVERIFY(!changed.isEmpty());
    QTRY_COMPARE(messages->rowCount(), 2);
    QCOMPARE(messages->index(0).data(ChatMessageModel::RoleNameRole).toString(), QStringLiteral("user"));
    QCOMPARE(messages->index(1).data(ChatMessageModel::RoleNameRole).toString(), QStringLiteral("assistant"));
    QCOMPARE(messages->index(1).data(ChatMessageModel::ContentRole).toString(),
             QStringLiteral("Welcome, Logan! Lisbon in May is warm and not yet crowded. Tell me what you and Ana enjoy."));
    QVERIFY(!messages->index(1).data(ChatMessageModel::StreamingRole).toBool());
    QVERIFY(messages->index(1).data(ChatMessageModel::SeqRole).toInt() > 0); // stored in the session

    // A new session starts empty.
    QPushButton *fresh = buttonNamed(chat, QStringLiteral("Start a new session"));
    QVERIFY(fresh && fresh->isEnabled());
    QTest::mouseClick(fresh, Qt::LeftButton);
    QVERIFY(!chat->hasSession());
    QCOMPARE(messages->rowCount(), 0);
    QVERIFY(chat->provider()->isEnabled());

    // A message the cassette has no answer for: the turn fails once, saying why, the message kept.
    finished.clear();
    QTest::keyClicks(chat->messageEdit(), QStringLiteral("What is the weather on Mars?"));
    QTest::keyClick(chat->messageEdit(), Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QVERIFY(!finished.first().first().toBool());
    QVERIFY2(chat->lastError().contains(QStringLiteral("no exchange")), qPrintable(chat->lastError()));
    QTRY_COMPARE(messages->rowCount(), 2);
    QCOMPARE(messages->index(0).data(ChatMessageModel::ContentRole).toString(), QStringLiteral("What is the weather on Mars?"));
    QVERIFY(messages->index(1).data(ChatMessageModel::FailedRole).toBool());
    QTest::qWait(50);
    QCOMPARE(finished.size(), 1);
}

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
