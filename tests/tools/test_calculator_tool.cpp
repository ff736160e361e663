// The calculator tool plugin, loaded through the PluginRegistry: expressions and their values,
// the errors a model gets back, and the plugin's configuration.

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/tool.h>

#include <QtTest>

using namespace mneme;

namespace {

// The tool's answer, or "error: <message>".
QString run(Tool &tool, const Json &args)
{
    QFuture<QString> f = tool.run(args);
    try {
        return f.result();
    } catch (const Error &e) {
        return QStringLiteral("error: ") + e.message();
    }
}

} // namespace

class TestCalculatorTool : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void describesItself()
    {
        auto tool = PluginRegistry::instance().createTool(QStringLiteral("calculator"));
        QCOMPARE(tool->name(), QStringLiteral("calculator"));
        QCOMPARE(tool->parametersSchema()["required"], Json::array({"expression"}));
        QVERIFY(tool->description().contains(QLatin1String("sqrt")));
    }

    void evaluates_data()
    {
        QTest::addColumn<QString>("expression");
        QTest::addColumn<QString>("expected");
        QTest::newRow("precedence") << "2 + 3 * 4"
                                    << "14";
        QTest::newRow("parentheses") << "(2 + 3) * 4"
                                     << "20";
        QTest::newRow("power binds tighter than unary minus") << "-2 ^ 2"
                                                              << "-4";
        QTest::newRow("power is right-associative") << "2 ^ 3 ^ 2"
                                                    << "512";
        QTest::newRow("power of negative exponent") << "2 ^ -1"
                                                    << "0.5";
        QTest::newRow("remainder") << "17 % 5"
                                   << "2";
        QTest::newRow("decimals") << "0.1 + 0.2"
                                  << "0.3";
        QTest::newRow("exponent notation") << "1.5e3 / 3"
                                           << "500";
        QTest::newRow("division") << "1 / 3"
                                  << "0.333333333333";
        QTest::newRow("functions") << "sqrt(16) + abs(-2) + round(2.5)"
                                   << "9";
        QTest::newRow("min and max") << "max(1, 7, 3) - min(4, 2)"
                                     << "5";
        QTest::newRow("pow and hypot") << "pow(2, 10) + hypot(3, 4)"
                                       << "1029";
        QTest::newRow("logs") << "log(1000) + ln(e) + log2(8)"
                              << "7";
        QTest::newRow("constants") << "round(pi * 100)"
                                   << "314";
        QTest::newRow("names ignore case") << "SQRT(9) * PI / pi"
                                           << "3";
        QTest::newRow("spaces") << "  ( 1+ 2 )*3 "
                                << "9";
        QTest::newRow("large whole number") << "10^14"
                                            << "100000000000000";
        QTest::newRow("very large number") << "10^20"
                                           << "1e+20";
        QTest::newRow("division by zero") << "1 / (2 - 2)"
                                          << "error: The expression \"1 / (2 - 2)\" cannot be evaluated: division by zero at position 12.";
        QTest::newRow("remainder by zero") << "5 % 0"
                                           << "error: The expression \"5 % 0\" cannot be evaluated: remainder of a division by zero at position 6.";
        QTest::newRow("unknown name") << "2 * x"
                                      << "error: The expression \"2 * x\" cannot be evaluated: unknown name \"x\" (the constants are pi and e) at position 5.";
        QTest::newRow("unknown function") << "foo(1)"
                                          << "error: The expression \"foo(1)\" cannot be evaluated: unknown function \"foo\" at position 1.";
        QTest::newRow("wrong arity") << "sqrt(1, 2)"
                                     << "error: The expression \"sqrt(1, 2)\" cannot be evaluated: sqrt takes 1 argument, not 2 at position 1.";
        QTest::newRow("missing parenthesis") << "(1 + 2"
                                             << "error: The expression \"(1 + 2\" cannot be evaluated: a \")\" is missing at position 7.";
        QTest::newRow("trailing garbage") << "1 + 2)"
                                          << "error: The expression \"1 + 2)\" cannot be evaluated: unexpected \")\" at position 6.";
        QTest::newRow("dangling operator") << "3 *"
                                           << "error: The expression \"3 *\" cannot be evaluated: the expression ends where a number was expected at position 4.";
        QTest::newRow("not finite") << "sqrt(-1)"
                                    << "error: The expression \"sqrt(-1)\" has no finite value (it overflows or leaves the domain of a function, such as sqrt of a negative number).";
        QTest::newRow("overflow") << "10 ^ 400"
                                  << "error: The expression \"10 ^ 400\" has no finite value (it overflows or leaves the domain of a function, such as sqrt of a negative number).";
        QTest::newRow("empty") << "  "
                               << "error: The expression is empty; give an arithmetic expression such as 2 * (3 + 4).";
        QTest::newRow("too deep") << QString(150, QLatin1Char('(')) + "1" + QString(150, QLatin1Char(')'))
                                  << "error: The expression \"" + QString(77, QLatin1Char('(')) + "...\" cannot be evaluated: it is nested too deeply at position 51.";
    }

    void evaluates()
    {
        QFETCH(QString, expression);
        QFETCH(QString, expected);
        auto tool = PluginRegistry::instance().createTool(QStringLiteral("calculator"));
        QCOMPARE(run(*tool, Json{{"expression", expression.toStdString()}}), expected);
    }

    void precision()
    {
        auto tool = PluginRegistry::instance().createTool(QStringLiteral("calculator"), Json{{"precision", 3}});
        QCOMPARE(run(*tool, Json{{"expression", "2 / 3"}}), QStringLiteral("0.667"));
    }

    void badConfiguration_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown key") << R"({"digits": 3})"
                                     << "unknown configuration key \"digits\"";
        QTest::newRow("precision too high") << R"({"precision": 40})"
                                            << "must be an integer from 1 to 17";
        QTest::newRow("precision not a number") << R"({"precision": "3"})"
                                                << "must be an integer from 1 to 17";
        QTest::newRow("not an object") << R"([1])"
                                       << "must be a JSON object";
    }

    void badConfiguration()
    {
        QFETCH(QString, config);
        QFETCH(QString, expected);
        try {
            PluginRegistry::instance().createTool(QStringLiteral("calculator"), Json::parse(config.toStdString()));
            QFAIL("no error");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(expected), qPrintable(e.message()));
        }
    }

    void missingExpression()
    {
        auto tool = PluginRegistry::instance().createTool(QStringLiteral("calculator"));
        QCOMPARE(run(*tool, Json{{"expr", "1"}}), QStringLiteral("error: The calculator needs {\"expression\": \"...\"}."));
    }
};

QTEST_GUILESS_MAIN(TestCalculatorTool)
#include "test_calculator_tool.moc"
