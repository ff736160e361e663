#include <mneme/core/http_embedder.h>

#include <mneme/core/error.h>

#include <QMutexLocker>
#include <cmath>
#include <map>

namespace mneme {

int knownEmbeddingDimension(const QString &modelIn)
{
    static const std::map<QString, int> known = {
        {QStringLiteral("text-embedding-3-small"), 1536},
        {QStringLiteral("text-embedding-3-large"), 3072},
        {QStringLiteral("text-embedding-ada-002"), 1536},
        {QStringLiteral("mxbai-embed-large"), 1024},
        {QStringLiteral("nomic-embed-text"), 768},
        {QStringLiteral("all-minilm"), 384},
        {QStringLiteral("all-minilm-l6-v2"), 384},
        {QStringLiteral("snowflake-arctic-embed"), 1024},
        {QStringLiteral("bge-m3"), 1024},
        {QStringLiteral("gemini-embedding-001"), 3072},
        {QStringLiteral("text-embedding-004"), 768},
        {QStringLiteral("embedding-001"), 768},
        {QStringLiteral("embed-english-v3.0"), 1024},
        {QStringLiteral("embed-multilingual-v3.0"), 1024},
        {QStringLiteral("embed-english-light-v3.0"), 384},
        {QStringLiteral("embed-multilingual-light-v3.0"), 384},
        {QStringLiteral("voyage-3"), 1024},
        {QStringLiteral("voyage-3-lite"), 512},
        {QStringLiteral("voyage-3-large"), 1024},
        {QStringLiteral("voyage-code-3"), 1024},
        {QStringLiteral("jina-embeddings-v2-base-en"), 768},
        {QStringLiteral("jina-embeddings-v2-small-en"), 512},
        {QStringLiteral("jina-embeddings-v3"), 1024},
        {QStringLiteral("sentence-transformers/all-minilm-l6-v2"), 384},
        {QStringLiteral("sentence-transformers/all-mpnet-base-v2"), 768},
        {QStringLiteral("baai/bge-small-en-v1.5"), 384},
        {QStringLiteral("baai/bge-base-en-v1.5"), 768},
        {QStringLiteral("baai/bge-large-en-v1.5"), 1024},
    };
    QString model = modelIn.toLower();
    if (model.startsWith(QLatin1String("models/")))
        model = model.mid(7);
    if (model.endsWith(QLatin1String(":latest"))) // Ollama's default tag; other tags may differ in size
        model.chop(7);
    const auto it = known.find(model);
    return it == known.end() ? 0 : it->second;
}

HttpEmbedder::HttpEmbedder(ProviderSettings settings, ProviderDefaults defaults, int maxBatch)
    : m_settings(std::move(settings)), m_defaults(std::move(defaults)), m_maxBatch(qMax(1, maxBatch)), m_client(std::make_unique<HttpClient>(m_settings.http))
{
    if (m_settings.model.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder needs a model: set \"model\" (or \"model_name\") in its config.")
                        .arg(m_settings.provider));
}

HttpEmbedder::~HttpEmbedder() = default;

QString HttpEmbedder::id() const
{
    return m_settings.provider + QLatin1Char('/') + m_settings.model;
}

QString HttpEmbedder::context() const
{
    return QStringLiteral("%1 embed (%2)").arg(m_settings.provider, m_settings.model);
}

int HttpEmbedder::knownDimension() const
{
    for (const char *key : {"dimensions", "dimension", "output_dimensionality", "output_dimension"}) {
        if (m_settings.config.contains(key)) {
            const int d = m_settings.integer(key, 0);
            if (d < 1 || d > 65536)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("The %1 embedder's \"%2\" must be between 1 and 65536.")
                                .arg(m_settings.provider, QString::fromLatin1(key)));
            return d;
        }
    }
    return knownEmbeddingDimension(m_settings.model);
}

