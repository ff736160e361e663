#include "chat_page.h"

#include "provider_box.h"

#include "chat_agent/chat_agent.h"

#include <mneme/core/error.h>
#include <mneme/models/chat_message_model.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/llm_ref.h>

#include <QComboBox>
#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QStyledItemDelegate>
#include <QTemporaryDir>
#include <QVBoxLayout>

namespace mneme::studio {

namespace {

// A message as "role: content"; an assistant message that only calls tools says which.
class MessageDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const override
    {
        QStyledItemDelegate::initStyleOption(option, index);
        const QString role = index.data(ChatMessageModel::RoleNameRole).toString();
        const QString tools = index.data(ChatMessageModel::ToolNameRole).toString();
        if (index.data(ChatMessageModel::ContentRole).toString().isEmpty() && !tools.isEmpty()
            && !index.data(ChatMessageModel::FailedRole).toBool())
            option->text = QStringLiteral("%1: (%2)").arg(role, ChatPage::tr("calls %1").arg(tools));
    }
};

// The example's cassette, built into the app (qt_add_resources).
const QString kCassette = QStringLiteral(":/examples/chat_agent/chat_agent.jsonl");

} // namespace

ChatPage::ChatPage(QSettings &settings, QWidget *parent)
    : QWidget(parent),
      m_bus(new EventBus(this)),
      m_model(new ChatMessageModel(this)),
      m_provider(new ProviderBox(settings, this)),
      m_turns(new QComboBox(this)),
      m_message(new QLineEdit(this)),
      m_send(new QPushButton(tr("&Send"), this)),
      m_stop(new QPushButton(tr("S&top"), this)),
      m_new(new QPushButton(tr("&New Session"), this)),
      m_messages(new QListView(this)),
      m_status(new QLabel(this))
{
    m_turns->setAccessibleName(tr("Example turns"));
    m_turns->addItem(tr("Example turns (the cassette answers these)…"), QString());
    for (const QString &turn : example::tripTurns())
        m_turns->addItem(turn, turn);
    m_message->setAccessibleName(tr("Message"));
    m_message->setPlaceholderText(tr("Write to the trip assistant and press Enter"));
    m_message->setClearButtonEnabled(true);
    m_send->setAccessibleName(tr("Send the message"));
    m_stop->setAccessibleName(tr("Stop the answer"));
    m_new->setAccessibleName(tr("Start a new session"));
    m_messages->setModel(m_model);
    m_messages->setItemDelegate(new MessageDelegate(m_messages));
    m_messages->setAccessibleName(tr("Messages"));
    m_messages->setWordWrap(true);
    m_messages->setAlternatingRowColors(true);
    m_messages->setUniformItemSizes(false);
    m_messages->setSpacing(2);
    m_messages->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_status->setAccessibleName(tr("Chat status"));
    m_status->setWordWrap(true);

    auto *about = new QLabel(tr("The trip assistant of examples/chat_agent: a chat memory whose oldest messages are flushed "
                                "into memory blocks (facts, a vector index, the long-term Memory), in a store of its own."),
                             this);
    about->setWordWrap(true);
    auto *top = new QHBoxLayout;
    top->addWidget(m_provider, 1);
    auto *aboutBox = new QVBoxLayout;
    aboutBox->addWidget(about);
    aboutBox->addWidget(m_turns);
    aboutBox->addWidget(m_new, 0, Qt::AlignLeft);
    top->addLayout(aboutBox, 1);
    auto *input = new QHBoxLayout;
    auto *messageLabel = new QLabel(tr("&Message:"), this);
    messageLabel->setBuddy(m_message);
    input->addWidget(messageLabel);
    input->addWidget(m_message, 1);
    input->addWidget(m_send);
    input->addWidget(m_stop);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_messages, 1);
    layout->addLayout(input);
    layout->addWidget(m_status);
    setTabOrder(m_provider->modelEdit(), m_turns);
    setTabOrder(m_turns, m_new);
    setTabOrder(m_new, m_messages);
    setTabOrder(m_messages, m_message);
    setTabOrder(m_message, m_send);
    setTabOrder(m_send, m_stop);

    connect(m_turns, &QComboBox::activated, this, [this](int row) {
        const QString turn = m_turns->itemData(row).toString();
        if (!turn.isEmpty())
            m_message->setText(turn);
        m_message->setFocus();
    });
    connect(m_message, &QLineEdit::returnPressed, this, &ChatPage::send);
    connect(m_send, &QPushButton::clicked, this, &ChatPage::send);
    connect(m_stop, &QPushButton::clicked, this, [this] {
        if (m_chat)
            m_chat->cancel();
    });
    connect(m_new, &QPushButton::clicked, this, &ChatPage::newSession);
    connect(m_model, &ChatMessageModel::busyChanged, this, &ChatPage::updateState);
    connect(m_model, &ChatMessageModel::errorOccurred, this, &ChatPage::fail);
    connect(m_model, &QAbstractItemModel::rowsInserted, m_messages, [this] { m_messages->scrollToBottom(); });
    connect(m_model, &QAbstractItemModel::dataChanged, m_messages, [this] { m_messages->scrollToBottom(); });
    updateState();
    m_status->setText(tr("Write a message: the first one starts a session with the provider chosen above."));
}

