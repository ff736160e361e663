#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QFuture>
#include <QString>
#include <QtPlugin>
#include <memory>

namespace mneme {

// Something an agent can call: a name, a description, a JSON schema of its arguments, and run().
class MNEME_CORE_EXPORT Tool
{
public:
    virtual ~Tool() = default;
    virtual QString name() const = 0;
    virtual QString description() const = 0;
    virtual Json parametersSchema() const = 0;
    // Runs the tool; the future carries the result as text or fails with mneme::Error.
    virtual QFuture<QString> run(const Json &arguments) = 0;
};

class MNEME_CORE_EXPORT ToolFactory
{
public:
    virtual ~ToolFactory() = default;
    virtual std::unique_ptr<Tool> createTool(const QString &key, const Json &config) = 0;
};

} // namespace mneme

#define MNEME_TOOL_FACTORY_IID "org.mneme.ToolFactory/1.0"
Q_DECLARE_INTERFACE(mneme::ToolFactory, MNEME_TOOL_FACTORY_IID)
