#pragma once

#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace mneme::test {

// Captures every log line ("category: message") from its construction on, while it lives, with all mneme.* categories on,
// so a test can show that no secret reaches a log. Warnings and worse still reach the previous
// handler. One at a time.
class LogCapture
{
public:
    LogCapture();
    ~LogCapture();
    LogCapture(const LogCapture &) = delete;
    LogCapture &operator=(const LogCapture &) = delete;

    // The lines captured so far.
    static QStringList messages();
    static void clear();

private:
    QtMessageHandler m_previous = nullptr;
};

} // namespace mneme::test
