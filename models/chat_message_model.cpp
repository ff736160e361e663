#include <mneme/models/chat_message_model.h>

#include "models/future_watch_p.h"
#include <mneme/memory/chat_memory.h>
#include <mneme/runtime/agent_chat.h>

#include <QPointer>

namespace mneme {

struct ChatMessageModel::Row
{
    SessionMessage message;
    bool streaming = false;
    bool failed = false;
    bool live = false; // a row of the running turn (replaced by what the chat memory stored)
    QString error;
    QStringList tools;
};

struct ChatMessageModel::State
{
    QPointer<AgentChat> chat;
    QList<QMetaObject::Connection> connections;
    QList<Row> rows;
    bool includeArchived = false;
    quint64 generation = 0;
};

ChatMessageModel::ChatMessageModel(QObject *parent) : QAbstractListModel(parent), d(std::make_unique<State>()) {}

ChatMessageModel::~ChatMessageModel() = default;

void ChatMessageModel::setChat(AgentChat *chat)
{
    if (d->chat == chat)
        return;
    for (const QMetaObject::Connection &c : std::as_const(d->connections))
        QObject::disconnect(c);
    d->connections.clear();
    d->chat = chat;
    if (chat) {
        d->connections << connect(chat, &AgentChat::turnStarted, this, &ChatMessageModel::onTurnStarted)
                       << connect(chat, &AgentChat::textChunk, this, &ChatMessageModel::onTextChunk)
                       << connect(chat, &AgentChat::toolStarted, this, [this](const QString &name, const QString &) { onToolStarted(name); })
                       << connect(chat, &AgentChat::turnCompleted, this,
                                  [this](const ChatReply &reply) { onTurnCompleted(reply.stored, reply.text); })
                       << connect(chat, &AgentChat::turnFailed, this, &ChatMessageModel::onTurnFailed);
    }
    Q_EMIT busyChanged();
    reload();
}

AgentChat *ChatMessageModel::chat() const { return d->chat; }
bool ChatMessageModel::includeArchived() const { return d->includeArchived; }
bool ChatMessageModel::isBusy() const { return d->chat && d->chat->isBusy(); }

void ChatMessageModel::setIncludeArchived(bool include)
{
    if (d->includeArchived == include)
        return;
    d->includeArchived = include;
    Q_EMIT includeArchivedChanged();
    reload();
}

void ChatMessageModel::reload()
{
    const quint64 generation = ++d->generation;
    beginResetModel();
    d->rows.clear();
    endResetModel();
    if (!d->chat || !d->chat->memory())
        return;
    QFuture<QList<SessionMessage>> future;
    try {
        future = d->chat->memory()->messagesAsync(d->includeArchived);
    } catch (const Error &e) {
        Q_EMIT errorOccurred(e.message());
        return;
    }
    models::whenFinished(this, future, [this, generation](QFuture<QList<SessionMessage>> f) {
        if (generation != d->generation)
            return;
        QString error;
        const std::optional<QList<SessionMessage>> stored = models::resultOf(f, &error);
        if (!stored) {
            if (!error.isEmpty())
                Q_EMIT errorOccurred(error);
            return;
        }
        // Rows of a turn that started while the history was read stay after it.
        QList<Row> rows;
        for (const SessionMessage &m : *stored) {
            Row r;
            r.message = m;
            rows << r;
        }
        beginInsertRows(QModelIndex(), 0, int(rows.size()) - 1);
        d->rows = rows + d->rows;
        endInsertRows();
        Q_EMIT loaded();
    });
}

void ChatMessageModel::send(const QString &message)
{
    if (!d->chat) {
        Q_EMIT errorOccurred(tr("no chat is open"));
        return;
    }
    try {
        d->chat->send(message);
    } catch (const Error &e) {
        Q_EMIT errorOccurred(e.message());
    }
    Q_EMIT busyChanged();
}

void ChatMessageModel::append(Row row)
{
    const int at = int(d->rows.size());
    beginInsertRows(QModelIndex(), at, at);
    d->rows << std::move(row);
    endInsertRows();
}

void ChatMessageModel::onTurnStarted(const QString &message)
{
    Row user;
    user.message = SessionMessage(ChatMessage::user(message));
    user.live = true;
    append(user);
    Row answer;
    answer.message = SessionMessage(ChatMessage::assistant(QString()));
    answer.streaming = true;
    answer.live = true;
    append(answer);
    Q_EMIT busyChanged();
}

void ChatMessageModel::onTextChunk(const QString &text)
{
    if (d->rows.isEmpty() || !d->rows.back().streaming)
        return;
    d->rows.back().message.message.content += text;
    const QModelIndex at = index(int(d->rows.size()) - 1);
    Q_EMIT dataChanged(at, at, {ContentRole, Qt::DisplayRole});
}

void ChatMessageModel::onToolStarted(const QString &name)
{
    if (d->rows.isEmpty() || !d->rows.back().streaming)
        return;
    d->rows.back().tools << name;
    const QModelIndex at = index(int(d->rows.size()) - 1);
    Q_EMIT dataChanged(at, at, {ToolNameRole});
}

void ChatMessageModel::onTurnCompleted(const QList<SessionMessage> &stored, const QString &answer)
{
    // The live rows of the turn give way to what the chat memory stored (with its tool messages).
    int first = int(d->rows.size());
    while (first > 0 && d->rows[first - 1].live)
        --first;
    if (first < d->rows.size()) {
        beginRemoveRows(QModelIndex(), first, int(d->rows.size()) - 1);
        d->rows.remove(first, d->rows.size() - first);
        endRemoveRows();
    }
    QList<SessionMessage> shown = stored;
    if (shown.isEmpty()) // a chat memory that stored nothing: the answer as it came
        shown << SessionMessage(ChatMessage::assistant(answer));
    for (const SessionMessage &m : std::as_const(shown)) {
        Row r;
        r.message = m;
        append(r);
    }
    Q_EMIT busyChanged();
}

void ChatMessageModel::onTurnFailed(const QString &error)
{
    if (!d->rows.isEmpty() && d->rows.back().streaming) {
        Row &answer = d->rows.back();
        answer.streaming = false;
        answer.failed = true;
        answer.error = error;
        const QModelIndex at = index(int(d->rows.size()) - 1);
        Q_EMIT dataChanged(at, at);
    }
    for (Row &r : d->rows)
        r.live = false; // nothing of a failed turn is stored: its rows stay as they are
    Q_EMIT busyChanged();
    Q_EMIT errorOccurred(error);
}

QVariantMap ChatMessageModel::get(int row) const
{
    QVariantMap out;
    if (row < 0 || row >= d->rows.size())
        return out;
    const QHash<int, QByteArray> names = roleNames();
    for (auto it = names.begin(); it != names.end(); ++it)
        if (it.key() >= Qt::UserRole)
            out.insert(QString::fromLatin1(it.value()), data(index(row), it.key()));
    return out;
}

int ChatMessageModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(d->rows.size());
}

