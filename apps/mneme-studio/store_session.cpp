#include "store_session.h"

#include "future_call.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QDir>
#include <QFileInfo>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>

namespace mneme::studio {

namespace {

// Runs on a worker thread: the Memory is built there, then handed to `home`.
Memory *openMemory(const QString &path, bool create, QThread *home)
{
    const QFileInfo file(path);
    if (!create && !file.exists())
        throw Error(ErrorKind::NotFound,
                    QObject::tr("There is no store at %1. Choose File > New Store to create one there.").arg(path));
    if (file.exists() && !file.isFile())
        throw Error(ErrorKind::InvalidArgument,
                    QObject::tr("%1 is not a file. Choose a store file (memory.db) or a new file name.").arg(path));
    if (create && !QDir().mkpath(file.absolutePath()))
        throw Error(ErrorKind::Storage,
                    QObject::tr("Cannot create the folder %1. Choose a folder you may write to.").arg(file.absolutePath()));
    MemoryConfig config;
    config.storage = Json(file.absoluteFilePath().toStdString());
    auto memory = std::make_unique<Memory>(config);
    memory->moveToThread(home);
    return memory.release();
}

} // namespace

StoreSession::StoreSession(QObject *parent)
    : QObject(parent)
{
}

StoreSession::~StoreSession()
{
    // An open still running would hand its Memory to a session that is gone: wait for it and close
    // the store it opened, so its files are left as a closed store's are.
    for (const auto &pending : m_pending)
        if (failureOf(pending.second).isEmpty())
            delete pending.second.result();
    close();
}

void StoreSession::open(const QString &path, bool create)
{
    const int generation = ++m_generation;
    if (!m_opening) {
        m_opening = true;
        Q_EMIT openingChanged(true);
    }
    const QString absolute = QFileInfo(path).absoluteFilePath();
    const QFuture<Memory *> opening = QtConcurrent::run(openMemory, absolute, create, thread());
    m_pending.emplace(generation, opening);
    whenDone(this, opening, [this, generation, absolute](QFuture<Memory *> f) {
        m_pending.erase(generation);
        const QString error = failureOf(f);
        Memory *memory = error.isEmpty() ? f.result() : nullptr;
        if (generation != m_generation) { // a later open() wins
            delete memory;
            return;
        }
        m_opening = false;
        Q_EMIT openingChanged(false);
        if (!memory) {
            Q_EMIT openFailed(absolute, error);
            return;
        }
        adopt(memory, absolute);
    });
}

void StoreSession::adopt(Memory *memory, const QString &path)
{
    close();
    m_memory.reset(memory);
    m_path = path;
    Q_EMIT opened(path);
}

void StoreSession::close()
{
    if (!m_memory)
        return;
    Q_EMIT aboutToClose();
    m_memory.reset();
    m_path.clear();
    Q_EMIT closed();
}

Memory *StoreSession::memory() const
{
    return m_memory.get();
}

QString StoreSession::path() const
{
    return m_path;
}

bool StoreSession::isOpening() const
{
    return m_opening;
}

ReadContext StoreSession::reader()
{
    return ReadContext::asCurator();
}

} // namespace mneme::studio
