#pragma once

#include <QLocale>
#include <QString>

namespace mneme::studio {

// "1 record", "1,250 records": a count with its noun, for messages (the app has no translations).
inline QString counted(qint64 n, const QString &one, const QString &many)
{
    return QStringLiteral("%1 %2").arg(QLocale().toString(n), n == 1 ? one : many);
}

inline QString records(qint64 n)
{
    return counted(n, QStringLiteral("record"), QStringLiteral("records"));
}

} // namespace mneme::studio
