#pragma once

// Small helpers shared by the network embedder plugins (openai, ollama, gemini, cohere, voyageai,
// jina, huggingface). Header-only on purpose: every plugin stays a module that links mneme_core
// and nothing else.

#include <mneme/core/embedder.h>
#include <mneme/core/error.h>
#include <mneme/core/http_client.h>
#include <mneme/core/json.h>
#include <mneme/core/provider_settings.h>

#include <QString>
#include <QStringList>
#include <QUrl>
#include <initializer_list>
#include <optional>
#include <vector>

namespace mneme::embedders {

// The config's "max_batch": how many texts go into one request, 1..limit (default `fallback`).
inline int maxBatch(const ProviderSettings &s, int fallback, int limit)
{
    const int n = s.integer("max_batch", fallback);
    if (n < 1 || n > limit)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"max_batch\" must be between 1 and %2 (got %3).")
                        .arg(s.provider)
                        .arg(limit)
                        .arg(n));
    return n;
}

// The vector size the config asks for under the first of `keys` it holds; 0 when none is set.
inline int requestedDimension(const ProviderSettings &s, std::initializer_list<const char *> keys)
{
    for (const char *key : keys) {
        if (!s.config.contains(key) || s.config[key].is_null())
            continue;
        const int d = s.integer(key, 0);
        if (d < 1 || d > 65536)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The %1 embedder's \"%2\" must be between 1 and 65536 (got %3).")
                            .arg(s.provider, QString::fromLatin1(key))
                            .arg(d));
        return d;
    }
    return 0;
}

// A boolean of the provider's own keys; throws InvalidArgument naming the key for another type.
inline std::optional<bool> flag(const ProviderSettings &s, const char *key)
{
    if (!s.config.contains(key) || s.config[key].is_null())
        return std::nullopt;
    if (!s.config[key].is_boolean())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"%2\" must be true or false.")
                        .arg(s.provider, QString::fromLatin1(key)));
    return s.config[key].get<bool>();
}

// A 200 reply that carries an error object instead of vectors (some OpenAI-compatible servers do
// that): Error(Provider) with the server's own message, secrets redacted.
inline void throwIfErrorBody(const Json &body, const QString &context, const QStringList &secrets)
{
    if (!body.is_object() || !body.contains("error") || body["error"].is_null())
        return;
    const QString message = HttpClient::redact(HttpClient::providerMessage(QByteArray::fromStdString(body.dump())), secrets);
    throw Error(ErrorKind::Provider, QStringLiteral("%1 failed: the server answered with an error: %2").arg(context, message));
}

// OpenAI-style {"data": [{"index": i, "embedding": [...]}, ...]}: the embedding arrays in index
// order (entries without an index keep their position). Throws MalformedReply for a missing,
// repeated or out-of-range index.
inline Json embeddingsByIndex(const Json &body, int expected, const QString &context)
{
    if (!body.is_object() || !body.contains("data") || !body["data"].is_array())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: the reply has no \"data\" list.").arg(context));
    const Json &data = body["data"];
    if (int(data.size()) != expected)
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: asked for %2 vectors, got %3.").arg(context).arg(expected).arg(data.size()));
    Json ordered = Json::array();
    std::vector<bool> seen(data.size(), false);
    for (size_t i = 0; i < data.size(); ++i)
        ordered.push_back(nullptr);
    for (size_t i = 0; i < data.size(); ++i) {
        const Json &item = data[i];
        if (!item.is_object() || !item.contains("embedding"))
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: entry %2 of the reply's \"data\" has no \"embedding\".").arg(context).arg(i));
        size_t slot = i;
        if (item.contains("index") && !item["index"].is_null()) {
            if (!item["index"].is_number_integer() || item["index"].get<long long>() < 0
                || item["index"].get<long long>() >= (long long)data.size())
                throw Error(ErrorKind::MalformedReply,
                            QStringLiteral("%1: entry %2 of the reply's \"data\" has an index outside 0..%3.")
                                .arg(context)
                                .arg(i)
                                .arg(data.size() - 1));
            slot = size_t(item["index"].get<long long>());
        }
        if (seen[slot])
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: the reply's \"data\" holds index %2 twice.").arg(context).arg(slot));
        seen[slot] = true;
        ordered[slot] = item["embedding"];
    }
    return ordered;
}

// The URL with one of `suffixes` removed from the end of its path (case-insensitive), e.g. an
// Ollama "url" written as http://localhost:11434/api/embeddings.
inline QUrl withoutPathSuffix(QUrl url, const QStringList &suffixes)
{
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    for (const QString &suffix : suffixes) {
        if (path.endsWith(suffix, Qt::CaseInsensitive)) {
            path.chop(suffix.size());
            break;
        }
    }
    url.setPath(path);
    return url;
}

// True when the base URL's path already ends with this segment ("/v1"), so it is not added again.
inline bool pathEndsWith(const QUrl &url, const QString &segment)
{
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    return path.endsWith(segment, Qt::CaseInsensitive);
}

// Compact JSON bytes for a request body.
inline QByteArray bodyOf(const Json &json)
{
    return QByteArray::fromStdString(json.dump());
}

// A JSON array of the texts.
inline Json textArray(const QStringList &texts)
{
    Json a = Json::array();
    for (const QString &t : texts)
        a.push_back(t.toStdString());
    return a;
}

} // namespace mneme::embedders
