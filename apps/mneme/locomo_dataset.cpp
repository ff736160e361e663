#include "locomo_dataset.h"

#include <mneme/core/error.h>

#include <QFile>
#include <QMap>
#include <QRegularExpression>

#include <algorithm>

namespace mneme::cli {

namespace {

[[noreturn]] void malformed(const QString &file, const QString &where, const QString &problem)
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("%1 is not a LOCOMO file: %2: %3").arg(file, where, problem));
}

QString jsonTypeName(const Json &j)
{
    return QString::fromUtf8(j.type_name());
}

// The string at `key` of `object`; throws naming `where` when it is missing or not a string.
QString requiredString(const Json &object, const char *key, const QString &file, const QString &where)
{
    const auto it = object.find(key);
    if (it == object.end())
        malformed(file, where, QStringLiteral("\"%1\" is missing").arg(QLatin1String(key)));
    if (!it->is_string())
        malformed(file, where, QStringLiteral("\"%1\" must be a string, not %2").arg(QLatin1String(key), jsonTypeName(*it)));
    return QString::fromStdString(it->get<std::string>());
}

// "D<session>:<turn>" from one piece of an evidence entry, or an empty string. Tolerates white
// space, a colon after the "D" ("D:11:26"), a lower-case "d" and leading zeros.
QString canonicalId(const QString &piece)
{
    static const QRegularExpression pattern(QStringLiteral(R"(^[Dd]\s*:?\s*(\d{1,6})\s*:\s*(\d{1,6})$)"));
    const QRegularExpressionMatch m = pattern.match(piece.trimmed());
    if (!m.hasMatch())
        return QString();
    return QStringLiteral("D%1:%2").arg(m.captured(1).toInt()).arg(m.captured(2).toInt());
}

int monthNumber(const QString &name)
{
    static const QStringList months = {
        QStringLiteral("january"),
        QStringLiteral("february"),
        QStringLiteral("march"),
        QStringLiteral("april"),
        QStringLiteral("may"),
        QStringLiteral("june"),
        QStringLiteral("july"),
        QStringLiteral("august"),
        QStringLiteral("september"),
        QStringLiteral("october"),
        QStringLiteral("november"),
        QStringLiteral("december"),
    };
    const QString lower = name.toLower();
    for (int i = 0; i < months.size(); ++i) {
        // The full name, or an abbreviation of at least three letters ("Sep", "Sept").
        if (lower == months.at(i) || (lower.size() >= 3 && months.at(i).startsWith(lower)))
            return i + 1;
    }
    return 0;
}

} // namespace

