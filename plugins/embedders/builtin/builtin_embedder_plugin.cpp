#include "builtin_embedder_plugin.h"

#include "hash_embedder.h"

#include <mneme/core/error.h>

#include <cmath>

namespace mneme {

namespace {

const QString kKey = QStringLiteral("builtin");

// A short rendering of a JSON value for an error message.
QString shown(const Json &value)
{
    QString text = QString::fromStdString(value.dump());
    if (text.size() > 60)
        text = text.left(57) + QStringLiteral("...");
    return text;
}

int parseDimension(const Json &value)
{
    const QString accepted = QStringLiteral("an integer from %1 to %2 (default %3)")
                                 .arg(HashEmbedder::MinDimension)
                                 .arg(HashEmbedder::MaxDimension)
                                 .arg(HashEmbedder::DefaultDimension);
    bool ok = false;
    long long dimension = 0;
    if (value.is_number_unsigned()) {
        const auto v = value.get<unsigned long long>();
        ok = v <= static_cast<unsigned long long>(HashEmbedder::MaxDimension);
        dimension = static_cast<long long>(ok ? v : 0);
    } else if (value.is_number_integer()) {
        dimension = value.get<long long>();
        ok = true;
    } else if (value.is_number_float()) {
        const double d = value.get<double>();
        ok = std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 1e6;
        dimension = ok ? static_cast<long long>(d) : 0;
    }
    if (!ok || dimension < HashEmbedder::MinDimension || dimension > HashEmbedder::MaxDimension)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the builtin embedder's \"dimension\" must be %1, not %2.").arg(accepted, shown(value)));
    return static_cast<int>(dimension);
}

// "the models "hash-v2" (the default) and "hash-v1""
QString supportedModels()
{
    const QStringList names = HashEmbedder::modelNames();
    QStringList quoted;
    for (qsizetype i = 0; i < names.size(); ++i)
        quoted << QStringLiteral("\"%1\"").arg(names[i]) + (i == 0 ? QStringLiteral(" (the default)") : QString());
    return QStringLiteral("the models ") + quoted.join(QStringLiteral(" and "));
}

HashEmbedder::Model parseModel(const QString &key, const Json &value)
{
    if (value.is_null())
        return HashEmbedder::DefaultModel; // same as leaving it out
    const QString supported = QStringLiteral("the builtin embedder supports %1 (or leave \"%2\" out)")
                                  .arg(supportedModels(), key);
    if (!value.is_string())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the builtin embedder's \"%1\" must be a string, not %2; %3.").arg(key, shown(value), supported));
    const QString name = QString::fromStdString(value.get<std::string>());
    HashEmbedder::Model model = HashEmbedder::DefaultModel;
    if (!HashEmbedder::modelFromName(name, &model))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("unknown model \"%1\" in the builtin embedder's \"%2\"; %3.").arg(name, key, supported));
    return model;
}

} // namespace

BuiltinEmbedderPlugin::BuiltinEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> BuiltinEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    if (key != kKey)
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("the builtin embedder plugin answers to the key \"builtin\", not \"%1\".").arg(key));
    if (!config.is_null() && !config.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the builtin embedder's configuration must be a JSON object, not %1.").arg(shown(config)));

    int dimension = HashEmbedder::DefaultDimension;
    HashEmbedder::Model model = HashEmbedder::DefaultModel;
    QString modelKey; // which of "model" / "model_name" set it
    if (config.is_object()) {
        for (auto it = config.begin(); it != config.end(); ++it) {
            const QString name = QString::fromStdString(it.key());
            if (name == QLatin1String("dimension"))
                dimension = parseDimension(it.value());
            else if (name == QLatin1String("model") || name == QLatin1String("model_name")) {
                const HashEmbedder::Model m = parseModel(name, it.value());
                if (it.value().is_null())
                    continue; // same as leaving it out
                if (!modelKey.isEmpty() && m != model)
                    throw Error(ErrorKind::InvalidArgument,
                                QStringLiteral("the builtin embedder's \"%1\" and \"%2\" name different models; give one.")
                                    .arg(modelKey, name));
                model = m;
                modelKey = name;
            } else
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("unknown configuration key \"%1\" for the builtin embedder; "
                                           "accepted keys: dimension (%2 to %3), model or model_name (%4).")
                                .arg(name)
                                .arg(HashEmbedder::MinDimension)
                                .arg(HashEmbedder::MaxDimension)
                                .arg(supportedModels()));
        }
    }
    return std::make_unique<HashEmbedder>(dimension, model);
}

} // namespace mneme
