#pragma once

#include <mneme/core/json.h>

#include <QString>

namespace mneme::cli {

class SourceView;

// The operations of the command line as JSON in, JSON out, for the MCP tools and the REST API: the
// arguments are a JSON object (keys in snake_case, as the CLI's options), the result is exactly what
// the command prints with --json. Everything goes through a SourceView, so the caller's source
// decides what is seen.
//
// Bad arguments throw Error(InvalidArgument) naming the operation and the key ("recall: \"limit\"
// must be an integer from 1 to 10000 (got \"ten\")"), and so does a key the operation does not take;
// the Memory's own errors pass through. Blocking: call from a worker thread.
class MemoryOperations
{
public:
    // With `stringNumbers`, integers and booleans may be given as strings ("10", "true"): what a URL's
    // query parameters hold.
    explicit MemoryOperations(SourceView &view, bool stringNumbers = false);

    // {"content", "scope", "categories", "importance", "private", "metadata", "created_at"} -> the record
    Json remember(const Json &args);
    // {"items": [{"content", ...as remember}], and defaults for every item: "scope", "categories",
    // "importance", "private", "metadata", "created_at"} -> {"stored", "dropped", "ids"}; at most 1000 items.
    Json rememberMany(const Json &args);
    // {"query", "scope" (one or a list: a slice), "categories", "limit", "depth", "now", "where" (metadata
    // conditions, RecallOptions::metadata), "min_relevance", "min_score", "only_source", "user_id",
    // "agent_id", "run_id"} -> [matches]
    Json recall(const Json &args);
    // {"scope", "ids", "categories", "older_than", "where", "user_id", "agent_id", "run_id"} (at least
    // one) -> {"deleted"}
    Json forget(const Json &args);
    // {"id", "content", "scope", "categories", "importance", "metadata"} -> the record
    Json update(const Json &args);
    Json get(const Json &args);        // {"id"} -> the record
    Json history(const Json &args);    // {"id"} -> [{"event", "old_content", "new_content", "at"}]
    Json undo(const Json &args);       // {"id"} -> the record as restored
    Json tree(const Json &args);       // {"scope", "max_depth"} -> {"path", "record_count", "children"}
    Json info(const Json &args);       // {"scope"} -> {"path", "record_count", "categories", ...}
    Json scopes(const Json &args);     // {"scope"} -> [paths]
    Json categories(const Json &args); // {"scope"} -> {"category": count}
    Json list(const Json &args);       // {"scope", "limit", "offset"} -> [records]
    Json extract(const Json &args);    // {"text"} -> [statements]

private:
    SourceView &m_view;
    bool m_stringNumbers;
};

} // namespace mneme::cli
