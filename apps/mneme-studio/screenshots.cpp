// mneme-studio-screenshots DIR: renders Mneme Studio's main views into DIR/*.png (`make
// screenshots` runs it under Xvfb, so the platform's real style and fonts draw them). The store is
// made for the occasion in a temporary folder; nothing else is read or written.
#include "chat_page.h"
#include "main_window.h"
#include "provider_box.h"
#include "recall_panel.h"
#include "record_details.h"
#include "records_page.h"
#include "run_page.h"
#include "store_session.h"

#include <mneme/memory/memory.h>
#include <mneme/models/history_model.h>
#include <mneme/models/recall_result_model.h>
#include <mneme/models/record_list_model.h>
#include <mneme/models/scope_tree_model.h>

#include <QApplication>
#include <QComboBox>
#include <QDeadlineTimer>
#include <QDir>
#include <QLineEdit>
#include <QPalette>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <QTreeView>
#include <cstdio>
#include <functional>

using namespace mneme;
using namespace mneme::studio;

namespace {

struct Note
{
    const char *scope;
    const char *category;
    double importance;
    const char *content;
};

const Note kNotes[] = {
    {"/project/alpha", "decision", 0.9, "We decided to use PostgreSQL for the user database."},
    {"/project/alpha", "decision", 0.8, "The public API is versioned in the URL path (/v1, /v2)."},
    {"/project/alpha/infra", "ops", 0.6, "Our staging environment uses port 8080."},
    {"/project/alpha/infra", "ops", 0.7, "Backups of the user database run nightly at 02:00 UTC."},
    {"/project/alpha/infra", "ops", 0.5, "The CI runners have 4 cores and 16 GB of memory."},
    {"/project/beta", "ops", 0.6, "The billing service retries a failed charge three times."},
    {"/project/beta", "decision", 0.7, "Invoices are rendered as PDF on the server, not in the browser."},
    {"/customer/acme", "contract", 0.9, "Acme renews their contract in March."},
    {"/customer/acme", "contact", 0.5, "Acme's technical contact is Dana Whitfield."},
    {"/customer/globex", "contract", 0.8, "Globex pays annually and asked for a 30-day notice period."},
    {"/team", "preference", 0.4, "Bo prefers short meetings on Mondays."},
    {"/team", "preference", 0.4, "Ines reviews database migrations before they are merged."},
    {"/team/onboarding", "howto", 0.5, "New engineers get access to staging on their second day."},
    {"/research/papers", "reading", 0.3, "The LOCOMO benchmark measures recall over long conversations."},
    {"/research/papers", "reading", 0.3, "HNSW graphs trade a little recall for much faster vector search."},
};

// Runs the event loop until `done` holds (or 20 s pass: then the picture shows what was there).
bool waitUntil(const std::function<bool()> &done)
{
    QDeadlineTimer deadline(20000);
    while (!done() && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        QThread::msleep(10);
    }
    return done();
}

void settle()
{
    QDeadlineTimer pause(400);
    while (!pause.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
}

bool save(QWidget *window, const QString &dir, const QString &name)
{
    settle();
    const QString file = QDir(dir).filePath(name);
    if (!window->grab().save(file)) {
        std::fprintf(stderr, "mneme-studio-screenshots: cannot write %s\n", qPrintable(file));
        return false;
    }
    std::printf("wrote %s\n", qPrintable(file));
    return true;
}

void makeStore(const QString &path)
{
    MemoryConfig config;
    config.storage = Json(path.toStdString());
    Memory memory(config);
    for (const Note &n : kNotes) {
        RememberOptions o;
        o.scope = QString::fromUtf8(n.scope);
        o.categories = QStringList{QString::fromUtf8(n.category)};
        o.importance = n.importance;
        memory.remember(QString::fromUtf8(n.content), o);
    }
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: mneme-studio-screenshots DIR\n");
        return 2;
    }
    const QString out = QString::fromLocal8Bit(argv[1]);
    if (!QDir().mkpath(out)) {
        std::fprintf(stderr, "mneme-studio-screenshots: cannot create %s\n", qPrintable(out));
        return 1;
    }
    QTemporaryDir dir;
    const QString store = QDir(dir.path()).filePath(QStringLiteral("memory.db"));
    makeStore(store);

    QSettings settings(QDir(dir.path()).filePath(QStringLiteral("studio.ini")), QSettings::IniFormat);
    MainWindow window(settings);
    window.resize(1440, 800);
    window.show();
    window.openStore(store);
    RecordsPage *page = window.recordsPage();
    const int total = int(std::size(kNotes));
    if (!waitUntil([&] { return page->recordModel()->rowCount() == total; }))
        std::fprintf(stderr, "mneme-studio-screenshots: the records did not load\n");

    // Records: /project chosen, a record with an edit in its history.
    ScopeTreeModel *scopes = page->scopeModel();
    waitUntil([&] { return scopes->indexOfPath(QStringLiteral("/project")).isValid(); });
    page->scopeView()->expand(scopes->indexOfPath(QStringLiteral("/project")));
    waitUntil([&] { return scopes->indexOfPath(QStringLiteral("/project/alpha")).isValid(); });
    page->scopeView()->expand(scopes->indexOfPath(QStringLiteral("/project/alpha")));
    page->scopeView()->setCurrentIndex(scopes->indexOfPath(QStringLiteral("/project")));
    waitUntil([&] { return page->recordModel()->totalCount() == 7 && page->recordModel()->rowCount() == 7; });
    int row = 0;
    while (row < page->recordModel()->rowCount() && !page->recordModel()->recordAt(row).content.startsWith(QStringLiteral("Backups")))
        ++row;
    page->recordView()->setCurrentIndex(page->recordModel()->index(row, 0));
    auto *content = page->details()->findChild<QPlainTextEdit *>();
    content->setPlainText(QStringLiteral("Backups of the user database run nightly at 03:00 UTC and are kept for 30 days."));
    page->details()->save();
    auto *history = page->details()->findChild<HistoryModel *>();
    waitUntil([&] { return history->rowCount() == 2; });
    bool ok = save(&window, out, QStringLiteral("studio-records.png"));

    // Recall: a question, the matches with their signal bars, the best one chosen.
    window.tabs()->setCurrentWidget(window.recallPanel());
    RecallPanel *recall = window.recallPanel();
    recall->queryEdit()->setText(QStringLiteral("when do database backups run?"));
    recall->recall();
    waitUntil([&] { return !recall->resultModel()->isLoading() && recall->resultModel()->rowCount() > 0; });
    recall->resultView()->setCurrentIndex(recall->resultModel()->index(0, RecallResultModel::ContentColumn));
    ok = save(&window, out, QStringLiteral("studio-recall.png")) && ok;

    // Run: the example research crew on its cassette, its events as a timeline.
    RunPage *run = window.runPage();
    window.tabs()->setCurrentWidget(run);
    run->provider()->providerChoice()->setCurrentIndex(run->provider()->providerChoice()->findData(ProviderBox::replayChoice()));
    bool ran = false;
    QObject::connect(run, &RunPage::finished, &app, [&] { ran = true; });
    run->run();
    waitUntil([&] { return ran; });
    ok = save(&window, out, QStringLiteral("studio-run.png")) && ok;

    // Chat: the example's first three turns with the trip assistant, on its cassette.
    ChatPage *chat = window.chatPage();
    window.tabs()->setCurrentWidget(chat);
    chat->provider()->providerChoice()->setCurrentIndex(chat->provider()->providerChoice()->findData(ProviderBox::replayChoice()));
    int answered = 0;
    QObject::connect(chat, &ChatPage::turnFinished, &app, [&] { ++answered; });
    for (int turn = 1; turn <= 3; ++turn) {
        chat->messageEdit()->setText(chat->exampleTurns()->itemData(turn).toString());
        chat->send();
        waitUntil([&] { return answered == turn; });
    }
    ok = save(&window, out, QStringLiteral("studio-chat.png")) && ok;

    // The recall again under a dark palette: every colour, the bars' too, comes from the palette.
    QApplication::setStyle(QStringLiteral("Fusion"));
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    dark.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
    dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    dark.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
    dark.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
    dark.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    dark.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
    dark.setColor(QPalette::Midlight, QColor(0x4a, 0x4a, 0x4a));
    dark.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xd0));
    dark.setColor(QPalette::HighlightedText, QColor(0xff, 0xff, 0xff));
    dark.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
    QApplication::setPalette(dark);
    window.tabs()->setCurrentWidget(recall);
    ok = save(&window, out, QStringLiteral("studio-recall-dark.png")) && ok;
    return ok ? 0 : 1;
}
