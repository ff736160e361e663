#pragma once

#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>

#include <QList>

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
    // recall's table of matches (and of relations, when any), or "No memories match."
    void printMatches(const QList<MemoryMatch> &matches, const QList<RelationMatch> &relations);
    // recall --stats: how the recall was answered, in one line.
    static QString statsLine(const RecallStats &stats);

    CommandContext &m_ctx;
};

} // namespace mneme::cli
