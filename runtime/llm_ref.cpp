#include <mneme/runtime/llm_ref.h>

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>

#include <QMutex>

namespace mneme {

struct LlmRef::State
{
    QMutex mutex;
    Json spec;
    std::shared_ptr<LlmProvider> provider;
};

LlmRef::LlmRef(std::shared_ptr<LlmProvider> provider)
{
    if (!provider)
        return;
    d = std::make_shared<State>();
    d->provider = std::move(provider);
}

LlmRef::LlmRef(const char *model) : LlmRef(QString::fromUtf8(model)) {}

LlmRef::LlmRef(const QString &model)
{
    if (model.trimmed().isEmpty())
        return;
    d = std::make_shared<State>();
    d->spec = model.trimmed();
}

LlmRef::LlmRef(const Json &spec)
{
    if (spec.is_null())
        return;
    if (!spec.is_string() && !spec.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("An LLM is named by a model string (\"gpt-4o-mini\", \"ollama/llama3.2\") or an "
                                   "object {\"provider\": ..., \"config\": {...}}, not %1.")
                        .arg(QString::fromStdString(spec.type_name())));
    d = std::make_shared<State>();
    d->spec = spec;
}

std::shared_ptr<LlmProvider> LlmRef::resolve() const
{
    if (!d)
        return nullptr;
    QMutexLocker lock(&d->mutex);
    if (!d->provider) {
        PluginRegistry &registry = PluginRegistry::instance();
        const ProviderSpec p = ProviderSpec::llm(d->spec, registry.keys(PluginRegistry::Kind::Llm));
        d->provider = registry.createLlm(p.key, p.config);
    }
    return d->provider;
}

QString LlmRef::describe() const
{
    if (!d)
        return QStringLiteral("(none)");
    QMutexLocker lock(&d->mutex);
    if (d->provider)
        return d->provider->id();
    if (d->spec.is_string())
        return QString::fromStdString(d->spec.get<std::string>());
    const Json &cfg = d->spec.value("config", Json::object());
    QString text = QString::fromStdString(d->spec.value("provider", std::string("?")));
    if (cfg.is_object() && cfg.contains("model") && cfg["model"].is_string())
        text += QLatin1Char('/') + QString::fromStdString(cfg["model"].get<std::string>());
    return text;
}

} // namespace mneme