QVariant ChatMessageModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row &r = d->rows[index.row()];
    const ChatMessage &m = r.message.message;
    switch (role) {
    case Qt::DisplayRole:
    case Qt::AccessibleTextRole:
        return QStringLiteral("%1: %2").arg(ChatMessage::roleName(m.role), r.failed ? r.error : m.content);
    case RoleNameRole:
        return ChatMessage::roleName(m.role);
    case ContentRole:
        return m.content;
    case AtRole:
        return r.message.at;
    case SeqRole:
        return r.message.seq;
    case StreamingRole:
        return r.streaming;
    case FailedRole:
        return r.failed;
    case ErrorRole:
        return r.error;
    case ToolNameRole: {
        if (m.role == ChatMessage::Role::Tool)
            return m.name;
        QStringList tools = r.tools;
        for (const ToolCall &c : m.toolCalls)
            tools << c.name;
        return tools.join(QLatin1String(", "));
    }
    case ArchivedRole:
        return r.message.isArchived();
    default:
        return {};
    }
}

QHash<int, QByteArray> ChatMessageModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(RoleNameRole, "role");
    names.insert(ContentRole, "content");
    names.insert(AtRole, "at");
    names.insert(SeqRole, "seq");
    names.insert(StreamingRole, "streaming");
    names.insert(FailedRole, "failed");
    names.insert(ErrorRole, "error");
    names.insert(ToolNameRole, "toolName");
    names.insert(ArchivedRole, "archived");
    return names;
}

} // namespace mneme
