#include <mneme/runtime/mcp_server_config.h>

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <QSet>

namespace mneme {

namespace {

QString serverLabel(const QString &name)
{
    return name.trimmed().isEmpty() ? QStringLiteral("An MCP server") : QStringLiteral("MCP server \"%1\"").arg(name);
}

[[noreturn]] void refuse(const QString &name, const QString &problem)
{
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1: %2").arg(serverLabel(name), problem));
}

// "${VAR}" replaced by the environment variable VAR; an unset variable is an error (a header or key
// silently left empty fails later, far from its cause).
QString expandVariables(const QString &value, const QString &name, const QString &key)
{
    static const QRegularExpression variable(QStringLiteral("\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}"));
    QString out;
    qsizetype last = 0;
    for (QRegularExpressionMatchIterator it = variable.globalMatch(value); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        const QByteArray var = m.captured(1).toUtf8();
        if (!qEnvironmentVariableIsSet(var.constData()))
            refuse(name, QStringLiteral("%1 uses ${%2}, but the environment variable %2 is not set")
                             .arg(key, m.captured(1)));
        out += value.mid(last, m.capturedStart() - last) + qEnvironmentVariable(var.constData());
        last = m.capturedEnd();
    }
    return out + value.mid(last);
}

QString stringOf(const Json &json, const char *key, const QString &name)
{
    const Json &v = json[key];
    if (!v.is_string())
        refuse(name, QStringLiteral("\"%1\" must be a string").arg(QLatin1String(key)));
    return QString::fromStdString(v.get<std::string>());
}

QStringList stringsOf(const Json &json, const char *key, const QString &name)
{
    const Json &v = json[key];
    if (!v.is_array())
        refuse(name, QStringLiteral("\"%1\" must be an array of strings").arg(QLatin1String(key)));
    QStringList out;
    for (const Json &e : v) {
        if (!e.is_string())
            refuse(name, QStringLiteral("\"%1\" must be an array of strings").arg(QLatin1String(key)));
        out << QString::fromStdString(e.get<std::string>());
    }
    return out;
}

// An object of string values, each with ${VAR} expanded.
QMap<QString, QString> stringMapOf(const Json &json, const char *key, const QString &name)
{
    const Json &v = json[key];
    if (!v.is_object())
        refuse(name, QStringLiteral("\"%1\" must be an object of strings").arg(QLatin1String(key)));
    QMap<QString, QString> out;
    for (auto it = v.begin(); it != v.end(); ++it) {
        const QString k = QString::fromStdString(it.key());
        if (!it->is_string())
            refuse(name, QStringLiteral("\"%1\".\"%2\" must be a string").arg(QLatin1String(key), k));
        out.insert(k, expandVariables(QString::fromStdString(it->get<std::string>()), name,
                                      QStringLiteral("\"%1\".\"%2\"").arg(QLatin1String(key), k)));
    }
    return out;
}

int timeoutOf(const Json &json, const char *key, const QString &name)
{
    const Json &v = json[key];
    if (!v.is_number_integer() || v.get<qint64>() < 1 || v.get<qint64>() > 3600000)
        refuse(name, QStringLiteral("\"%1\" must be a whole number of milliseconds from 1 to 3600000").arg(QLatin1String(key)));
    return int(v.get<qint64>());
}

} // namespace

QString McpServerConfig::describe() const
{
    if (transport() == Transport::Http)
        return QStringLiteral("http: ") + url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery | QUrl::RemoveFragment);
    // The arguments are counted, not shown: a server's arguments may hold a token.
    if (args.isEmpty())
        return QStringLiteral("stdio: ") + command;
    return QStringLiteral("stdio: %1 with %2 argument%3").arg(command).arg(args.size()).arg(args.size() == 1 ? "" : "s");
}

