#pragma once

#include "http_server.h"

#include <QByteArray>
#include <QHostAddress>
#include <QString>
#include <QStringList>
#include <optional>
#include <utility>

namespace mneme::cli {

// Who may use one of Mneme's HTTP servers (`mneme serve`, `mneme mcp --listen`): the bearer token it
// was started with, and the origins a web page may call it from (a browser's Origin header: pages of
// other sites are refused, which also stops DNS rebinding against a loopback server).
//
// The token is kept as its SHA-256 digest only and compared in constant time; it never appears in a
// message, a log line or a file Mneme writes.
class HttpAccess
{
public:
    // An empty token: no token is asked for (allowed on a loopback address only, see checkExposure).
    HttpAccess(const QByteArray &token, QStringList allowedOrigins);

    bool requiresToken() const { return !m_digest.isEmpty(); }

    // The response refusing the request (401 without the right "Authorization: Bearer" token, 403 for
    // an origin that is not allowed), or nullopt when it may go on.
    std::optional<HttpServerResponse> check(const HttpServerRequest &request) const;

    // The token from --token-file FILE, else from $MNEME_HTTP_TOKEN; empty when neither is given.
    // Throws Error(InvalidArgument) for a file that cannot be read, or a token that is empty, shorter
    // than 16 characters or holds white space, without ever quoting it.
    static QByteArray readToken(const std::optional<QString> &file);
    // "127.0.0.1:8765", "[::1]:8765", "localhost:8765", "0.0.0.0:8765". Throws Error(InvalidArgument).
    static std::pair<QHostAddress, quint16> parseListen(const QString &text, const QString &option);
    static bool isLoopback(const QHostAddress &address);
    // An address other hosts can reach needs a token: throws Error(InvalidArgument) saying how to give one.
    static void checkExposure(const QHostAddress &address, bool hasToken, const QString &command);
    // "http://127.0.0.1:8765", "http://[::1]:8765".
    static QString urlOf(const QHostAddress &address, quint16 port);

private:
    QByteArray m_digest;
    QStringList m_origins;
};

} // namespace mneme::cli
