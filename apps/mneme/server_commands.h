#pragma once

namespace mneme::cli {

class CommandContext;

// The commands that serve the memory to other programs until they are stopped (SIGINT or SIGTERM,
// or for `mcp` over stdio the end of its input): `mcp`, an MCP server over stdio or streamable HTTP,
// and `serve`, a REST API.
class ServerCommands
{
public:
    explicit ServerCommands(CommandContext &context);

    void mcp();
    void serve();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
