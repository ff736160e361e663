#include "calculator_tool.h"

#include <mneme/core/error.h>

#include <QtMath>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <vector>

namespace mneme {

namespace {

constexpr int kMaxLength = 2000;
constexpr int kMaxDepth = 100;

// Recursive descent over:
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/' | '%') unary)*
//   unary   := ('+' | '-') unary | power
//   power   := primary ('^' unary)?
//   primary := number | name | name '(' sum (',' sum)* ')' | '(' sum ')'
class Parser
{
public:
    explicit Parser(const QString &text) : m_text(text) {}

    double parse()
    {
        const double value = sum();
        skipSpace();
        if (m_pos < m_text.size())
            fail(QStringLiteral("unexpected \"%1\"").arg(m_text.mid(m_pos, 10)));
        return value;
    }

private:
    [[noreturn]] void fail(const QString &what) const
    {
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The expression \"%1\" cannot be evaluated: %2 at position %3.")
                        .arg(m_text.size() > 80 ? m_text.left(77) + QStringLiteral("...") : m_text, what)
                        .arg(m_pos + 1));
    }
    void skipSpace()
    {
        while (m_pos < m_text.size() && m_text[m_pos].isSpace())
            ++m_pos;
    }
    bool accept(QChar c)
    {
        skipSpace();
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }
    struct Depth
    {
        Parser &p;
        explicit Depth(Parser &parser) : p(parser)
        {
            if (++p.m_depth > kMaxDepth)
                p.fail(QStringLiteral("it is nested too deeply"));
        }
        ~Depth() { --p.m_depth; }
    };

    double sum()
    {
        Depth guard(*this);
        double value = product();
        for (;;) {
            if (accept(QLatin1Char('+')))
                value += product();
            else if (accept(QLatin1Char('-')))
                value -= product();
            else
                return value;
        }
    }
    double product()
    {
        double value = unary();
        for (;;) {
            if (accept(QLatin1Char('*'))) {
                value *= unary();
            } else if (accept(QLatin1Char('/'))) {
                const double d = unary();
                if (d == 0)
                    fail(QStringLiteral("division by zero"));
                value /= d;
            } else if (accept(QLatin1Char('%'))) {
                const double d = unary();
                if (d == 0)
                    fail(QStringLiteral("remainder of a division by zero"));
                value = std::fmod(value, d);
            } else {
                return value;
            }
        }
    }
    double unary()
    {
        Depth guard(*this);
        if (accept(QLatin1Char('-')))
            return -unary();
        if (accept(QLatin1Char('+')))
            return unary();
        return power();
    }
    double power()
    {
        const double base = primary();
        if (accept(QLatin1Char('^')))
            return std::pow(base, unary());
        return base;
    }
    double primary()
    {
        skipSpace();
        if (m_pos >= m_text.size())
            fail(QStringLiteral("the expression ends where a number was expected"));
        if (accept(QLatin1Char('('))) {
            const double value = sum();
            if (!accept(QLatin1Char(')')))
                fail(QStringLiteral("a \")\" is missing"));
            return value;
        }
        const QChar c = m_text[m_pos];
        if (c.isDigit() || c == QLatin1Char('.'))
            return number();
        if (c.isLetter())
            return named();
        fail(QStringLiteral("unexpected \"%1\"").arg(c));
    }
    double number()
    {
        const qsizetype start = m_pos;
        while (m_pos < m_text.size() && (m_text[m_pos].isDigit() || m_text[m_pos] == QLatin1Char('.')))
            ++m_pos;
        if (m_pos < m_text.size() && (m_text[m_pos] == QLatin1Char('e') || m_text[m_pos] == QLatin1Char('E'))) {
            qsizetype p = m_pos + 1;
            if (p < m_text.size() && (m_text[p] == QLatin1Char('+') || m_text[p] == QLatin1Char('-')))
                ++p;
            if (p < m_text.size() && m_text[p].isDigit()) {
                m_pos = p;
                while (m_pos < m_text.size() && m_text[m_pos].isDigit())
                    ++m_pos;
            }
        }
        bool ok = false;
        const double value = m_text.mid(start, m_pos - start).toDouble(&ok);
        if (!ok) {
            m_pos = start;
            fail(QStringLiteral("\"%1\" is not a number").arg(m_text.mid(start, 20)));
        }
        return value;
    }
    double named()
    {
        const qsizetype start = m_pos;
        while (m_pos < m_text.size() && (m_text[m_pos].isLetterOrNumber() || m_text[m_pos] == QLatin1Char('_')))
            ++m_pos;
        const QString name = m_text.mid(start, m_pos - start).toLower();
        if (!accept(QLatin1Char('('))) {
            if (name == QLatin1String("pi"))
                return M_PI;
            if (name == QLatin1String("e"))
                return M_E;
            m_pos = start;
            fail(QStringLiteral("unknown name \"%1\" (the constants are pi and e)").arg(name));
        }
        std::vector<double> args;
        if (!accept(QLatin1Char(')'))) {
            do
                args.push_back(sum());
            while (accept(QLatin1Char(',')));
            if (!accept(QLatin1Char(')')))
                fail(QStringLiteral("a \")\" is missing after the arguments of %1").arg(name));
        }
        return call(name, args, start);
    }
    double call(const QString &name, const std::vector<double> &a, qsizetype at)
    {
        static const std::map<QString, double (*)(double)> one = {
            {QStringLiteral("abs"), [](double x) { return std::fabs(x); }},
            {QStringLiteral("sqrt"), [](double x) { return std::sqrt(x); }},
            {QStringLiteral("cbrt"), [](double x) { return std::cbrt(x); }},
            {QStringLiteral("exp"), [](double x) { return std::exp(x); }},
            {QStringLiteral("ln"), [](double x) { return std::log(x); }},
            {QStringLiteral("log"), [](double x) { return std::log10(x); }},
            {QStringLiteral("log2"), [](double x) { return std::log2(x); }},
            {QStringLiteral("sin"), [](double x) { return std::sin(x); }},
            {QStringLiteral("cos"), [](double x) { return std::cos(x); }},
            {QStringLiteral("tan"), [](double x) { return std::tan(x); }},
            {QStringLiteral("asin"), [](double x) { return std::asin(x); }},
            {QStringLiteral("acos"), [](double x) { return std::acos(x); }},
            {QStringLiteral("atan"), [](double x) { return std::atan(x); }},
            {QStringLiteral("floor"), [](double x) { return std::floor(x); }},
            {QStringLiteral("ceil"), [](double x) { return std::ceil(x); }},
            {QStringLiteral("round"), [](double x) { return std::round(x); }},
            {QStringLiteral("trunc"), [](double x) { return std::trunc(x); }},
        };
        const auto arity = [&](size_t min, size_t max) {
            if (a.size() < min || a.size() > max) {
                m_pos = at;
                fail(min == max ? QStringLiteral("%1 takes %2 argument%3, not %4").arg(name).arg(min).arg(min == 1 ? "" : "s").arg(a.size())
                                : QStringLiteral("%1 takes at least %2 arguments, not %3").arg(name).arg(min).arg(a.size()));
            }
        };
        if (auto it = one.find(name); it != one.end()) {
            arity(1, 1);
            return it->second(a[0]);
        }
        if (name == QLatin1String("min") || name == QLatin1String("max")) {
            arity(2, std::numeric_limits<size_t>::max());
            double v = a[0];
            for (double x : a)
                v = name == QLatin1String("min") ? std::min(v, x) : std::max(v, x);
            return v;
        }
        if (name == QLatin1String("pow")) {
            arity(2, 2);
            return std::pow(a[0], a[1]);
        }
        if (name == QLatin1String("hypot")) {
            arity(2, 2);
            return std::hypot(a[0], a[1]);
        }
        m_pos = at;
        fail(QStringLiteral("unknown function \"%1\"").arg(name));
    }