int HttpEmbedder::dimension() const
{
    {
        QMutexLocker lock(&m_mutex);
        if (m_dimension > 0)
            return m_dimension;
    }
    int d = knownDimension();
    if (d <= 0) {
        // Unknown model: one probe request tells.
        auto *self = const_cast<HttpEmbedder *>(this);
        const std::vector<Embedding> probe = self->embedBatch({QStringLiteral("dimension probe")});
        d = probe.empty() ? 0 : int(probe.front().size());
    }
    QMutexLocker lock(&m_mutex);
    if (m_dimension <= 0)
        m_dimension = d;
    return m_dimension;
}

std::vector<Embedding> HttpEmbedder::embed(const QStringList &texts)
{
    std::vector<Embedding> out(texts.size());
    QStringList batch;
    std::vector<int> slots;
    const auto flush = [&] {
        if (batch.isEmpty())
            return;
        std::vector<Embedding> vectors = embedBatch(batch);
        for (size_t i = 0; i < vectors.size(); ++i)
            out[slots[i]] = std::move(vectors[i]);
        batch.clear();
        slots.clear();
    };
    for (int i = 0; i < texts.size(); ++i) {
        if (texts[i].trimmed().isEmpty())
            continue;
        batch << texts[i];
        slots.push_back(i);
        if (batch.size() >= m_maxBatch)
            flush();
    }
    flush();
    return out;
}

std::vector<Embedding> HttpEmbedder::embedBatch(const QStringList &texts)
{
    if (HttpClient::isNetworkThread())
        throw Error(ErrorKind::Internal,
                    QStringLiteral("%1 was called on the network thread (from a continuation of a provider's future), where "
                                   "waiting for the reply would wait forever; attach the continuation with a context object "
                                   "or QtFuture::Launch::Async.")
                        .arg(context()));
    m_settings.requireApiKey(m_defaults);
    HttpRequest request = buildRequest(texts);
    if (request.what.isEmpty())
        request.what = context();
    const HttpResponse response = m_client->send(std::move(request)).result();
    const Json body = parseJsonOrDiscarded(std::string_view(response.body.constData(), std::size_t(response.body.size())));
    if (body.is_discarded())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply is not JSON: %2")
                        .arg(context(), HttpClient::redact(HttpClient::providerMessage(response.body).left(200), m_settings.http.secrets)),
                    response.status);
    std::vector<Embedding> vectors;
    try {
        vectors = parseResponse(body, int(texts.size()));
    } catch (const Error &) {
        throw;
    } catch (const std::exception &e) {
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply does not have the expected shape (%2).").arg(context(), QString::fromUtf8(e.what())));
    }
    if (int(vectors.size()) != texts.size())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: asked for %2 vectors, got %3.").arg(context()).arg(texts.size()).arg(vectors.size()));
    QMutexLocker lock(&m_mutex);
    int expected = m_dimension > 0 ? m_dimension : knownDimension();
    if (expected <= 0)
        expected = int(vectors.front().size()); // unknown model: the first reply tells
    for (const Embedding &v : vectors) {
        if (int(v.size()) != expected)
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: a vector has %2 dimensions where %3 were expected; set \"dimensions\" in "
                                       "the embedder's config to the model's real size.")
                            .arg(context())
                            .arg(v.size())
                            .arg(expected));
    }
    m_dimension = expected;
    return vectors;
}

std::vector<Embedding> HttpEmbedder::vectors(const Json &arrays, int expected) const
{
    if (!arrays.is_array())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: the reply holds no list of vectors.").arg(context()));
    std::vector<Embedding> out;
    out.reserve(arrays.size());
    for (const Json &a : arrays) {
        if (!a.is_array() || a.empty())
            throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: a vector in the reply is not a list of numbers.").arg(context()));
        Embedding v;
        v.reserve(a.size());
        for (const Json &x : a) {
            if (!x.is_number())
                throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: a vector holds a value that is not a number.").arg(context()));
            const double d = x.get<double>();
            if (!std::isfinite(d))
                throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: a vector holds a value that is not finite.").arg(context()));
            v.push_back(float(d));
        }
        out.push_back(std::move(v));
    }
    if (expected >= 0 && int(out.size()) != expected)
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: asked for %2 vectors, got %3.").arg(context()).arg(expected).arg(out.size()));
    return out;
}

} // namespace mneme
