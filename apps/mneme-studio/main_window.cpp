#include "main_window.h"

#include "chat_page.h"
#include "counted.h"
#include "recall_panel.h"
#include "records_page.h"
#include "run_page.h"
#include "store_session.h"
#include "transfer_job.h"

#include <mneme/memory/memory.h>
#include <mneme/memory/memory_config.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressDialog>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

namespace mneme::studio {

namespace {

const QString kRecentKey = QStringLiteral("recentStores");
constexpr int kMaxRecent = 8;
const QString kStoreFilter = QObject::tr("Mneme stores (*.db *.sqlite *.sqlite3);;All files (*)");
const QString kRecordFilter = QObject::tr("Records, JSON Lines (*.jsonl *.json);;All files (*)");

} // namespace

MainWindow::MainWindow(QSettings &settings, QWidget *parent)
    : QMainWindow(parent),
      m_settings(settings),
      m_session(new StoreSession(this)),
      m_tabs(new QTabWidget(this)),
      m_records(new RecordsPage(this)),
      m_recall(new RecallPanel(this)),
      m_run(new RunPage(settings, this)),
      m_chat(new ChatPage(settings, this)),
      m_storeLabel(new QLabel(this))
{
    setWindowTitle(tr("Mneme Studio"));
    m_tabs->setAccessibleName(tr("Views"));
    // No mnemonics on the tabs (they would clash with the labels' inside): View's Ctrl+1..4 and
    // Ctrl+Tab switch them.
    m_tabs->addTab(m_records, tr("Records"));
    m_tabs->addTab(m_recall, tr("Recall"));
    m_tabs->addTab(m_run, tr("Run"));
    m_tabs->addTab(m_chat, tr("Chat"));
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
    if (m_job) { // the worker uses the store: stop it before the store closes
        m_job->cancel();
        m_job->waitForFinished();
    }
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
    m_import = file->addAction(tr("&Import Records…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Import Records"), QDir::homePath(), kRecordFilter);
        if (!path.isEmpty())
            importFile(path);
    });
    m_import->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    m_export = file->addAction(tr("&Export Records…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export Records"), QDir::home().filePath(QStringLiteral("records.jsonl")), kRecordFilter);
        if (!path.isEmpty())
            exportTo(path);
    });
    m_export->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    m_undo = edit->addAction(tr("&Undo"), m_records, &RecordsPage::undoLastWrite);
    m_undo->setShortcut(QKeySequence::Undo);
    m_undo->setEnabled(false);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_tabs->count(); ++i) {
        QAction *show = view->addAction(m_tabs->tabText(i), this, [this, i] { m_tabs->setCurrentIndex(i); });
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
    if (m_job) {
        showMessage(tr("Wait for the import or export to finish (or cancel it) before opening another store."));
        return;
    }
    m_session->open(path, create);
}

void MainWindow::onOpened(const QString &path)
{
    Memory *memory = m_session->memory();
    m_records->setMemory(memory);
    m_recall->setMemory(memory);
    updateActions();
    m_storeLabel->setText(QDir::toNativeSeparators(path));
    setWindowTitle(tr("%1 — Mneme Studio").arg(QFileInfo(path).fileName()));
    rememberRecent(path);
    showMessage(memory->isReadOnly() ? tr("Opened %1 (read-only).").arg(path) : tr("Opened %1.").arg(path));
}

void MainWindow::onClosed()
{
    m_records->setMemory(nullptr);
    m_recall->setMemory(nullptr);
    m_undo->setEnabled(false);
    updateActions();
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

void MainWindow::updateActions()
{
    const bool open = m_session->memory() != nullptr;
    const bool idle = m_job == nullptr;
    m_close->setEnabled(open && idle);
    m_import->setEnabled(open && idle && !m_session->memory()->isReadOnly());
    m_export->setEnabled(open && idle);
}

void MainWindow::importFile(const QString &file)
{
    if (!m_session->memory() || m_job)
        return;
    startTransfer(TransferJob::startImport(m_session->memory(), file, this));
}

void MainWindow::exportTo(const QString &file)
{
    if (!m_session->memory() || m_job)
        return;
    startTransfer(TransferJob::startExport(m_session->memory(), file, this));
}

// The store stays open while a job uses it: Close, Open and Quit wait for it (the dialog is modal
// to the window, Quit cancels the job and closes the window when it has stopped).
void MainWindow::startTransfer(TransferJob *job)
{
    m_job = job;
    const bool import = job->isImport();
    auto *dialog = new QProgressDialog(import ? tr("Importing %1…").arg(QFileInfo(job->file()).fileName())
                                              : tr("Exporting to %1…").arg(QFileInfo(job->file()).fileName()),
                                       tr("Cancel"), 0, 0, this);
    dialog->setWindowTitle(import ? tr("Import Records") : tr("Export Records"));
    dialog->setAccessibleName(dialog->windowTitle());
    dialog->setWindowModality(Qt::WindowModal);
    dialog->setAutoClose(false);
    dialog->setAutoReset(false);
    dialog->setMinimumDuration(0);
    connect(dialog, &QProgressDialog::canceled, job, [dialog, job] {
        job->cancel();
        dialog->setLabelText(tr("Stopping after the current batch…"));
    });
    connect(job, &TransferJob::progress, dialog, [dialog](int done, int total, const QString &step) {
        dialog->setMaximum(total);
        dialog->setValue(done);
        if (!dialog->wasCanceled())
            dialog->setLabelText(step);
    });
    connect(job, &TransferJob::finished, this, [this, import](const TransferJob::Outcome &outcome, const QString &error) {
        transferFinished(import, outcome.done, outcome.skipped, outcome.cancelled, error);
    });
    m_progress = dialog;
    m_progress->show();
    updateActions();
}

void MainWindow::transferFinished(bool import, int done, int skipped, bool cancelled, const QString &error)
{
    const QString file = m_job->file();
    m_job->deleteLater();
    m_job = nullptr;
    m_progress->deleteLater();
    m_progress = nullptr;
    updateActions();
    if (!error.isEmpty())
        showFailure(error);
    else if (import && cancelled)
        showMessage(tr("Import cancelled: %1 imported before it stopped.").arg(records(done)));
    else if (import)
        showMessage(tr("Imported %1 (%2 skipped: already in the store).").arg(records(done), QLocale().toString(skipped)));
    else if (cancelled)
        showMessage(tr("Export cancelled: %1 was not written.").arg(QDir::toNativeSeparators(file)));
    else
        showMessage(tr("Exported %1 to %2.").arg(records(done), QDir::toNativeSeparators(file)));
    if (m_closeWhenDone)
        close();
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_job) {
        m_closeWhenDone = true;
        m_job->cancel();
        event->ignore();
        return;
    }
    QMainWindow::closeEvent(event);
}

TransferJob *MainWindow::transferJob() const
{
    return m_job;
}

QProgressDialog *MainWindow::progressDialog() const
{
    return m_progress;
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

RunPage *MainWindow::runPage() const
{
    return m_run;
}

ChatPage *MainWindow::chatPage() const
{
    return m_chat;
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
