#pragma once

#include <mneme/core/json.h>
#include <mneme/core/tool.h>
#include <mneme/runtime/export.h>

#include <QFuture>
#include <QString>
#include <functional>

namespace mneme {

// A Tool made from a C++ callable. The arguments are checked against the schema before the callable
// runs; arguments that do not conform fail the future with Error(InvalidArgument) listing the problems,
// which the agent loop hands back to the model so it can correct the call.
//
// A synchronous callable runs on the global thread pool, so a slow one never blocks the caller's
// thread; an exception it throws fails the future (a std::exception's text is kept). An asynchronous
// callable is called on the caller's thread and its future is returned as is.
class MNEME_RUNTIME_EXPORT FunctionTool : public Tool
{
public:
    using SyncFunction = std::function<QString(const Json &arguments)>;
    using AsyncFunction = std::function<QFuture<QString>(const Json &arguments)>;

    FunctionTool(QString name, QString description, Json parametersSchema, SyncFunction function);
    FunctionTool(QString name, QString description, Json parametersSchema, AsyncFunction function);

    QString name() const override { return m_name; }
    QString description() const override { return m_description; }
    Json parametersSchema() const override { return m_schema; }
    QFuture<QString> run(const Json &arguments) override;

private:
    QString m_name;
    QString m_description;
    Json m_schema;
    SyncFunction m_sync;
    AsyncFunction m_async;
};

} // namespace mneme
