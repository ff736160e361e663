#pragma once

#include "memory_operations.h"

#include <mneme/core/json.h>

#include <QString>

namespace mneme::cli {

class SourceView;

// A JSON-RPC error an MCP request is answered with (an unknown tool, malformed params, a resource
// that does not exist), as opposed to a tool's own failure, which is a result with isError.
struct McpProtocolError
{
    int code;
    QString message;
    Json data;
};

// What `mneme mcp` offers: the memory's tools (remember, recall, forget, update, get, history, tree,
// info) with their input and output schemas, and the memory's scopes as resources
// (mneme://scope/PATH, and mneme://record/ID through a template). Everything goes through one
// SourceView, the server's source. Blocking: the server calls it from its worker threads.
class McpCatalog
{
public:
    explicit McpCatalog(SourceView &view);

    // The tools/list result for a session of this protocol version (outputSchema from 2025-06-18 on).
    Json tools(const QString &protocolVersion) const;
    // tools/call: the result object ({"content", "structuredContent", "isError"}). A failure of the
    // operation (bad arguments, an unknown id, a read-only memory) is a result with isError, so the
    // model can correct its call; an unknown tool or malformed params throw McpProtocolError.
    Json callTool(const Json &params, const QString &protocolVersion);

    // resources/list (100 a page, "cursor" from the previous page's "nextCursor").
    Json resources(const Json &params);
    Json resourceTemplates() const;
    // resources/read of a scope (its statistics and newest 100 records) or a record; a URI that names
    // nothing this source sees throws McpProtocolError(-32002), exactly as one that names nothing.
    Json readResource(const Json &params);

    // The serverInfo instructions: what the tools are for, in two sentences.
    static QString instructions();
    static QString scopeUri(const QString &path);

private:
    Json runTool(const QString &name, const Json &arguments);

    SourceView &m_view;
    MemoryOperations m_operations;
};

} // namespace mneme::cli
