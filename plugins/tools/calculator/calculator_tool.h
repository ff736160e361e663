#pragma once

#include <mneme/core/tool.h>

namespace mneme {

// The "calculator" tool: {"expression": "2 * (3 + 4) ^ 2"} -> "98".
//
// Grammar: numbers (1, 2.5, 1e-3), + - * / % (remainder), ^ (power, right-associative), unary + and -,
// parentheses, the constants pi and e, and the functions abs, sqrt, cbrt, exp, ln, log (base 10), log2,
// sin, cos, tan, asin, acos, atan, floor, ceil, round, trunc (one argument) and min, max, pow, hypot
// (two or more, or exactly two for pow and hypot). Names are case-insensitive. A result is printed with
// `precision` significant digits (whole numbers without a decimal point). Division by zero, a result
// that is not a finite number, an unknown name or a malformed expression fail with
// Error(InvalidArgument) saying where.
class CalculatorTool : public Tool
{
public:
    explicit CalculatorTool(int precision = 12) : m_precision(precision) {}

    QString name() const override;
    QString description() const override;
    Json parametersSchema() const override;
    QFuture<QString> run(const Json &arguments) override;

    // The value of an expression; throws Error(InvalidArgument).
    static double evaluate(const QString &expression);
    QString format(double value) const;

private:
    int m_precision;
};

} // namespace mneme
