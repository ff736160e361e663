#pragma once

namespace mneme::cli {

class CommandContext;

// The commands that work on records: remember, recall, forget, update, get, history, undo, list, and
// extract (which splits a text into the statements remember would be given, storing nothing).
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
    void undo();
    void list();
    void extract();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
