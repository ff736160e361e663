#pragma once

#include <QString>

namespace mneme::cli {

class CommandContext;

// `mneme chat`: an interactive chat with an agent, its session kept in the store; and
// `mneme sessions list|show|clear|delete`: the chat sessions of the store.
class ChatCommands
{
public:
    explicit ChatCommands(CommandContext &context);

    void chat();
    void sessions();

private:
    void list();
    void show(const QString &session);
    void clear(const QString &session, bool andDelete);

    CommandContext &m_ctx;
};

} // namespace mneme::cli