QDateTime LocomoDataset::parseSessionTime(const QString &text)
{
    static const QRegularExpression pattern(
        QStringLiteral(R"(^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$)"),
        QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch m = pattern.match(text);
    if (!m.hasMatch())
        return fromIso(text.trimmed());
    int hour = m.captured(1).toInt();
    const int minute = m.captured(2).toInt();
    const bool pm = m.captured(3).compare(QLatin1String("p"), Qt::CaseInsensitive) == 0;
    if (hour < 1 || hour > 12 || minute > 59)
        return QDateTime();
    hour = hour % 12 + (pm ? 12 : 0);
    const int month = monthNumber(m.captured(5));
    const QDate date(m.captured(6).toInt(), month, m.captured(4).toInt());
    if (month == 0 || !date.isValid())
        return QDateTime();
    return QDateTime(date, QTime(hour, minute), Qt::UTC);
}

LocomoDataset::Repair LocomoDataset::repairEvidence(const QStringList &entries, const QSet<QString> &turnIds)
{
    static const QRegularExpression separators(QStringLiteral(R"([;,\s]+)"));
    Repair r;
    for (const QString &entry : entries) {
        // The whole entry first, so that "D 11:26" stays one id; else its pieces.
        QStringList pieces;
        if (!canonicalId(entry).isEmpty())
            pieces << entry;
        else
            pieces = entry.split(separators, Qt::SkipEmptyParts);
        if (pieces.isEmpty()) {
            ++r.dropped;
            continue;
        }
        for (const QString &piece : std::as_const(pieces)) {
            const QString id = canonicalId(piece);
            if (id.isEmpty() || !turnIds.contains(id)) {
                ++r.dropped;
                continue;
            }
            if (id != entry)
                ++r.repaired;
            if (!r.ids.contains(id))
                r.ids << id;
        }
    }
    return r;
}

LocomoDataset LocomoDataset::load(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("cannot read the LOCOMO file %1: %2; check the path").arg(path, f.errorString()));
    Json root;
    const QString problem = readJson(f.readAll().toStdString(), &root);
    if (!problem.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is not valid JSON (%2); a LOCOMO file is a JSON array of conversations").arg(path, problem));
    if (!root.is_array())
        malformed(path, QStringLiteral("the top level"),
                  QStringLiteral("must be an array of conversations, not %1").arg(jsonTypeName(root)));
    if (root.empty())
        malformed(path, QStringLiteral("the top level"), QStringLiteral("the array holds no conversation"));

    static const QRegularExpression sessionKey(QStringLiteral(R"(^session_(\d+)$)"));
    LocomoDataset dataset;
    int index = 0;
    for (const Json &sample : root) {
        ++index;
        QString where = QStringLiteral("conversation %1").arg(index);
        if (!sample.is_object())
            malformed(path, where, QStringLiteral("must be an object, not %1").arg(jsonTypeName(sample)));
        LocomoConversation conversation;
        conversation.sampleId = where;
        if (sample.contains("sample_id") && sample["sample_id"].is_string()) {
            conversation.sampleId = QString::fromStdString(sample["sample_id"].get<std::string>());
            where += QStringLiteral(" (%1)").arg(conversation.sampleId);
        }

        const auto dialogue = sample.find("conversation");
        if (dialogue == sample.end() || !dialogue->is_object())
            malformed(path, where, QStringLiteral("needs a \"conversation\" object with the sessions"));
        // Sessions in numeric order (session_2 before session_10).
        QMap<int, const Json *> sessions;
        for (auto it = dialogue->begin(); it != dialogue->end(); ++it) {
            const QRegularExpressionMatch m = sessionKey.match(QString::fromStdString(it.key()));
            if (m.hasMatch())
                sessions.insert(m.captured(1).toInt(), &it.value());
        }
        if (sessions.isEmpty())
            malformed(path, where, QStringLiteral("the conversation has no \"session_N\" list of turns"));

        QSet<QString> turnIds;
        for (auto s = sessions.constBegin(); s != sessions.constEnd(); ++s) {
            const QString sessionName = QStringLiteral("session_%1").arg(s.key());
            const Json &turns = *s.value();
            if (!turns.is_array())
                malformed(path, where + QLatin1Char(' ') + sessionName,
                          QStringLiteral("must be an array of turns, not %1").arg(jsonTypeName(turns)));
            if (turns.empty())
                continue;
            const std::string dateKey = sessionName.toStdString() + "_date_time";
            const QString dateText = requiredString(*dialogue, dateKey.c_str(), path, where);
            const QDateTime at = parseSessionTime(dateText);
            if (!at.isValid())
                malformed(path, QStringLiteral("%1 %2_date_time").arg(where, sessionName),
                          QStringLiteral("\"%1\" is not a date such as \"1:56 pm on 8 May, 2023\"").arg(dateText));
            if (!conversation.lastSessionAt.isValid() || at > conversation.lastSessionAt)
                conversation.lastSessionAt = at;

            int turnIndex = 0;
            for (const Json &t : turns) {
                ++turnIndex;
                const QString turnWhere = QStringLiteral("%1 %2 turn %3").arg(where, sessionName).arg(turnIndex);
                if (!t.is_object())
                    malformed(path, turnWhere, QStringLiteral("must be an object, not %1").arg(jsonTypeName(t)));
                LocomoTurn turn;
                turn.diaId = requiredString(t, "dia_id", path, turnWhere).trimmed();
                turn.speaker = requiredString(t, "speaker", path, turnWhere).trimmed();
                turn.text = requiredString(t, "text", path, turnWhere);
                if (turn.diaId.isEmpty())
                    malformed(path, turnWhere, QStringLiteral("\"dia_id\" is empty"));
                if (t.contains("blip_caption") && !t["blip_caption"].is_null())
                    turn.caption = requiredString(t, "blip_caption", path, turnWhere).trimmed();
                turn.session = s.key();
                turn.at = at;
                if (turnIds.contains(turn.diaId))
                    malformed(path, turnWhere, QStringLiteral("the turn id \"%1\" is used twice").arg(turn.diaId));
                turnIds.insert(turn.diaId);
                conversation.turns << turn;
            }
        }
        if (conversation.turns.isEmpty())
            malformed(path, where, QStringLiteral("the conversation has no turns"));

        const auto qa = sample.find("qa");
        if (qa == sample.end() || !qa->is_array())
            malformed(path, where, QStringLiteral("needs a \"qa\" array of questions"));
        int questionIndex = 0;
        for (const Json &q : *qa) {
            ++questionIndex;
            const QString questionWhere = QStringLiteral("%1 question %2").arg(where).arg(questionIndex);
            if (!q.is_object())
                malformed(path, questionWhere, QStringLiteral("must be an object, not %1").arg(jsonTypeName(q)));
            LocomoQuestion question;
            question.question = requiredString(q, "question", path, questionWhere);
            const auto category = q.find("category");
            if (category == q.end() || !category->is_number_integer())
                malformed(path, questionWhere, QStringLiteral("\"category\" must be an integer from 1 to 5"));
            question.category = category->get<int>();
            if (question.category < 1 || question.category > 5)
                malformed(path, questionWhere,
                          QStringLiteral("\"category\" must be an integer from 1 to 5, got %1").arg(question.category));

            QStringList entries;
            const auto evidence = q.find("evidence");
            if (evidence != q.end() && !evidence->is_null()) {
                if (evidence->is_string()) {
                    entries << QString::fromStdString(evidence->get<std::string>());
                } else if (evidence->is_array()) {
                    for (const Json &e : *evidence)
                        // Anything but a string cannot be repaired: an empty entry is dropped.
                        entries << (e.is_string() ? QString::fromStdString(e.get<std::string>()) : QString());
                } else {
                    malformed(path, questionWhere, QStringLiteral("\"evidence\" must be an array of turn ids"));
                }
            }
            const Repair repair = repairEvidence(entries, turnIds);
            question.evidence = repair.ids;
            question.repairedIds = repair.repaired;
            question.droppedIds = repair.dropped;
            conversation.questions << question;
        }
        dataset.conversations << conversation;
    }
    return dataset;
}

} // namespace mneme::cli
