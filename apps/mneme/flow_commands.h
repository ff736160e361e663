#pragma once

namespace mneme::cli {

class CommandContext;

// `flow-graph FILE|-`: the Graphviz DOT of a flow, from the JSON description a flow writes with
// Flow::toJson() or its program prints with --flow-graph=json.
class FlowCommands
{
public:
    explicit FlowCommands(CommandContext &context);

    void flowGraph();

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
