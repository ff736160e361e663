#pragma once

#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/export.h>

#include <QHash>
#include <QMutex>
#include <QObject>
#include <QString>
#include <cstdio>
#include <optional>

namespace mneme {

// The --verbose trace: one readable line per event of a bus, indented by nesting depth, with the
// duration of end events and the key properties. Properties that may hold secrets (api_key,
// authorization, token, password, secret, at any depth) are never printed. Lines are written as
// events are published (a direct connection), from whatever thread publishes; writes are serialised.
class MNEME_RUNTIME_EXPORT ConsoleListener : public QObject
{
    Q_OBJECT
public:
    // Writes to a C stream (stderr for the CLI). The stream must outlive the listener.
    ConsoleListener(EventBus *bus, FILE *out, QObject *parent = nullptr);
    // Appends to a string (tests, a GUI log). The string must outlive the listener.
    ConsoleListener(EventBus *bus, QString *out, QObject *parent = nullptr);

    // One line, without the newline: "HH:mm:ss.zzz  <indent>type  key=value ...  (12 ms)".
    static QString format(const Event &event, int depth, std::optional<qint64> durationMs);
    // Whether a property with this name is never printed.
    static bool isSecretKey(const QString &name);

private:
    void onEvent(const Event &event);
    void write(const QString &line); // m_mutex held

    FILE *m_file = nullptr;
    QString *m_string = nullptr;
    QMutex m_mutex;
    struct Open
    {
        int depth;
        QDateTime started;
    };
    QHash<QString, Open> m_open;  // start events not yet closed, by id
    QHash<QString, int> m_depths; // depth of recent events, for children of non-scope events
};

} // namespace mneme
