#pragma once

#include <mneme/core/http_client.h>
#include <mneme/core/json.h>
#include <mneme/runtime/export.h>

#include <QMap>
#include <QString>
#include <QStringList>
#include <QUrl>
#include <vector>

namespace mneme {

// How to reach one MCP (Model Context Protocol) server whose tools an agent uses: a command Mneme
// starts and talks to over its standard input and output (stdio), or the URL of a server that speaks
// the streamable HTTP transport. Exactly one of `command` and `url` is set.
struct MNEME_RUNTIME_EXPORT McpServerConfig
{
    enum class Transport {
        Stdio,
        Http,
    };

    QString name; // required: names the server in errors, events and the console trace

    // stdio: the program and its arguments. The process gets a small environment (PATH, HOME, USER,
    // LOGNAME, SHELL, TERM, LANG, LC_ALL, TMPDIR) plus `env`, so API keys of this process do not reach
    // a server by accident; `inheritEnvironment` passes the whole environment instead.
    QString command;
    QStringList args;
    QMap<QString, QString> env;
    bool inheritEnvironment = false;
    QString workingDirectory; // empty: this process's

    // HTTP: the server's MCP endpoint ("http://127.0.0.1:3001/mcp") and headers sent with every
    // request (an Authorization token, ...). Header values never appear in errors or events.
    QUrl url;
    HttpHeaders headers;

    QString toolPrefix;           // put before each tool's name ("fs_" makes "read_file" "fs_read_file")
    QStringList tools;            // only these tools of the server, by their names on the server; empty: all
    int startupTimeoutMs = 30000; // starting the process, initialize and tools/list together
    int requestTimeoutMs = 60000; // one request (a tool call)

    Transport transport() const { return url.isEmpty() ? Transport::Stdio : Transport::Http; }
    // "stdio: npx with 3 arguments" or "http: http://host:3001/mcp", for messages: neither the
    // arguments nor the URL's query and credentials, which may hold secrets.
    QString describe() const;
    // Throws Error(InvalidArgument) naming the server and the field at fault.
    void validate() const;

    static McpServerConfig stdio(const QString &name, const QString &command, const QStringList &args = {});
    static McpServerConfig http(const QString &name, const QUrl &url);

    // One server from JSON, in the layout desktop MCP clients use:
    //   {"command": "npx", "args": ["-y", "pkg"], "env": {"KEY": "value"}, "cwd": "/dir"}
    //   {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    // plus Mneme's keys "type" ("stdio" or "http"), "inherit_env", "tool_prefix", "tools",
    // "startup_timeout_ms" and "request_timeout_ms". "${VAR}" in an env or header value is replaced by
    // this process's environment variable VAR, so secrets stay out of configuration files. Throws
    // Error(InvalidArgument) naming the server and the key.
    static McpServerConfig fromJson(const QString &name, const Json &json);
    // Several servers: {"mcpServers": {"name": {...}, ...}} (a desktop client's file), the object of
    // name -> server inside it, or an array of servers that each have a "name".
    static std::vector<McpServerConfig> listFromJson(const Json &json);
};

} // namespace mneme
