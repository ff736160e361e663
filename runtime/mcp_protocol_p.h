#pragma once

// Internal to Mneme (the MCP client in the runtime and the MCP server of the command line): the
// protocol revisions Mneme speaks and the names the streamable HTTP transport uses.

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace mneme::Mcp {

// The newest revision, which Mneme's client asks for and its server answers with unless the client
// asks for an older one it also knows.
inline constexpr char kLatestVersion[] = "2025-11-25";

// Every revision Mneme speaks, newest first. 2025-03-26 introduced the streamable HTTP transport (and
// JSON-RPC batches, which 2025-06-18 removed again); 2025-06-18 added structured tool output
// (outputSchema, structuredContent) and the MCP-Protocol-Version header; 2025-11-25 changed nothing
// Mneme's tools depend on. 2024-11-05 clients are served over stdio (their HTTP transport, HTTP+SSE,
// is not offered).
inline const QStringList &supportedVersions()
{
    static const QStringList versions = {QStringLiteral("2025-11-25"), QStringLiteral("2025-06-18"),
                                         QStringLiteral("2025-03-26"), QStringLiteral("2024-11-05")};
    return versions;
}

inline bool isSupportedVersion(const QString &version)
{
    return supportedVersions().contains(version);
}

// Whether tools of this revision declare outputSchema and results carry structuredContent.
inline bool hasStructuredContent(const QString &version)
{
    return version >= QLatin1String("2025-06-18"); // the revisions are dates: they sort as text
}

// Whether this revision allows JSON-RPC batches (an array of messages).
inline bool allowsBatches(const QString &version)
{
    return version == QLatin1String("2025-03-26");
}

// What a streamable HTTP server assumes when a request carries no MCP-Protocol-Version header.
inline constexpr char kHttpDefaultVersion[] = "2025-03-26";

inline constexpr char kSessionHeader[] = "Mcp-Session-Id";
inline constexpr char kVersionHeader[] = "MCP-Protocol-Version";

} // namespace mneme::Mcp
