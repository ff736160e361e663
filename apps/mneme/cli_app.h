#pragma once

#include <QStringList>

namespace mneme::cli {

class CommandContext;
class Console;

// The `mneme` program: parses the arguments, runs one command, and turns every failure into one
// line "mneme: <message>" on standard error and the exit status docs/cli.md defines (0 success,
// 1 failure, 2 bad usage or invalid input, 3 permission refused).
class CliApp
{
public:
    explicit CliApp(Console &console);

    // `arguments` excludes the program name. Returns the exit status.
    int run(const QStringList &arguments);

private:
    void dispatch(CommandContext &context);

    Console &m_console;
};

} // namespace mneme::cli
