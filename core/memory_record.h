#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QDateTime>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <vector>

namespace mneme {

using Embedding = std::vector<float>;

// One stored memory. The embedding travels with the record inside the process but is never
// serialised to JSON (to_json leaves it out; from_json leaves it empty).
struct MNEME_CORE_EXPORT MemoryRecord
{
    QString id; // UUID without braces; set by MemoryRecord::create()
    QString content;
    QString scope = QStringLiteral("/");
    QStringList categories;
    double importance = 0.5; // 0..1
    QString source;          // provenance; empty = none
    bool isPrivate = false;  // visible only to recalls with the same source, or include_private
    Json metadata = Json::object();
    QDateTime createdAt;    // UTC
    QDateTime updatedAt;    // UTC
    QDateTime lastAccessed; // UTC
    int accessCount = 0;
    Embedding embedding; // float32, L2-normalised by the embedders Mneme ships
    // Text keyword search also reads for this record, at a lower weight than the content
    // (keyword_context_weight): Memory::rememberConversation puts a turn's neighbouring turns here.
    // Written with the record and kept by updates of the content; like the embedding it is never
    // serialised to JSON, read back by get() or compared by operator==.
    QString context;

    // A record with a fresh id and all three times set to now.
    static MemoryRecord create(const QString &content);
    bool operator==(const MemoryRecord &other) const;
};

MNEME_CORE_EXPORT void to_json(Json &j, const MemoryRecord &r);
// Reads the JSON shape to_json writes. Missing fields take the defaults above; a field of the
// wrong type throws mneme::Error(InvalidArgument) naming the field.
MNEME_CORE_EXPORT void from_json(const Json &j, MemoryRecord &r);

} // namespace mneme

Q_DECLARE_METATYPE(mneme::MemoryRecord)
