#include <mneme/core/custom_embedder.h>

#include <mneme/core/error.h>

#include <QMutex>
#include <QMutexLocker>
#include <map>

namespace mneme {

namespace {

struct Registered
{
    EmbeddingCallable callable;
    int dimension = 0;
};

QMutex &registryMutex()
{
    static QMutex m;
    return m;
}

std::map<QString, Registered> &callables()
{
    static std::map<QString, Registered> m;
    return m;
}

class CallableEmbedder : public Embedder
{
public:
    CallableEmbedder(QString name, Registered r)
        : m_name(std::move(name)), m_callable(std::move(r.callable)), m_dimension(r.dimension)
    {
    }

    QString id() const override { return QStringLiteral("custom/") + m_name; }

    int dimension() const override
    {
        {
            QMutexLocker lock(&m_mutex);
            if (m_dimension > 0)
                return m_dimension;
        }
        const std::vector<Embedding> probe = call({QStringLiteral("dimension probe")});
        QMutexLocker lock(&m_mutex);
        if (m_dimension <= 0)
            m_dimension = int(probe.front().size());
        return m_dimension;
    }

    std::vector<Embedding> embed(const QStringList &texts) override
    {
        std::vector<Embedding> out(texts.size());
        QStringList asked;
        std::vector<int> slots;
        for (int i = 0; i < texts.size(); ++i) {
            if (!texts[i].trimmed().isEmpty()) {
                asked << texts[i];
                slots.push_back(i);
            }
        }
        if (asked.isEmpty())
            return out;
        std::vector<Embedding> vectors = call(asked);
        const int d = dimension();
        for (size_t i = 0; i < vectors.size(); ++i) {
            if (int(vectors[i].size()) != d)
                throw Error(ErrorKind::Embedder,
                            QStringLiteral("The custom embedder \"%1\" returned a vector of %2 dimensions where %3 "
                                           "were expected; every vector must have the same length.")
                                .arg(m_name)
                                .arg(vectors[i].size())
                                .arg(d));
            out[slots[i]] = std::move(vectors[i]);
        }
        return out;
    }

private:
    std::vector<Embedding> call(const QStringList &texts) const
    {
        std::vector<Embedding> vectors;
        try {
            vectors = m_callable(texts);
        } catch (const Error &) {
            throw;
        } catch (const std::exception &e) {
            throw Error(ErrorKind::Embedder, QStringLiteral("The custom embedder \"%1\" failed: %2").arg(m_name, QString::fromUtf8(e.what())));
        }
        if (vectors.size() != size_t(texts.size()))
            throw Error(ErrorKind::Embedder,
                        QStringLiteral("The custom embedder \"%1\" returned %2 vectors for %3 texts; it must return one per text.")
                            .arg(m_name)
                            .arg(vectors.size())
                            .arg(texts.size()));
        for (const Embedding &v : vectors) {
            if (v.empty())
                throw Error(ErrorKind::Embedder, QStringLiteral("The custom embedder \"%1\" returned an empty vector.").arg(m_name));
        }
        return vectors;
    }

    QString m_name;
    EmbeddingCallable m_callable;
    mutable QMutex m_mutex;
    mutable int m_dimension;
};

} // namespace

void registerEmbeddingCallable(const QString &name, EmbeddingCallable callable, int dimension)
{
    if (name.trimmed().isEmpty() || !callable)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("registerEmbeddingCallable needs a name and a callable."));
    QMutexLocker lock(&registryMutex());
    callables()[name.trimmed()] = Registered{std::move(callable), qMax(0, dimension)};
}

void unregisterEmbeddingCallable(const QString &name)
{
    QMutexLocker lock(&registryMutex());
    callables().erase(name.trimmed());
}

std::unique_ptr<Embedder> CustomEmbedderFactory::createEmbedder(const QString &, const Json &config)
{
    QString name = QStringLiteral("default");
    for (auto it = config.begin(); it != config.end(); ++it) {
        if (it.key() != "embedding_callable" && it.key() != "name")
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The custom embedder's config key \"%1\" is not known; it takes \"embedding_callable\" "
                                       "(the name given to registerEmbeddingCallable).")
                            .arg(QString::fromStdString(it.key())));
        if (!it.value().is_string())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The custom embedder's \"%1\" must be a string.").arg(QString::fromStdString(it.key())));
        name = QString::fromStdString(it.value().get<std::string>()).trimmed();
    }
    QMutexLocker lock(&registryMutex());
    const auto it = callables().find(name);
    if (it == callables().end()) {
        QStringList known;
        for (const auto &[n, r] : callables())
            known << n;
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("No embedding callable is registered as \"%1\"; call mneme::registerEmbeddingCallable(\"%1\", "
                                   "...) before creating the Memory%2.")
                        .arg(name, known.isEmpty() ? QString() : QStringLiteral(" (registered: %1)").arg(known.join(QStringLiteral(", ")))));
    }
    return std::make_unique<CallableEmbedder>(name, it->second);
}

} // namespace mneme
