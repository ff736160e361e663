#include "log_capture.h"

#include <QLoggingCategory>
#include <QMutex>
#include <QMutexLocker>

namespace mneme::test {

namespace {

QMutex g_mutex;
QStringList g_lines;
QtMessageHandler g_previous = nullptr;

void capture(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    {
        QMutexLocker lock(&g_mutex);
        g_lines << QString::fromUtf8(context.category ? context.category : "default") + QStringLiteral(": ") + message;
    }
    if (g_previous && type != QtDebugMsg && type != QtInfoMsg)
        g_previous(type, context, message);
}

} // namespace

LogCapture::LogCapture()
{
    clear();
    QLoggingCategory::setFilterRules(QStringLiteral("mneme.*=true"));
    m_previous = qInstallMessageHandler(capture);
    g_previous = m_previous;
}

LogCapture::~LogCapture()
{
    qInstallMessageHandler(m_previous);
    QLoggingCategory::setFilterRules(QString());
}

QStringList LogCapture::messages()
{
    QMutexLocker lock(&g_mutex);
    return g_lines;
}

void LogCapture::clear()
{
    QMutexLocker lock(&g_mutex);
    g_lines.clear();
}

} // namespace mneme::test
