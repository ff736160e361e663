#include <mneme/core/error.h>

#include <algorithm>

namespace mneme {

Error::Error(ErrorKind kind, const QString &message)
    : m_kind(kind), m_message(message.toStdString())
{
}

Error::Error(ErrorKind kind, const QString &message, int httpStatus)
    : m_kind(kind), m_message(message.toStdString()), m_httpStatus(httpStatus)
{
}

QString Error::quoted(const QString &text, qsizetype maxChars)
{
    if (text.size() <= maxChars)
        return QLatin1Char('"') + text + QLatin1Char('"');
    qsizetype cut = std::max<qsizetype>(0, maxChars - 3);
    if (cut > 0 && text.at(cut - 1).isHighSurrogate())
        --cut; // never half a character
    return QStringLiteral("\"%1...\" (%2 characters)").arg(text.left(cut)).arg(text.size());
}

bool Error::isProviderError() const noexcept
{
    switch (m_kind) {
    case ErrorKind::Provider:
    case ErrorKind::Authentication:
    case ErrorKind::RateLimited:
    case ErrorKind::ContextLength:
    case ErrorKind::BadRequest:
    case ErrorKind::ServerError:
    case ErrorKind::Network:
    case ErrorKind::Timeout:
    case ErrorKind::MalformedReply:
        return true;
    default:
        return false;
    }
}

QString Error::kindName(ErrorKind kind)
{
    switch (kind) {
    case ErrorKind::InvalidArgument: return QStringLiteral("invalid_argument");
    case ErrorKind::NotFound: return QStringLiteral("not_found");
    case ErrorKind::PermissionDenied: return QStringLiteral("permission_denied");
    case ErrorKind::EmbedderMismatch: return QStringLiteral("embedder_mismatch");
    case ErrorKind::SchemaTooNew: return QStringLiteral("schema_too_new");
    case ErrorKind::Corrupt: return QStringLiteral("corrupt");
    case ErrorKind::ReadOnlyStore: return QStringLiteral("read_only_store");
    case ErrorKind::Storage: return QStringLiteral("storage");
    case ErrorKind::Embedder: return QStringLiteral("embedder");
    case ErrorKind::Plugin: return QStringLiteral("plugin");
    case ErrorKind::Provider: return QStringLiteral("provider");
    case ErrorKind::Authentication: return QStringLiteral("authentication");
    case ErrorKind::RateLimited: return QStringLiteral("rate_limited");
    case ErrorKind::ContextLength: return QStringLiteral("context_length_exceeded");
    case ErrorKind::BadRequest: return QStringLiteral("bad_request");
    case ErrorKind::ServerError: return QStringLiteral("server_error");
    case ErrorKind::Network: return QStringLiteral("network");
    case ErrorKind::Timeout: return QStringLiteral("timeout");
    case ErrorKind::MalformedReply: return QStringLiteral("malformed_reply");
    case ErrorKind::Cancelled: return QStringLiteral("cancelled");
    case ErrorKind::GuardrailFailed: return QStringLiteral("guardrail_failed");
    case ErrorKind::Internal: return QStringLiteral("internal");
    }
    return QStringLiteral("internal");
}

int Error::exitCode() const noexcept
{
    switch (m_kind) {
    case ErrorKind::InvalidArgument:
    case ErrorKind::NotFound:
        return 2;
    case ErrorKind::PermissionDenied:
    case ErrorKind::ReadOnlyStore:
        return 3;
    default:
        return 1;
    }
}

} // namespace mneme
