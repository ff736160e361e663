#pragma once

namespace mneme::cli {

class CommandContext;

// The commands that work on scopes: tree, info, scopes, categories, reset.
class ScopeCommands
{
public:
    explicit ScopeCommands(CommandContext &context);

    void tree();
    void info();
    void scopes();
    void categories();
    void reset();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
