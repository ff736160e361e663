// A test embedder plugin that reports how often it was built.
#include <mneme/core/embedder.h>
#include <mneme/core/error.h>

#include <QObject>

namespace {

class ConstantEmbedder : public mneme::Embedder
{
public:
    explicit ConstantEmbedder(int dim) : m_dim(dim) {}
    QString id() const override { return QStringLiteral("test/constant"); }
    int dimension() const override { return m_dim; }
    std::vector<mneme::Embedding> embed(const QStringList &texts) override
    {
        return std::vector<mneme::Embedding>(size_t(texts.size()), mneme::Embedding(size_t(m_dim), 1.0f));
    }

private:
    int m_dim;
};

} // namespace

class GoodPlugin : public QObject, public mneme::EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.mneme.EmbedderFactory/1.1" FILE "good_plugin.json")
    Q_INTERFACES(mneme::EmbedderFactory)
public:
    std::unique_ptr<mneme::Embedder> createEmbedder(const QString &key, const mneme::Json &config) override
    {
        const int dim = config.value("dimension", 4);
        if (dim < 1)
            throw mneme::Error(mneme::ErrorKind::InvalidArgument, QStringLiteral("dimension must be positive"));
        return std::make_unique<ConstantEmbedder>(dim);
    }
};

#include "good_plugin.moc"
