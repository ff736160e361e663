#pragma once

namespace mneme::cli {

class CommandContext;

// The commands that work on records: remember, recall, forget, update, get, history, list.
class RecordCommands
{
public:
    explicit RecordCommands(CommandContext &context);

    void remember();
    void recall();
    void forget();
    void update();
    void get();
    void history();
    void list();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
