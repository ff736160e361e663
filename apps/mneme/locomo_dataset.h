#pragma once

#include <mneme/core/json.h>

#include <QDateTime>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>

namespace mneme::cli {

// One dialogue turn of a LOCOMO conversation.
struct LocomoTurn
{
    QString diaId; // "D3:12": session 3, turn 12
    QString speaker;
    QString text;
    QString caption; // blip_caption of the shared image; empty when the turn has none
    int session = 0; // N of session_N
    QDateTime at;    // the session's date and time, UTC
};

// One question with its evidence, repaired (see LocomoDataset::repairEvidence).
struct LocomoQuestion
{
    QString question;
    int category = 0;     // 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial
    QStringList evidence; // distinct turn ids of this conversation, in file order; empty: unusable
    int repairedIds = 0;  // ids obtained by repairing a malformed entry
    int droppedIds = 0;   // pieces that could not be repaired, or that name no turn
};

struct LocomoConversation
{
    QString sampleId;        // "conv-26", or "conversation N" when the file has none
    QList<LocomoTurn> turns; // sessions in numeric order, turns in file order
    QList<LocomoQuestion> questions;
    QDateTime lastSessionAt; // the latest date of a session that has turns
};

// A file in the format of the LOCOMO benchmark (snap-research/locomo, locomo10.json): an array of
// {"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N_date_time", "session_N": [turns]},
// "qa": [{"question", "answer", "evidence": [dia_id...], "category"}]}. Other keys are ignored.
class LocomoDataset
{
public:
    // Reads and checks the file. Throws Error(InvalidArgument) naming the file and the place of the
    // first problem (unreadable file, not JSON, a missing or mistyped field, an unparsable session
    // date, a duplicate turn id, a category outside 1..5).
    static LocomoDataset load(const QString &path);

    // The evidence entries of one question repaired against the turn ids of its conversation. An
    // entry may hold several ids ("D8:6; D9:17", "D1:3 D1:5", "D2:1,D2:4"); each piece is repaired
    // to the form "D<session>:<turn>" ("D:11:26" -> "D11:26", " D1:3" -> "D1:3", "D01:03" ->
    // "D1:3"). A piece that cannot be repaired, or that names no turn, is dropped.
    struct Repair
    {
        QStringList ids;
        int repaired = 0;
        int dropped = 0;
    };
    static Repair repairEvidence(const QStringList &entries, const QSet<QString> &turnIds);

    // A LOCOMO session date such as "1:56 pm on 8 May, 2023" (or an ISO 8601 time), as UTC; invalid
    // when the text is neither.
    static QDateTime parseSessionTime(const QString &text);

    QList<LocomoConversation> conversations;
};

} // namespace mneme::cli
