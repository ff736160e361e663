#pragma once

#include <mneme/core/export.h>

#include <QException>
#include <QString>
#include <string>

namespace mneme {

// What kind of failure an Error reports. The CLI maps kinds to exit codes
// (InvalidArgument and NotFound -> 2, PermissionDenied and ReadOnlyStore -> 3, everything else -> 1).
enum class ErrorKind {
    InvalidArgument,  // bad input from the caller: scope path, importance, empty content, config
    NotFound,         // an id or a key that does not exist
    PermissionDenied, // a read-only view, a private record without a source
    EmbedderMismatch, // the store was written with another embedder id or dimension
    SchemaTooNew,     // the database was written by a newer Mneme
    Corrupt,          // the file is not a Mneme database or is damaged
    ReadOnlyStore,    // the file cannot be written
    Storage,          // any other storage failure
    Embedder,         // the embedder failed
    Plugin,           // a plugin could not be found, loaded or created
    Provider,         // a provider failed in a way none of the kinds below describes
    Authentication,   // the provider refused the credentials (HTTP 401/403), or none are configured
    RateLimited,      // HTTP 429 after every retry
    ContextLength,    // the request does not fit the model's context window
    BadRequest,       // the provider rejected the request (HTTP 4xx)
    ServerError,      // HTTP 5xx after every retry
    Network,          // connection refused, reset, dropped mid-stream, host not found
    Timeout,          // no answer within the timeout
    MalformedReply,   // the reply is not what the protocol promises (bad JSON, an HTML page, no JSON object)
    Cancelled,
    GuardrailFailed, // a task's output still failed a guardrail (or its output schema) after every retry
    Internal,
};

// The one exception type Mneme throws. what() is a complete sentence that says what went wrong
// and, where there is one, what to do about it. It never contains secrets. It is a QException, so
// it crosses QtConcurrent and QFuture with its type intact: future.result() rethrows an Error.
class MNEME_CORE_EXPORT Error : public QException
{
public:
    Error(ErrorKind kind, const QString &message);
    // A provider error: the HTTP status (0 when there was no reply) travels with it.
    Error(ErrorKind kind, const QString &message, int httpStatus);

    const char *what() const noexcept override { return m_message.c_str(); }
    void raise() const override { throw *this; }
    Error *clone() const override { return new Error(*this); }

    ErrorKind kind() const noexcept { return m_kind; }
    QString message() const { return QString::fromUtf8(what()); }
    int httpStatus() const noexcept { return m_httpStatus; }
    // True for the kinds a provider or the HTTP layer reports (Provider .. MalformedReply).
    bool isProviderError() const noexcept;

    // Stable lower-case name of a kind ("invalid_argument", "not_found", ...), used in JSON and events.
    static QString kindName(ErrorKind kind);
    // Exit status of the CLI for this kind, as docs/cli.md defines it.
    int exitCode() const noexcept;

    // `text` in double quotes for a message, as much of it as `maxChars` characters allow: a longer
    // one is cut, with its length after it ("\"/aaa...\" (120000 characters)"). Messages quote what
    // they were given through this, so that no input makes them long.
    static QString quoted(const QString &text, qsizetype maxChars = 80);

private:
    ErrorKind m_kind;
    std::string m_message;
    int m_httpStatus = 0;
};

} // namespace mneme
