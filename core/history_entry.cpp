#include <mneme/core/history_entry.h>

namespace mneme {

QString HistoryEntry::eventName(Event e)
{
    switch (e) {
    case Event::Add: return QStringLiteral("ADD");
    case Event::Update: return QStringLiteral("UPDATE");
    case Event::Delete: return QStringLiteral("DELETE");
    }
    return QStringLiteral("ADD");
}

HistoryEntry::Event HistoryEntry::eventFromName(const QString &name)
{
    if (name == QLatin1String("UPDATE"))
        return Event::Update;
    if (name == QLatin1String("DELETE"))
        return Event::Delete;
    return Event::Add;
}

void to_json(Json &j, const HistoryEntry &e)
{
    j = Json{
        {"event", HistoryEntry::eventName(e.event)},
        {"old_content", e.oldContent.isNull() ? Json(nullptr) : Json(e.oldContent)},
        {"new_content", e.newContent.isNull() ? Json(nullptr) : Json(e.newContent)},
        {"at", toIso(e.at)},
    };
}

} // namespace mneme
