#pragma once

#include <QList>
#include <QString>

#include <utility>

namespace mneme::cli {

class CommandContext;

// The evaluations: `eval locomo FILE [--k 1,5,10] [--conversations A-B] [--category N]...`
// (docs/cli.md, "eval locomo").
class EvalCommands
{
public:
    explicit EvalCommands(CommandContext &context);

    // Dispatches on the first argument (the benchmark); only "locomo" exists.
    void eval();

    // Option values; each throws Error(InvalidArgument) naming the option.
    // "1,5,10": positive integers, returned ascending and distinct.
    static QList<int> parseKs(const QString &text);
    // "A-B" or "N", 1-based: the first and last index.
    static std::pair<int, int> parseRange(const QString &text);
    // "1".."5".
    static int parseCategory(const QString &text);

private:
    void locomo();

    CommandContext &m_ctx;
};

} // namespace mneme::cli
