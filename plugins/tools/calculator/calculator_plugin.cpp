#include "calculator_plugin.h"

#include "calculator_tool.h"

#include <mneme/core/error.h>

namespace mneme {

std::unique_ptr<Tool> CalculatorPlugin::createTool(const QString &key, const Json &config)
{
    if (key != QLatin1String("calculator"))
        throw Error(ErrorKind::Plugin, QStringLiteral("the calculator plugin answers to the key \"calculator\", not \"%1\".").arg(key));
    int precision = 12;
    if (!config.is_null() && !config.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the calculator's configuration must be a JSON object."));
    if (config.is_object()) {
        for (auto it = config.begin(); it != config.end(); ++it) {
            if (it.key() != "precision")
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("unknown configuration key \"%1\" for the calculator; the accepted key is precision "
                                           "(significant digits, 1 to 17).")
                                .arg(QString::fromStdString(it.key())));
            if (!it.value().is_number_integer() || it.value().get<int>() < 1 || it.value().get<int>() > 17)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("the calculator's \"precision\" must be an integer from 1 to 17, not %1.")
                                .arg(QString::fromStdString(it.value().dump())));
            precision = it.value().get<int>();
        }
    }
    return std::make_unique<CalculatorTool>(precision);
}

} // namespace mneme
