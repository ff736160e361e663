#pragma once

#include <mneme/memory/session_message.h>
#include <mneme/models/export.h>

#include <QAbstractListModel>
#include <QVariantMap>
#include <memory>

namespace mneme {

class AgentChat;

// The messages of an agent chat (AgentChat), oldest first: the session's stored history (read from its
// ChatMemory on the memory's threads), then, live, each turn: the user's message as soon as it is
// sent, the agent's answer growing as it streams (textChunk), its tool calls, and at the end the turn
// as the chat memory stored it. A failed turn leaves the user's message with the error on the answer
// row (FailedRole, ErrorRole). For a QListView or a QML ListView (roles).
class MNEME_MODELS_EXPORT ChatMessageModel : public QAbstractListModel
{
    Q_OBJECT
    Q_PROPERTY(bool busy READ isBusy NOTIFY busyChanged)
    Q_PROPERTY(bool includeArchived READ includeArchived WRITE setIncludeArchived NOTIFY includeArchivedChanged)
public:
    enum Role {
        RoleNameRole = Qt::UserRole + 1, // "role": "system", "user", "assistant", "tool"
        ContentRole,                     // "content"
        AtRole,                          // "at": UTC (invalid while streaming)
        SeqRole,                         // "seq": position in the session (0: not stored yet)
        StreamingRole,                   // "streaming": the answer is still arriving
        FailedRole,                      // "failed": the turn failed
        ErrorRole,                       // "error": why
        ToolNameRole,                    // "toolName": a tool message's tool, or the tools an answer called
        ArchivedRole,                    // "archived": flushed to the memory blocks
    };
    Q_ENUM(Role)

    explicit ChatMessageModel(QObject *parent = nullptr);
    ~ChatMessageModel() override;

    // The chat shown (null: none). It must outlive the model or be reset here first.
    void setChat(AgentChat *chat);
    AgentChat *chat() const;
    // Whether the history read at setChat() includes messages flushed to the memory blocks.
    bool includeArchived() const;
    void setIncludeArchived(bool include);
    bool isBusy() const;

    // Sends a message through the chat (AgentChat::send); the rows follow its signals.
    Q_INVOKABLE void send(const QString &message);
    Q_INVOKABLE QVariantMap get(int row) const;
    // Reads the stored history again (drops rows of a turn still running until it ends).
    Q_INVOKABLE void reload();

    int rowCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

Q_SIGNALS:
    void busyChanged();
    void includeArchivedChanged();
    void loaded();
    void errorOccurred(const QString &message);

private:
    struct Row;
    void append(Row row);
    void onTurnStarted(const QString &message);
    void onTextChunk(const QString &text);
    void onToolStarted(const QString &name);
    void onTurnCompleted(const QList<SessionMessage> &stored, const QString &answer);
    void onTurnFailed(const QString &error);
    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
