#include <mneme/runtime/task.h>

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <QUuid>

namespace mneme {

namespace {

QString taskLabel(const TaskConfig &c)
{
    if (!c.name.trimmed().isEmpty())
        return QStringLiteral("Task \"%1\"").arg(c.name.trimmed());
    const QString d = c.description.simplified();
    if (!d.isEmpty())
        return QStringLiteral("Task \"%1\"").arg(d.size() > 40 ? d.left(37) + QStringLiteral("...") : d);
    return QStringLiteral("A task");
}

} // namespace

Task::Task(TaskConfig config) : m_config(std::move(config)), m_id(QUuid::createUuid().toString(QUuid::WithoutBraces))
{
    const QString label = taskLabel(m_config);
    if (m_config.description.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 needs a description: set TaskConfig::description.").arg(label));
    if (m_config.expectedOutput.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 needs an expected output: set TaskConfig::expectedOutput to what a good answer "
                                   "looks like.")
                        .arg(label));
    if (!m_config.outputJson.is_null() && !m_config.outputJson.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1: outputJson must be a JSON schema object such as {\"type\": \"object\", "
                                   "\"properties\": {...}}.")
                        .arg(label));
    if (m_config.guardrailMaxRetries < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1: guardrailMaxRetries must not be negative (got %2).").arg(label).arg(m_config.guardrailMaxRetries));
    if (!m_config.outputFile.isNull())
        checkOutputFile(m_config.outputFile, label);
    QStringList toolNames;
    for (const auto &tool : m_config.tools) {
        if (!tool)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 has a null tool.").arg(label));
        if (toolNames.contains(tool->name()))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 has two tools named \"%2\"; give each tool a unique name.").arg(label, tool->name()));
        toolNames << tool->name();
    }
    if (m_config.context) {
        for (const auto &t : *m_config.context)
            if (!t)
                throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 has a null task in its context.").arg(label));
    }
    for (const Guardrail &g : m_config.guardrails)
        if (g.isCriterion() && g.criterion().trimmed().isEmpty())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 has a guardrail with neither a function nor a criterion.").arg(label));
}

void Task::checkOutputFile(const QString &path, const QString &label)
{
    const QString file = path.trimmed();
    if (file.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1: outputFile is empty; give a path or leave it unset.").arg(label));
    if (file.split(QRegularExpression(QStringLiteral("[/\\\\]"))).contains(QStringLiteral("..")))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1: outputFile \"%2\" climbs out of its directory with \"..\"; give a path without "
                                   "\"..\" segments.")
                        .arg(label, file));
}

QString Task::displayName() const
{
    if (!m_config.name.trimmed().isEmpty())
        return m_config.name.trimmed();
    const QString d = m_config.description.simplified();
    return d.size() > 40 ? d.left(37) + QStringLiteral("...") : d;
}

std::optional<TaskOutput> Task::output() const
{
    QMutexLocker lock(&m_mutex);
    return m_output;
}

void Task::setOutput(const TaskOutput &output)
{
    QMutexLocker lock(&m_mutex);
    m_output = output;
}

QString Task::prompt(const QString &description, const QString &expectedOutput, const Json &outputJson, bool markdown)
{
    QString text = description.trimmed();
    text += QStringLiteral("\n\nWhat a good final answer looks like: %1\nGive the complete content itself as your final "
                           "answer, not a description or summary of it.")
                .arg(expectedOutput.trimmed());
    if (!outputJson.is_null())
        text += QStringLiteral("\n\nYour final answer must be a single JSON value that follows this JSON schema, with "
                               "nothing before or after it:\n%1")
                    .arg(QString::fromStdString(outputJson.dump()));
    if (markdown)
        text += QStringLiteral("\n\nFormat your final answer in Markdown: headings with #, lists with - or 1., emphasis "
                               "with * or **.");
    return text;
}

QString Task::interpolate(const QString &text, const Json &inputs, const QString &where)
{
    static const QRegularExpression placeholder(QStringLiteral("\\{([A-Za-z_][A-Za-z0-9_\\-]*)\\}"));
    QString out;
    qsizetype last = 0;
    auto it = placeholder.globalMatch(text);
    while (it.hasNext()) {
        const QRegularExpressionMatch m = it.next();
        const std::string name = m.captured(1).toStdString();
        if (!inputs.is_object() || !inputs.contains(name))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 uses {%2}, but the kickoff inputs have no \"%2\"; pass it in kickoff's inputs "
                                       "(or write the text without braces).")
                            .arg(where, m.captured(1)));
        const Json &value = inputs[name];
        out += text.mid(last, m.capturedStart() - last);
        out += value.is_string() ? QString::fromStdString(value.get<std::string>()) : QString::fromStdString(value.dump());
        last = m.capturedEnd();
    }
    out += text.mid(last);
    return out;
}

} // namespace mneme
