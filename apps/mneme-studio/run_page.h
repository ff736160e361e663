#pragma once

#include <QFuture>
#include <QWidget>
#include <memory>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSettings;
class QTemporaryDir;
class QTreeView;

namespace mneme {
class Crew;
class EventBus;
class EventLogModel;
class LlmRef;
struct CrewOutput;
} // namespace mneme

namespace mneme::studio {

class ProviderBox;

// Runs the research crew of examples/research_crew in the window: offline on the example's replay
// cassette (built into the app), or on the provider of the ProviderBox. The crew runs on the GUI
// thread's event loop (Crew::kickoff) with a memory of its own in a temporary folder; its events fill
// a live timeline (EventLogModel, nested, filtered by family) and its answers the output pane,
// streamed chunks as they come.
class RunPage : public QWidget
{
    Q_OBJECT
public:
    explicit RunPage(QSettings &settings, QWidget *parent = nullptr);
    ~RunPage() override;

    void run();
    void cancel();
    bool isRunning() const;

    EventLogModel *eventModel() const;
    QTreeView *eventView() const;
    QPlainTextEdit *outputView() const;
    ProviderBox *provider() const;
    QComboBox *topicChoice() const;
    QString lastError() const;

Q_SIGNALS:
    void runningChanged(bool running);
    void finished(bool ok);

private:
    void onFinished(QFuture<CrewOutput> future);
    void setRunning(bool running);

    QSettings &m_settings;
    EventBus *m_bus;
    EventLogModel *m_log;
    std::unique_ptr<QTemporaryDir> m_scratch;
    std::unique_ptr<Crew> m_crew;
    bool m_running = false;
    QString m_lastError;
    ProviderBox *m_provider;
    QComboBox *m_topic;
    QPushButton *m_run;
    QPushButton *m_cancel;
    QComboBox *m_family;
    QTreeView *m_events;
    QPlainTextEdit *m_output;
    QLabel *m_status;
};

} // namespace mneme::studio
