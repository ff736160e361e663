#include "core/error.h"

namespace mneme {

Error::Error(ErrorKind kind, const QString &message)
    : m_kind(kind), m_message(message.toStdString())
{
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
    case ErrorKind::Cancelled: return QStringLiteral("cancelled");
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
