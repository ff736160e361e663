#include "http_access.h"

#include <mneme/core/error.h>

#include <QCryptographicHash>
#include <QFile>
#include <QUrl>

namespace mneme::cli {

namespace {

constexpr int kMinTokenLength = 16;

QByteArray digestOf(const QByteArray &token)
{
    return QCryptographicHash::hash(token, QCryptographicHash::Sha256);
}

// Equal digests, compared without an early exit, so the time taken tells nothing about the token.
bool sameDigest(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char difference = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        difference |= static_cast<unsigned char>(a[i] ^ b[i]);
    return difference == 0;
}

QString normalizedOrigin(const QString &origin)
{
    const QUrl url(origin.trimmed());
    if (!url.isValid() || url.host().isEmpty())
        return origin.trimmed().toLower();
    QString out = url.scheme().toLower() + QStringLiteral("://") + url.host().toLower();
    if (url.port() != -1)
        out += QLatin1Char(':') + QString::number(url.port());
    return out;
}

} // namespace

HttpAccess::HttpAccess(const QByteArray &token, QStringList allowedOrigins)
    : m_digest(token.isEmpty() ? QByteArray() : digestOf(token))
{
    for (const QString &o : allowedOrigins)
        m_origins << normalizedOrigin(o);
}

std::optional<HttpServerResponse> HttpAccess::check(const HttpServerRequest &request) const
{
    if (request.hasHeader("Origin")) {
        const QString origin = QString::fromUtf8(request.header("Origin"));
        const QUrl url(origin);
        const QString host = url.host().toLower();
        const bool local = url.isValid() && (host == QLatin1String("localhost") || host == QLatin1String("127.0.0.1") || host == QLatin1String("::1"));
        if (!local && !m_origins.contains(normalizedOrigin(origin)))
            return HttpServerResponse::error(403, QStringLiteral("forbidden"),
                                             QStringLiteral("requests from web pages of %1 are refused; start the server with "
                                                            "--allow-origin %1 to allow them")
                                                 .arg(origin.left(200)));
    }
    if (!requiresToken())
        return std::nullopt;
    const QByteArray authorization = request.header("Authorization");
    HttpServerResponse refused;
    if (!authorization.startsWith("Bearer ")) {
        refused = HttpServerResponse::error(401, QStringLiteral("unauthorized"),
                                            QStringLiteral("this server needs the header \"Authorization: Bearer TOKEN\" with the "
                                                           "token it was started with"));
    } else if (!sameDigest(digestOf(authorization.mid(7).trimmed()), m_digest)) {
        refused = HttpServerResponse::error(401, QStringLiteral("unauthorized"),
                                            QStringLiteral("the bearer token is not the one this server was started with"));
    } else {
        return std::nullopt;
    }
    refused.headers.append(qMakePair(QByteArray("WWW-Authenticate"), QByteArray("Bearer realm=\"mneme\"")));
    return refused;
}

QByteArray HttpAccess::readToken(const std::optional<QString> &file)
{
    QByteArray token;
    QString where;
    if (file) {
        QFile f(*file);
        if (!f.open(QIODevice::ReadOnly))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("cannot read the token file %1: %2; check the --token-file path").arg(*file, f.errorString()));
        token = f.read(4096).trimmed();
        where = QStringLiteral("the token file %1").arg(*file);
    } else if (!qEnvironmentVariableIsEmpty("MNEME_HTTP_TOKEN")) {
        token = qgetenv("MNEME_HTTP_TOKEN").trimmed();
        where = QStringLiteral("MNEME_HTTP_TOKEN");
    } else {
        return {};
    }
    if (token.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 holds no token").arg(where));
    if (std::any_of(token.begin(), token.end(), [](char c) { return uchar(c) <= 0x20 || uchar(c) == 0x7f; }))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the token in %1 holds white space or control characters; use one line of printable "
                                   "characters (openssl rand -hex 32 makes one)")
                        .arg(where));
    if (token.size() < kMinTokenLength)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the token in %1 is shorter than %2 characters, too short to be a secret; make one with "
                                   "openssl rand -hex 32")
                        .arg(where)
                        .arg(kMinTokenLength));
    return token;
}

std::pair<QHostAddress, quint16> HttpAccess::parseListen(const QString &text, const QString &option)
{
    const QString t = text.trimmed();
    const qsizetype colon = t.lastIndexOf(QLatin1Char(':'));
    const auto refuse = [&](const QString &why) {
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 takes HOST:PORT such as 127.0.0.1:8765, [::1]:8765 or 0.0.0.0:8765 (got \"%2\"): %3")
                        .arg(option, text, why));
    };
    if (colon <= 0)
        refuse(QStringLiteral("the port is missing"));
    QString host = t.left(colon);
    bool ok = false;
    const uint port = t.mid(colon + 1).toUInt(&ok);
    if (!ok || port > 65535)
        refuse(QStringLiteral("the port must be a number from 0 to 65535 (0 picks a free one)"));
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    QHostAddress address;
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        address = QHostAddress(QHostAddress::LocalHost);
    else if (!address.setAddress(host))
        refuse(QStringLiteral("\"%1\" is not an IP address (or localhost)").arg(host));
    return {address, quint16(port)};
}

bool HttpAccess::isLoopback(const QHostAddress &address)
{
    return address.isLoopback();
}

void HttpAccess::checkExposure(const QHostAddress &address, bool hasToken, const QString &command)
{
    if (isLoopback(address) || hasToken)
        return;
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("%1 on %2 would be reachable from other hosts, so it needs a bearer token: write one to a "
                               "file (openssl rand -hex 32 > token; chmod 600 token) and add --token-file token, or set "
                               "MNEME_HTTP_TOKEN; or listen on 127.0.0.1")
                    .arg(command, address.toString()));
}

QString HttpAccess::urlOf(const QHostAddress &address, quint16 port)
{
    const QString host = address.protocol() == QAbstractSocket::IPv6Protocol ? QStringLiteral("[%1]").arg(address.toString())
                                                                             : address.toString();
    return QStringLiteral("http://%1:%2").arg(host).arg(port);
}

} // namespace mneme::cli
