#include "main_window.h"

#include "recall_panel.h"
#include "records_page.h"
#include "store_session.h"

#include <mneme/memory/memory.h>
#include <mneme/memory/memory_config.h>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

namespace mneme::studio {

namespace {

const QString kRecentKey = QStringLiteral("recentStores");
constexpr int kMaxRecent = 8;
const QString kStoreFilter = QObject::tr("Mneme stores (*.db *.sqlite *.sqlite3);;All files (*)");

} // namespace

MainWindow::MainWindow(QSettings &settings, QWidget *parent)
    : QMainWindow(parent),
      m_settings(settings),
      m_session(new StoreSession(this)),
      m_tabs(new QTabWidget(this)),
      m_records(new RecordsPage(this)),
      m_recall(new RecallPanel(this)),
      m_storeLabel(new QLabel(this))
{
    setWindowTitle(tr("Mneme Studio"));
    m_tabs->setAccessibleName(tr("Views"));
    m_tabs->addTab(m_records, tr("Re&cords"));
    m_tabs->addTab(m_recall, tr("Rec&all"));
    setCentralWidget(m_tabs);
    m_storeLabel->setAccessibleName(tr("Open store"));
    statusBar()->addPermanentWidget(m_storeLabel);
    createMenus();

    connect(m_session, &StoreSession::opened, this, &MainWindow::onOpened);
    connect(m_session, &StoreSession::openFailed, this, [this](const QString &, const QString &message) {
        showFailure(message);
    });
    connect(m_session, &StoreSession::openingChanged, this, [this](bool opening) {
        if (opening)
            showMessage(tr("Opening the store…"));
    });
    connect(m_session, &StoreSession::aboutToClose, this, [this] {
        m_records->setMemory(nullptr);
        m_recall->setMemory(nullptr);
    });
    connect(m_session, &StoreSession::closed, this, &MainWindow::onClosed);
    connect(m_records, &RecordsPage::canUndoChanged, m_undo, &QAction::setEnabled);
    connect(m_records, &RecordsPage::status, this, &MainWindow::showMessage);
    connect(m_records, &RecordsPage::failed, this, &MainWindow::showFailure);
    connect(m_recall, &RecallPanel::failed, this, &MainWindow::showFailure);
    onClosed();
    resize(1180, 720);
}

MainWindow::~MainWindow()
{
    m_session->close(); // the views let go of the Memory before they are destroyed
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *create = file->addAction(tr("&New Store…"), this, [this] { chooseStore(true); });
    create->setShortcut(QKeySequence::New);
    QAction *open = file->addAction(tr("&Open Store…"), this, [this] { chooseStore(false); });
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
    m_close = file->addAction(tr("&Close Store"), m_session, &StoreSession::close);
    m_close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    m_undo = edit->addAction(tr("&Undo"), m_records, &RecordsPage::undoLastWrite);
    m_undo->setShortcut(QKeySequence::Undo);
    m_undo->setEnabled(false);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_tabs->count(); ++i) {
        QAction *show = view->addAction(m_tabs->tabText(i).remove(QLatin1Char('&')), this, [this, i] { m_tabs->setCurrentIndex(i); });
        show->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    }
}

void MainWindow::chooseStore(bool create)
{
    const QString start = m_session->path().isEmpty() ? QFileInfo(MemoryConfig::defaultStoragePath()).absolutePath()
                                                      : QFileInfo(m_session->path()).absolutePath();
    const QString path = create ? QFileDialog::getSaveFileName(this, tr("New Store"), QDir(start).filePath(QStringLiteral("memory.db")), kStoreFilter)
                                : QFileDialog::getOpenFileName(this, tr("Open Store"), start, kStoreFilter);
    if (!path.isEmpty())
        openStore(path, create);
}

void MainWindow::openStore(const QString &path, bool create)
{
    m_session->open(path, create);
}

void MainWindow::onOpened(const QString &path)
{
    Memory *memory = m_session->memory();
    m_records->setMemory(memory);
    m_recall->setMemory(memory);
    m_close->setEnabled(true);
    m_storeLabel->setText(QDir::toNativeSeparators(path));
    setWindowTitle(tr("%1 — Mneme Studio").arg(QFileInfo(path).fileName()));
    rememberRecent(path);
    showMessage(memory->isReadOnly() ? tr("Opened %1 (read-only).").arg(path) : tr("Opened %1.").arg(path));
}

void MainWindow::onClosed()
{
    m_records->setMemory(nullptr);
    m_recall->setMemory(nullptr);
    m_close->setEnabled(false);
    m_undo->setEnabled(false);
    m_storeLabel->setText(tr("No store open: File > Open Store or New Store"));
    setWindowTitle(tr("Mneme Studio"));
}

QStringList MainWindow::recentStores() const
{
    return m_settings.value(kRecentKey).toStringList();
}

void MainWindow::rememberRecent(const QString &path)
{
    QStringList recent = recentStores();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    m_settings.setValue(kRecentKey, recent);
}

void MainWindow::fillRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = recentStores();
    if (recent.isEmpty()) {
        m_recentMenu->addAction(tr("No recent stores"))->setEnabled(false);
        return;
    }
    int n = 0;
    for (const QString &path : recent) {
        QAction *open = m_recentMenu->addAction(tr("&%1 %2").arg(++n).arg(QDir::toNativeSeparators(path)), this,
                                                [this, path] { openStore(path); });
        open->setEnabled(QFileInfo::exists(path));
    }
}

void MainWindow::showMessage(const QString &message)
{
    m_lastMessage = message;
    statusBar()->showMessage(message, 10000);
}

void MainWindow::showFailure(const QString &message)
{
    showMessage(message);
    auto *box = new QMessageBox(QMessageBox::Warning, tr("Mneme Studio"), message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // window-modal, never a nested event loop
}

StoreSession *MainWindow::session() const
{
    return m_session;
}

RecordsPage *MainWindow::recordsPage() const
{
    return m_records;
}

RecallPanel *MainWindow::recallPanel() const
{
    return m_recall;
}

QTabWidget *MainWindow::tabs() const
{
    return m_tabs;
}

QAction *MainWindow::undoAction() const
{
    return m_undo;
}

QString MainWindow::lastMessage() const
{
    return m_lastMessage;
}

} // namespace mneme::studio
