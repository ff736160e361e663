#pragma once

#include <mneme/core/graph_store.h>

#include <vector>

namespace mneme::cli {

class CommandContext;

// `mneme graph entities|relations|neighbours|export`: the graph memory keeps beside the records
// (docs/cli.md "graph"), read as the reader (--source, --curator) within --scope.
class GraphCommands
{
public:
    explicit GraphCommands(CommandContext &context);

    void graph();

private:
    void entities(const GraphFilter &filter);
    void relations(const GraphFilter &filter);
    void neighbours(const GraphFilter &filter);
    void exportGraph(const GraphFilter &filter);
    GraphStore &store();
    // The entities named ENTITY (by normalised name); Error(NotFound) naming it when there is none.
    std::vector<GraphEntity> named(const QString &entity, const GraphFilter &filter);
    void printRelations(const std::vector<GraphRelation> &relations);

    CommandContext &m_ctx;
};

} // namespace mneme::cli
