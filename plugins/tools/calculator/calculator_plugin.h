#pragma once

#include <mneme/core/tool.h>

#include <QObject>

namespace mneme {

// The "calculator" tool plugin. Configuration (optional): {"precision": significant digits, 1..17,
// default 12}. Anything else is refused with Error(InvalidArgument).
class CalculatorPlugin : public QObject, public ToolFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_TOOL_FACTORY_IID FILE "calculator.json")
    Q_INTERFACES(mneme::ToolFactory)

public:
    using QObject::QObject;
    std::unique_ptr<Tool> createTool(const QString &key, const Json &config) override;
};

} // namespace mneme
