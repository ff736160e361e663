#pragma once

#include <mneme/core/error.h>
#include <mneme/core/llm_provider.h>

#include <QFuture>
#include <QString>
#include <optional>

namespace mneme::test {

// How a chat ended: a response, a mneme::Error, or something else (which fails the test through
// describe()). Waits for the future; a cancelled future without a result ends "otherwise".
struct Outcome
{
    std::optional<ChatResponse> response;
    std::optional<Error> error;
    QString other;

    QString describe() const
    {
        if (response)
            return QStringLiteral("succeeded: ") + QString::fromStdString(response->toJson().dump());
        if (error)
            return QStringLiteral("failed with %1 (HTTP %2): %3")
                .arg(Error::kindName(error->kind()))
                .arg(error->httpStatus())
                .arg(error->message());
        return QStringLiteral("ended otherwise: ") + (other.isEmpty() ? QStringLiteral("no result") : other);
    }
};

inline Outcome outcomeOf(QFuture<ChatResponse> future)
{
    Outcome o;
    try {
        future.waitForFinished();
        if (future.resultCount() > 0)
            o.response = future.result();
    } catch (const Error &e) {
        o.error = e;
    } catch (const std::exception &e) {
        o.other = QString::fromUtf8(e.what());
    } catch (...) {
        o.other = QStringLiteral("an unknown exception");
    }
    return o;
}

// A request of one user message.
inline ChatRequest ask(const QString &text)
{
    ChatRequest r;
    r.messages = {ChatMessage::user(text)};
    return r;
}

} // namespace mneme::test
