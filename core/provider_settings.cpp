#include <mneme/core/provider_settings.h>

#include <mneme/core/error.h>

#include <cmath>

namespace mneme {

namespace {

const QStringList &commonKeys()
{
    static const QStringList keys = {
        QStringLiteral("model"),
        QStringLiteral("model_name"),
        QStringLiteral("model_id"),
        QStringLiteral("base_url"),
        QStringLiteral("api_base"),
        QStringLiteral("url"),
        QStringLiteral("host"),
        QStringLiteral("api_key"),
        QStringLiteral("timeout"),
        QStringLiteral("max_retries"),
        QStringLiteral("max_rpm"),
        QStringLiteral("proxy"),
        QStringLiteral("temperature"),
        QStringLiteral("max_tokens"),
    };
    return keys;
}

[[noreturn]] void bad(const QString &provider, const QString &key, const QString &what)
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("The %1 provider's config key \"%2\" %3.").arg(provider, key, what));
}

QString stringOf(const QString &provider, const Json &config, const char *key)
{
    if (!config.contains(key) || config[key].is_null())
        return {};
    if (!config[key].is_string())
        bad(provider, QString::fromLatin1(key), QStringLiteral("must be a string"));
    return QString::fromStdString(config[key].get<std::string>()).trimmed();
}

double numberOf(const QString &provider, const Json &config, const char *key, double lo, double hi)
{
    const Json &v = config[key];
    if (!v.is_number())
        bad(provider, QString::fromLatin1(key), QStringLiteral("must be a number"));
    const double d = v.get<double>();
    if (!(d >= lo && d <= hi))
        bad(provider, QString::fromLatin1(key), QStringLiteral("must be between %1 and %2 (got %3)").arg(lo).arg(hi).arg(d));
    return d;
}

QUrl baseUrlOf(const QString &provider, const QString &text, const QString &key)
{
    QString t = text;
    while (t.endsWith(QLatin1Char('/')))
        t.chop(1);
    if (!t.contains(QLatin1String("://")))
        t = QStringLiteral("http://") + t; // OLLAMA_HOST is often written as host:port
    const QUrl url(t, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")))
        bad(provider, key, QStringLiteral("is not an http(s) URL (got \"%1\")").arg(url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery)));
    return url;
}

} // namespace

ProviderSettings ProviderSettings::read(const Json &configIn, const ProviderDefaults &defaults)
{
    const QString &provider = defaults.provider;
    const Json config = configIn.is_null() ? Json::object() : configIn;
    if (!config.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 provider's config must be a JSON object.").arg(provider));
    for (auto it = config.begin(); it != config.end(); ++it) {
        const QString key = QString::fromStdString(it.key());
        if (!commonKeys().contains(key) && !defaults.extraKeys.contains(key)) {
            QStringList accepted = commonKeys() + defaults.extraKeys;
            accepted.sort();
            bad(provider, key, QStringLiteral("is not known; it accepts %1").arg(accepted.join(QStringLiteral(", "))));
        }
    }

    ProviderSettings s;
    s.provider = provider;
    s.config = config;
    for (const char *key : {"model", "model_name", "model_id"}) {
        const QString m = stringOf(provider, config, key);
        if (!m.isEmpty()) {
            s.model = m;
            break;
        }
    }
    if (s.model.isEmpty())
        s.model = defaults.defaultModel;

    QString base;
    QString baseKey;
    for (const char *key : {"base_url", "api_base", "url", "host"}) {
        base = stringOf(provider, config, key);
        if (!base.isEmpty()) {
            baseKey = QString::fromLatin1(key);
            break;
        }
    }
    if (base.isEmpty()) {
        for (const QString &env : defaults.baseUrlEnv) {
            base = qEnvironmentVariable(env.toLatin1().constData()).trimmed();
            if (!base.isEmpty()) {
                baseKey = env;
                break;
            }
        }
    }
    if (base.isEmpty()) {
        s.baseUrl = baseUrlOf(provider, defaults.defaultBaseUrl, QStringLiteral("base_url"));
        s.baseUrlIsDefault = true;
    } else {
        s.baseUrl = baseUrlOf(provider, base, baseKey);
        s.baseUrlIsDefault = false;
    }

    s.apiKey = stringOf(provider, config, "api_key");
    if (!s.apiKey.isEmpty()) {
        s.apiKeySource = QStringLiteral("config");
    } else {
        for (const QString &env : defaults.apiKeyEnv) {
            s.apiKey = qEnvironmentVariable(env.toLatin1().constData()).trimmed();
            if (!s.apiKey.isEmpty()) {
                s.apiKeySource = env;
                break;
            }
        }
    }
    if (!s.apiKey.isEmpty())
        s.http.secrets << s.apiKey;

    s.http.timeoutMs = defaults.defaultTimeoutMs;
    if (config.contains("timeout"))
        s.http.timeoutMs = int(std::lround(numberOf(provider, config, "timeout", 0.05, 86400) * 1000));
    const auto wholeNumber = [&](const char *key, int lo, int hi) {
        const double d = numberOf(provider, config, key, lo, hi);
        if (d != std::floor(d))
            bad(provider, QString::fromLatin1(key), QStringLiteral("must be a whole number (got %1)").arg(d));
        return int(d);
    };
    if (config.contains("max_retries"))
        s.http.maxRetries = wholeNumber("max_retries", 0, 20);
    if (config.contains("max_rpm"))
        s.http.maxRpm = wholeNumber("max_rpm", 0, 1000000);
    s.http.proxy = stringOf(provider, config, "proxy");
    const QUrl proxyUrl(s.http.proxy.contains(QLatin1String("://")) ? s.http.proxy : QStringLiteral("http://") + s.http.proxy);
    if (!proxyUrl.password().isEmpty())
        s.http.secrets << proxyUrl.password() << s.http.proxy;
    if (config.contains("temperature") && !config["temperature"].is_null())
        s.temperature = numberOf(provider, config, "temperature", 0, 2);
    if (config.contains("max_tokens") && !config["max_tokens"].is_null())
        s.maxTokens = int(numberOf(provider, config, "max_tokens", 1, 1e7));
    return s;
}

void ProviderSettings::requireApiKey(const ProviderDefaults &defaults) const
{
    if (!apiKey.isEmpty() || !defaults.apiKeyRequired || (!baseUrlIsDefault && !defaults.apiKeyAlwaysRequired))
        return;
    QString where = QStringLiteral("set \"api_key\" in its config");
    if (!defaults.apiKeyEnv.isEmpty())
        where += QStringLiteral(" or the environment variable %1").arg(defaults.apiKeyEnv.join(QStringLiteral(" / ")));
    throw Error(ErrorKind::Authentication,
                QStringLiteral("The %1 provider has no API key: %2.").arg(provider, where));
}

QUrl ProviderSettings::endpoint(const QString &path) const
{
    QUrl url = baseUrl;
    QString p = url.path();
    while (p.endsWith(QLatin1Char('/')))
        p.chop(1);
    url.setPath(p + (path.startsWith(QLatin1Char('/')) ? path : QLatin1Char('/') + path));
    return url;
}

QString ProviderSettings::string(const char *key, const QString &fallback) const
{
    const QString v = stringOf(provider, config, key);
    return v.isEmpty() ? fallback : v;
}

int ProviderSettings::integer(const char *key, int fallback) const
{
    if (!config.contains(key) || config[key].is_null())
        return fallback;
    if (!config[key].is_number_integer())
        bad(provider, QString::fromLatin1(key), QStringLiteral("must be a whole number"));
    return config[key].get<int>();
}

// ---------------------------------------------------------------------------------------------

namespace {

QString textOf(const Json &spec, const char *what)
{
    if (!spec.is_string())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 must be a model string or an object with \"provider\" and \"config\".").arg(QLatin1String(what)));
    return QString::fromStdString(spec.get<std::string>()).trimmed();
}

