#pragma once

namespace mneme::cli {

class CommandContext;

// The commands that work on scopes and on the store as a whole: tree, info, scopes, categories,
// reset, check.
class ScopeCommands
{
public:
    explicit ScopeCommands(CommandContext &context);

    void tree();
    void info();
    void scopes();
    void categories();
    void reset();
    void check();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
