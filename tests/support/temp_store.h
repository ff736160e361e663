#pragma once

#include <QString>
#include <QTemporaryDir>

namespace mneme::test {

// A fresh folder for one test's database files, removed when it goes out of scope.
class TempStore
{
public:
    TempStore();
    QString path(const QString &name = QStringLiteral("memory.db")) const;
    QString dir() const { return m_dir.path(); }

private:
    QTemporaryDir m_dir;
};

} // namespace mneme::test