ProviderSpec fromObject(const Json &spec, const char *what)
{
    ProviderSpec s;
    if (!spec.contains("provider") || !spec["provider"].is_string())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 object needs a \"provider\" string (for example \"openai\").").arg(QLatin1String(what)));
    s.key = QString::fromStdString(spec["provider"].get<std::string>()).trimmed().toLower();
    if (spec.contains("config")) {
        if (!spec["config"].is_object())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The %1's \"config\" must be an object.").arg(QLatin1String(what)));
        s.config = spec["config"];
    }
    return s;
}

} // namespace

ProviderSpec ProviderSpec::llm(const Json &spec, const QStringList &knownKeys)
{
    if (spec.is_object())
        return fromObject(spec, "llm");
    const QString text = textOf(spec, "llm");
    if (text.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("The llm model string is empty; write e.g. \"gpt-4o-mini\" or \"ollama/llama3.2\"."));
    ProviderSpec s;
    const qsizetype slash = text.indexOf(QLatin1Char('/'));
    const QString prefix = slash > 0 ? text.left(slash).toLower() : QString();
    if (slash > 0 && knownKeys.contains(prefix)) {
        s.key = prefix;
        const QString model = text.mid(slash + 1);
        if (prefix == QLatin1String("azure"))
            s.config["deployment_id"] = model.toStdString();
        else
            s.config["model"] = model.toStdString();
    } else if (slash < 0 && knownKeys.contains(text.toLower())) {
        s.key = text.toLower(); // a bare key ("ollama", "replay"): the provider's default model
    } else {
        // Bare model names of the families whose providers are known route to them.
        s.key = QStringLiteral("openai");
        const QString lower = text.toLower();
        if (slash < 0 && lower.startsWith(QLatin1String("claude-")) && knownKeys.contains(QLatin1String("anthropic")))
            s.key = QStringLiteral("anthropic");
        else if (slash < 0 && lower.startsWith(QLatin1String("gemini-")) && knownKeys.contains(QLatin1String("gemini")))
            s.key = QStringLiteral("gemini");
        s.config["model"] = text.toStdString();
    }
    return s;
}

ProviderSpec ProviderSpec::embedder(const Json &spec)
{
    if (spec.is_null())
        return ProviderSpec{QStringLiteral("builtin"), Json::object()};
    if (spec.is_object()) {
        ProviderSpec s = fromObject(spec, "embedder");
        return s;
    }
    const QString text = textOf(spec, "embedder");
    ProviderSpec s;
    const qsizetype slash = text.indexOf(QLatin1Char('/'));
    if (slash > 0) {
        s.key = text.left(slash).toLower();
        s.config["model"] = text.mid(slash + 1).toStdString();
    } else {
        s.key = text.toLower();
    }
    return s;
}

} // namespace mneme