void McpServerConfig::validate() const
{
    static const QRegularExpression nameRe(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"));
    if (!nameRe.match(name).hasMatch())
        refuse(name, QStringLiteral("the name must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter "
                                    "or digit (got \"%1\")")
                         .arg(name));
    const bool hasCommand = !command.trimmed().isEmpty();
    const bool hasUrl = !url.isEmpty();
    if (hasCommand == hasUrl)
        refuse(name, hasCommand ? QStringLiteral("set either a command (stdio) or a url (HTTP), not both")
                                : QStringLiteral("set a command to start (stdio) or the url of its MCP endpoint (HTTP)"));
    if (hasUrl && (!url.isValid() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")) || url.host().isEmpty()))
        refuse(name, QStringLiteral("the url must be an http:// or https:// URL with a host, such as "
                                    "http://127.0.0.1:3001/mcp (got \"%1\")")
                         .arg(url.toString(QUrl::RemoveUserInfo)));
    if (startupTimeoutMs < 1 || requestTimeoutMs < 1)
        refuse(name, QStringLiteral("the startup and request timeouts must be positive numbers of milliseconds"));
    static const QRegularExpression prefixRe(QStringLiteral("^[A-Za-z0-9_-]{0,32}$"));
    if (!prefixRe.match(toolPrefix).hasMatch())
        refuse(name, QStringLiteral("the tool prefix may hold up to 32 letters, digits, '_' and '-' (got \"%1\")").arg(toolPrefix));
    for (auto it = env.cbegin(); it != env.cend(); ++it)
        if (it.key().isEmpty() || it.key().contains(QLatin1Char('=')) || it.key().contains(QChar(0)))
            refuse(name, QStringLiteral("\"%1\" is not a valid environment variable name").arg(it.key()));
}

McpServerConfig McpServerConfig::stdio(const QString &name, const QString &command, const QStringList &args)
{
    McpServerConfig c;
    c.name = name;
    c.command = command;
    c.args = args;
    return c;
}

McpServerConfig McpServerConfig::http(const QString &name, const QUrl &url)
{
    McpServerConfig c;
    c.name = name;
    c.url = url;
    return c;
}

McpServerConfig McpServerConfig::fromJson(const QString &name, const Json &json)
{
    if (!json.is_object())
        refuse(name, QStringLiteral("its configuration must be a JSON object with \"command\" (stdio) or \"url\" (HTTP)"));
    static const QSet<QString> known = {
        QStringLiteral("name"), QStringLiteral("type"), QStringLiteral("command"),
        QStringLiteral("args"), QStringLiteral("env"), QStringLiteral("cwd"),
        QStringLiteral("inherit_env"), QStringLiteral("url"), QStringLiteral("headers"),
        QStringLiteral("tool_prefix"), QStringLiteral("tools"), QStringLiteral("startup_timeout_ms"),
        QStringLiteral("request_timeout_ms")};
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!known.contains(QString::fromStdString(it.key())))
            refuse(name, QStringLiteral("unknown key \"%1\"; the keys are %2")
                             .arg(QString::fromStdString(it.key()), QStringList(known.values()).join(QStringLiteral(", "))));

    McpServerConfig c;
    c.name = name;
    if (json.contains("type")) {
        const QString type = stringOf(json, "type", name);
        if (type == QLatin1String("sse"))
            refuse(name, QStringLiteral("the HTTP+SSE transport of protocol version 2024-11-05 is not supported; give the "
                                        "url of the server's streamable HTTP endpoint with \"type\": \"http\""));
        const bool http = type == QLatin1String("http") || type == QLatin1String("streamable-http")
                       || type == QLatin1String("streamableHttp");
        if (!http && type != QLatin1String("stdio"))
            refuse(name, QStringLiteral("\"type\" must be \"stdio\" or \"http\" (got \"%1\")").arg(type));
        if (http != json.contains("url"))
            refuse(name, http ? QStringLiteral("\"type\": \"%1\" needs a \"url\"").arg(type)
                              : QStringLiteral("\"type\": \"stdio\" needs a \"command\", not a \"url\""));
    }
    if (json.contains("command"))
        c.command = stringOf(json, "command", name);
    if (json.contains("args"))
        c.args = stringsOf(json, "args", name);
    if (json.contains("env"))
        c.env = stringMapOf(json, "env", name);
    if (json.contains("cwd"))
        c.workingDirectory = stringOf(json, "cwd", name);
    if (json.contains("inherit_env")) {
        if (!json["inherit_env"].is_boolean())
            refuse(name, QStringLiteral("\"inherit_env\" must be true or false"));
        c.inheritEnvironment = json["inherit_env"].get<bool>();
    }
    if (json.contains("url"))
        c.url = QUrl(stringOf(json, "url", name), QUrl::StrictMode);
    if (json.contains("headers")) {
        const QMap<QString, QString> headers = stringMapOf(json, "headers", name);
        for (auto it = headers.cbegin(); it != headers.cend(); ++it)
            c.headers.append({it.key().toUtf8(), it.value().toUtf8()});
    }
    if (json.contains("tool_prefix"))
        c.toolPrefix = stringOf(json, "tool_prefix", name);
    if (json.contains("tools"))
        c.tools = stringsOf(json, "tools", name);
    if (json.contains("startup_timeout_ms"))
        c.startupTimeoutMs = timeoutOf(json, "startup_timeout_ms", name);
    if (json.contains("request_timeout_ms"))
        c.requestTimeoutMs = timeoutOf(json, "request_timeout_ms", name);
    c.validate();
    return c;
}

std::vector<McpServerConfig> McpServerConfig::listFromJson(const Json &json)
{
    std::vector<McpServerConfig> out;
    if (json.is_array()) {
        for (const Json &server : json) {
            if (!server.is_object() || !server.contains("name") || !server["name"].is_string())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("each MCP server of the list needs a \"name\" string beside its \"command\" or \"url\""));
            out.push_back(fromJson(QString::fromStdString(server["name"].get<std::string>()), server));
        }
        return out;
    }
    if (!json.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("MCP servers are configured as {\"mcpServers\": {\"name\": {\"command\": ...}}}, an "
                                   "object of name -> server, or an array of servers with names"));
    const Json &servers = json.contains("mcpServers") ? json["mcpServers"] : json;
    if (!servers.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("\"mcpServers\" must be an object of name -> server"));
    for (auto it = servers.begin(); it != servers.end(); ++it)
        out.push_back(fromJson(QString::fromStdString(it.key()), it.value()));
    return out;
}

} // namespace mneme