    const QString &m_text;
    qsizetype m_pos = 0;
    int m_depth = 0;
};

} // namespace

QString CalculatorTool::name() const
{
    return QStringLiteral("calculator");
}

QString CalculatorTool::description() const
{
    return QStringLiteral("Evaluates an arithmetic expression exactly and returns the number. Use it for any "
                          "calculation instead of doing it in your head. Supports + - * / % ^, parentheses, pi, e and "
                          "abs, sqrt, cbrt, exp, ln, log, log2, sin, cos, tan, asin, acos, atan, floor, ceil, round, "
                          "trunc, min, max, pow, hypot.");
}

Json CalculatorTool::parametersSchema() const
{
    return Json{{"type", "object"},
                {"properties", {{"expression", {{"type", "string"}, {"description", "For example: (1200 - 150) * 0.2"}}}}},
                {"required", {"expression"}}};
}

double CalculatorTool::evaluate(const QString &expression)
{
    if (expression.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("The expression is empty; give an arithmetic expression such as 2 * (3 + 4)."));
    if (expression.size() > kMaxLength)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The expression is %1 characters long; the calculator takes at most %2.").arg(expression.size()).arg(kMaxLength));
    const double value = Parser(expression).parse();
    if (!std::isfinite(value))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The expression \"%1\" has no finite value (it overflows or leaves the domain of a "
                                   "function, such as sqrt of a negative number).")
                        .arg(expression.left(80)));
    return value;
}

QString CalculatorTool::format(double value) const
{
    if (value == std::trunc(value) && std::fabs(value) < 1e15)
        return QString::number(qint64(value));
    return QString::number(value, 'g', m_precision);
}

QFuture<QString> CalculatorTool::run(const Json &arguments)
{
    try {
        if (!arguments.is_object() || !arguments.contains("expression") || !arguments["expression"].is_string())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("The calculator needs {\"expression\": \"...\"}."));
        return QtFuture::makeReadyFuture(format(evaluate(QString::fromStdString(arguments["expression"].get<std::string>()))));
    } catch (const Error &e) {
        return QtFuture::makeExceptionalFuture<QString>(e);
    }
}

} // namespace mneme
