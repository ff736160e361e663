#include <mneme/runtime/function_tool.h>

#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>

#include <QtConcurrent/QtConcurrentRun>
#include <exception>

namespace mneme {

namespace {

void checkName(const QString &name)
{
    if (name.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("A FunctionTool needs a non-empty name."));
}

} // namespace

FunctionTool::FunctionTool(QString name, QString description, Json parametersSchema, SyncFunction function)
    : m_name(std::move(name)), m_description(std::move(description)), m_schema(std::move(parametersSchema)),
      m_sync(std::move(function))
{
    checkName(m_name);
    if (!m_sync)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("The FunctionTool \"%1\" needs a callable.").arg(m_name));
}

FunctionTool::FunctionTool(QString name, QString description, Json parametersSchema, AsyncFunction function)
    : m_name(std::move(name)), m_description(std::move(description)), m_schema(std::move(parametersSchema)),
      m_async(std::move(function))
{
    checkName(m_name);
    if (!m_async)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("The FunctionTool \"%1\" needs a callable.").arg(m_name));
}

QFuture<QString> FunctionTool::run(const Json &arguments)
{
    const QStringList problems = JsonReply::validate(arguments, m_schema);
    if (!problems.isEmpty()) {
        const Error error(ErrorKind::InvalidArgument,
                          QStringLiteral("The arguments of %1 do not match its schema: %2 Call it again with arguments "
                                         "that follow the schema.")
                              .arg(m_name, problems.join(QLatin1Char(' '))));
        return QtFuture::makeExceptionalFuture<QString>(error);
    }
    if (m_async) {
        try {
            return m_async(arguments);
        } catch (const Error &e) {
            return QtFuture::makeExceptionalFuture<QString>(e);
        } catch (const std::exception &e) {
            return QtFuture::makeExceptionalFuture<QString>(
                Error(ErrorKind::Internal, QStringLiteral("The tool %1 failed: %2").arg(m_name, QString::fromUtf8(e.what()))));
        }
    }
    // Copies: the tool may be gone before the pool runs the call.
    return QtConcurrent::run([fn = m_sync, name = m_name, arguments]() -> QString {
        try {
            return fn(arguments);
        } catch (const Error &) {
            throw;
        } catch (const std::exception &e) {
            throw Error(ErrorKind::Internal, QStringLiteral("The tool %1 failed: %2").arg(name, QString::fromUtf8(e.what())));
        }
    });
}

} // namespace mneme