ChatPage::~ChatPage()
{
    m_model->setChat(nullptr);
}

bool ChatPage::startSession()
{
    m_scratch = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("mneme-studio-chat-XXXXXX")));
    try {
        const std::shared_ptr<LlmProvider> llm = m_provider->llm(kCassette).resolve();
        m_trip = std::make_unique<example::TripChat>(
            example::makeTripChat(llm, m_scratch->filePath(QStringLiteral("memory.db")), /*stream=*/true));
        m_chat = std::make_unique<AgentChat>(m_trip->assistant, m_trip->chatMemory, AgentChatOptions{m_bus});
    } catch (const Error &e) {
        m_chat.reset();
        m_trip.reset();
        fail(e.message());
        return false;
    }
    connect(m_chat.get(), &AgentChat::turnCompleted, this, [this] {
        m_status->setText(tr("Answered."));
        Q_EMIT turnFinished(true);
    });
    // A failed turn is reported by the model (errorOccurred, connected to fail()).
    m_model->setChat(m_chat.get());
    m_provider->setEnabled(false);
    return true;
}

void ChatPage::newSession()
{
    m_model->setChat(nullptr);
    m_chat.reset();
    m_trip.reset();
    m_scratch.reset();
    m_provider->setEnabled(true);
    m_lastError.clear();
    m_status->setText(tr("The next message starts a new session."));
    updateState();
}

void ChatPage::send()
{
    const QString message = m_message->text().trimmed();
    if (message.isEmpty())
        return;
    if (!m_chat && !startSession())
        return;
    m_lastError.clear();
    m_message->clear();
    m_status->setText(tr("The assistant is answering…"));
    m_model->send(message);
}

void ChatPage::fail(const QString &message)
{
    m_lastError = message;
    m_status->setText(message);
    Q_EMIT turnFinished(false);
}

void ChatPage::updateState()
{
    const bool busy = m_model->isBusy();
    m_stop->setEnabled(busy);
    m_new->setEnabled(m_chat != nullptr && !busy);
}

bool ChatPage::hasSession() const
{
    return m_chat != nullptr;
}

ChatMessageModel *ChatPage::messageModel() const
{
    return m_model;
}

QListView *ChatPage::messageView() const
{
    return m_messages;
}

QLineEdit *ChatPage::messageEdit() const
{
    return m_message;
}

QComboBox *ChatPage::exampleTurns() const
{
    return m_turns;
}

ProviderBox *ChatPage::provider() const
{
    return m_provider;
}

QString ChatPage::lastError() const
{
    return m_lastError;
}

} // namespace mneme::studio
