#pragma once

#include <QWidget>
#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QPushButton;
class QSettings;
class QTemporaryDir;

namespace mneme {
class AgentChat;
class ChatMessageModel;
class EventBus;
} // namespace mneme

namespace example {
struct TripChat;
}

namespace mneme::studio {

class ProviderBox;

// Chats with the trip assistant of examples/chat_agent (AgentChat) on its chat memory: the session's
// history in a token-limited window whose oldest messages are flushed into memory blocks (a long-term
// block among them, into a Memory), all in a store of its own in a temporary folder. The messages are
// a ChatMessageModel: the user's message at once, the answer growing as it streams. Offline the
// example's replay cassette answers the example's six turns (offered in "Example turns"); with a
// provider of the ProviderBox any message is answered.
class ChatPage : public QWidget
{
    Q_OBJECT
public:
    explicit ChatPage(QSettings &settings, QWidget *parent = nullptr);
    ~ChatPage() override;

    // Sends the message box's text (a session is started first when none is open).
    void send();
    // Ends the session and starts none: the next message starts a fresh one, with the provider chosen then.
    void newSession();
    bool hasSession() const;

    ChatMessageModel *messageModel() const;
    QListView *messageView() const;
    QLineEdit *messageEdit() const;
    QComboBox *exampleTurns() const;
    ProviderBox *provider() const;
    QString lastError() const;

Q_SIGNALS:
    // A turn ended: answered, or failed (lastError() says why).
    void turnFinished(bool ok);

private:
    bool startSession();
    void fail(const QString &message);
    void updateState();

    EventBus *m_bus;
    ChatMessageModel *m_model;
    ProviderBox *m_provider;
    QComboBox *m_turns;
    QLineEdit *m_message;
    QPushButton *m_send;
    QPushButton *m_stop;
    QPushButton *m_new;
    QListView *m_messages;
    QLabel *m_status;
    QString m_lastError;
    // Destroyed in reverse order: the chat before the memory it uses, that before its folder.
    std::unique_ptr<QTemporaryDir> m_scratch;
    std::unique_ptr<example::TripChat> m_trip;
    std::unique_ptr<AgentChat> m_chat;
};

} // namespace mneme::studio
