#pragma once

#include <mneme/memory/memory_options.h>

#include <QFuture>
#include <QObject>
#include <QString>
#include <map>
#include <memory>

namespace mneme {
class Memory;
}

namespace mneme::studio {

// The store the window shows: one Memory over one SQLite file. Opening runs on a worker thread (the
// Memory constructor reads the store, which takes seconds for a large one) and reports `opened` or
// `openFailed` on the session's thread; the Memory then lives on that thread. The session owns it:
// `close` (or opening another store) emits `aboutToClose` so views let go of it, then destroys it,
// which waits for the writes still pending (an edit or a forget just made). Destroying the session
// while a store still opens waits for that open to end and closes what it opened.
class StoreSession : public QObject
{
    Q_OBJECT
public:
    explicit StoreSession(QObject *parent = nullptr);
    ~StoreSession() override;

    // Opens the store at `path`; with `create` a missing file (and its folder) is created, without
    // it a missing file is an error. The store open so far stays open until the new one is ready.
    void open(const QString &path, bool create);
    void close();

    Memory *memory() const;
    QString path() const;
    bool isOpening() const;

    // The person at the window owns the store: every read and write is the curator's.
    static ReadContext reader();

Q_SIGNALS:
    void openingChanged(bool opening);
    void opened(const QString &path);
    void openFailed(const QString &path, const QString &message);
    void aboutToClose();
    void closed();

private:
    void adopt(Memory *memory, const QString &path);

    std::unique_ptr<Memory> m_memory;
    QString m_path;
    int m_generation = 0;                       // which open() an arriving store answers; older ones are dropped
    std::map<int, QFuture<Memory *>> m_pending; // the opens not yet answered, by generation
    bool m_opening = false;
};

} // namespace mneme::studio
