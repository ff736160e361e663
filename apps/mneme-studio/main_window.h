#pragma once

#include <QMainWindow>

class QAction;
class QCloseEvent;
class QLabel;
class QMenu;
class QProgressDialog;
class QSettings;
class QTabWidget;

namespace mneme::studio {

class ChatPage;
class RecallPanel;
class RecordsPage;
class RunPage;
class StoreSession;
class TransferJob;

// Mneme Studio's window: one store at a time (File > New Store, Open Store, Open Recent, or the path
// given on the command line), browsed on the Records tab and recalled from on the Recall tab; the
// Run tab runs an example crew, the Chat tab chats with an example agent. The recent stores and the
// provider choice of those two are kept in
// `settings` (paths, plugin keys and model names: no API key, no secret is ever written there).
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QSettings &settings, QWidget *parent = nullptr);
    ~MainWindow() override;

    // Opens (or with `create` creates) the store at `path` on a worker thread; the window shows it
    // once it is open, and says why when it cannot be.
    void openStore(const QString &path, bool create = false);
    QStringList recentStores() const;
    // Imports the records of `file` (the format of `mneme export`) into the open store, or exports
    // the store's records to `file`, on a worker thread behind a progress dialog with Cancel.
    void importFile(const QString &file);
    void exportTo(const QString &file);
    // The import or export running, else null; and its progress dialog.
    TransferJob *transferJob() const;
    QProgressDialog *progressDialog() const;

    StoreSession *session() const;
    RecordsPage *recordsPage() const;
    RecallPanel *recallPanel() const;
    RunPage *runPage() const;
    ChatPage *chatPage() const;
    QTabWidget *tabs() const;
    QAction *undoAction() const;
    // The last message shown in the status bar (the last failure, when there was one).
    QString lastMessage() const;

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void createMenus();
    void startTransfer(TransferJob *job);
    void transferFinished(bool import, int done, int skipped, bool cancelled, const QString &error);
    void updateActions();
    void chooseStore(bool create);
    void onOpened(const QString &path);
    void onClosed();
    void rememberRecent(const QString &path);
    void fillRecentMenu();
    void showMessage(const QString &message);
    void showFailure(const QString &message);

    QSettings &m_settings;
    StoreSession *m_session;
    QTabWidget *m_tabs;
    RecordsPage *m_records;
    RecallPanel *m_recall;
    RunPage *m_run;
    ChatPage *m_chat;
    QLabel *m_storeLabel;
    QMenu *m_recentMenu = nullptr;
    QAction *m_undo = nullptr;
    QAction *m_close = nullptr;
    QAction *m_import = nullptr;
    QAction *m_export = nullptr;
    TransferJob *m_job = nullptr;
    QProgressDialog *m_progress = nullptr;
    bool m_closeWhenDone = false;
    QString m_lastMessage;
};

} // namespace mneme::studio
