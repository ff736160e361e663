#pragma once

#include <mneme/memory/memory_options.h>

namespace mneme::cli {

class CliArguments;
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

    // The options of remember that set a record's fields (remember-many's defaults too): --scope,
    // --category, --importance, --source, --private, --at, --metadata, --user, --agent, --run.
    static RememberOptions rememberOptions(const CliArguments &arguments);

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
