#include "temp_store.h"

#include <QDir>

namespace mneme::test {

TempStore::TempStore()
    : m_dir(QDir::tempPath() + QStringLiteral("/mneme-test-XXXXXX"))
{
}

QString TempStore::path(const QString &name) const
{
    return m_dir.filePath(name);
}

} // namespace mneme::test
