#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QDateTime>
#include <QString>

namespace mneme {

// One change of one record. oldRecord / newRecord are the record's JSON (as to_json writes it) before
// and after the change, so any change can be reverted; null where there is no such side (an ADD has
// no old record, a DELETE no new one).
struct MNEME_CORE_EXPORT HistoryEntry
{
    enum class Event {
        Add,
        Update,
        Delete
    };

    qint64 seq = 0; // increasing per store
    QString recordId;
    Event event = Event::Add;
    QString oldContent;
    QString newContent;
    Json oldRecord;
    Json newRecord;
    QDateTime at;

    static QString eventName(Event e); // "ADD", "UPDATE", "DELETE"
    static Event eventFromName(const QString &name);
};

// {"event","old_content","new_content","at"} as the CLI's `history` command prints it (docs/cli.md).
MNEME_CORE_EXPORT void to_json(Json &j, const HistoryEntry &e);

} // namespace mneme
