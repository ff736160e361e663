#include "eval_commands.h"

#include "command_context.h"
#include "locomo_dataset.h"
#include "locomo_evaluator.h"
#include "progress_bar.h"
#include "table_printer.h"

#include <mneme/core/error.h>

#include <QElapsedTimer>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace mneme::cli {

namespace {

// Keys in the order they are written, so "recall_at" lists 1, 5, 10 and not 1, 10, 5.
using OrderedJson = nlohmann::ordered_json;

constexpr int kMaxK = 10000;

[[noreturn]] void usageError(const QString &message)
{
    throw Error(ErrorKind::InvalidArgument, message);
}

QString quoted(const QString &text)
{
    return Error::quoted(text);
}

QString categoryName(int category)
{
    switch (category) {
    case 1: return QStringLiteral("multi-hop");
    case 2: return QStringLiteral("temporal");
    case 3: return QStringLiteral("open-domain");
    case 4: return QStringLiteral("single-hop");
    case 5: return QStringLiteral("adversarial");
    default: return QString();
    }
}

// A mean recall for JSON: null when there was no question to average.
OrderedJson recallValue(double x)
{
    return std::isnan(x) ? OrderedJson(nullptr) : OrderedJson(x);
}

OrderedJson recallObject(const LocomoScore &score, const QList<int> &ks)
{
    OrderedJson o = OrderedJson::object();
    for (int k : ks)
        o[std::to_string(k)] = recallValue(score.recallAt(k));
    return o;
}

QString recallCell(double x)
{
    return std::isnan(x) ? QStringLiteral("-") : QString::number(x, 'f', 3);
}

OrderedJson intArray(const QList<int> &values)
{
    OrderedJson a = OrderedJson::array();
    for (int v : values)
        a.push_back(v);
    return a;
}

} // namespace

EvalCommands::EvalCommands(CommandContext &context)
    : m_ctx(context)
{
}

QList<int> EvalCommands::parseKs(const QString &text)
{
    static const QRegularExpression digits(QStringLiteral(R"(^\d{1,9}$)"));
    QList<int> ks;
    for (const QString &piece : text.split(QLatin1Char(','))) {
        const QString t = piece.trimmed();
        const int k = digits.match(t).hasMatch() ? t.toInt() : 0;
        if (k < 1 || k > kMaxK)
            usageError(QStringLiteral("--k must be a comma list of positive integers up to %1 such as 1,5,10, got %2")
                           .arg(QString::number(kMaxK), quoted(text)));
        if (!ks.contains(k))
            ks << k;
    }
    std::sort(ks.begin(), ks.end());
    return ks;
}

std::pair<int, int> EvalCommands::parseRange(const QString &text)
{
    static const QRegularExpression range(QStringLiteral(R"(^\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?$)"));
    const QRegularExpressionMatch m = range.match(text);
    const int first = m.hasMatch() ? m.captured(1).toInt() : 0;
    const int last = m.hasMatch() && m.hasCaptured(2) ? m.captured(2).toInt() : first;
    if (first < 1 || last < first)
        usageError(QStringLiteral("--conversations must be a range A-B of 1-based conversation numbers with A <= B "
                                  "(such as 1-3), or one number, got %1")
                       .arg(quoted(text)));
    return {first, last};
}

int EvalCommands::parseCategory(const QString &text)
{
    static const QRegularExpression digit(QStringLiteral(R"(^\s*[1-5]\s*$)"));
    if (!digit.match(text).hasMatch())
        usageError(QStringLiteral("--category must be a LOCOMO category from 1 to 5 (1 multi-hop, 2 temporal, "
                                  "3 open-domain, 4 single-hop, 5 adversarial), got %1")
                       .arg(quoted(text)));
    return text.trimmed().toInt();
}

void EvalCommands::eval()
{
    const QString benchmark = m_ctx.args().positional(0);
    if (benchmark == QLatin1String("locomo"))
        return locomo();
    usageError(QStringLiteral("unknown evaluation %1; the one there is: mneme eval locomo FILE").arg(quoted(benchmark)));
}

void EvalCommands::locomo()
{
    const CliArguments &a = m_ctx.args();
    Console &console = m_ctx.console();

    // Every option is checked before the file is read.
    const QList<int> ks = parseKs(a.value(QStringLiteral("k")).value_or(QStringLiteral("1,5,10")));
    std::optional<std::pair<int, int>> range;
    if (const std::optional<QString> text = a.value(QStringLiteral("conversations")))
        range = parseRange(*text);
    QList<int> categories;
    for (const QString &text : a.values(QStringLiteral("category"))) {
        const int c = parseCategory(text);
        if (!categories.contains(c))
            categories << c;
    }
    std::sort(categories.begin(), categories.end());
    if (categories.isEmpty())
        categories = {1, 2, 3, 4, 5};
    const MemoryConfig &config = m_ctx.config();
    QStringList offTopic;
    if (const std::optional<QString> path = a.value(QStringLiteral("off-topic")))
        offTopic = LocomoEvaluator::readOffTopic(*path);

    const QString file = a.positional(1);
    const LocomoDataset dataset = LocomoDataset::load(file);
    const int available = int(dataset.conversations.size());
    const auto [first, last] = range.value_or(std::pair<int, int>{1, available});
    if (last > available)
        usageError(QStringLiteral("--conversations %1 asks for conversation %2, but %3 holds %4 (1-%4)")
                       .arg(*a.value(QStringLiteral("conversations")), QString::number(last), file,
                            QString::number(available)));
    const QList<LocomoConversation> conversations = dataset.conversations.mid(first - 1, last - first + 1);

    LocomoEvaluator evaluator(config, ks, categories);
    evaluator.setOffTopic(offTopic);
    ProgressBar bar(console, QStringLiteral("eval locomo"), evaluator.questionCount(conversations));
    QElapsedTimer timer;
    timer.start();
    const LocomoEvalResult result = evaluator.run(
        conversations, [&bar](qint64 done) { bar.update(done); },
        [&console](const QString &line) { console.event(line); });
    bar.finish();
    const double seconds = double(timer.elapsed()) / 1000.0;

    if (m_ctx.json()) {
        OrderedJson byCategory = OrderedJson::object();
        for (auto it = result.byCategory.constBegin(); it != result.byCategory.constEnd(); ++it)
            byCategory[std::to_string(it.key())] =
                OrderedJson{{"recall_at", recallObject(it.value(), ks)}, {"questions", it.value().questions}};
        OrderedJson conversationIds = OrderedJson::array();
        for (const QString &id : result.conversationIds)
            conversationIds.push_back(id.toStdString());

        OrderedJson options = OrderedJson::object();
        options["k"] = intArray(ks);
        options["conversations"] = OrderedJson{{"range", QStringLiteral("%1-%2").arg(first).arg(last).toStdString()},
                                               {"ids", conversationIds}};
        options["categories"] = intArray(categories);
        options["depth"] = "shallow";
        options["limit"] = ks.last();
        options["now"] = "the date of the conversation's last session";
        options["embedder"] = result.embedderId.toStdString();
        options["memory_config"] = OrderedJson(result.memoryConfig);
        options["record"] = OrderedJson{
            {"content", LocomoEvaluator::recordContentFormat().toStdString()},
            {"created_at", "the session's date and time (session_N_date_time), as UTC"},
            {"metadata", {{"dia_id", "the turn id"}}},
            {"scope", "/"},
            {"importance", config.defaultImportance},
            {"batch", "one Memory::rememberConversation per session"},
            {"neighbour_turns", config.conversationContextWindow},
            {"neighbour_weight", config.conversationContextWeight},
            {"keyword_context", "the neighbour turns' text, searched at keyword_context_weight"},
            {"keyword_context_weight", config.keywordContextWeight},
        };
        options["counts"] = OrderedJson{
            {"conversations", result.conversationIds.size()},
            {"turns", result.turns},
            {"turns_stored", result.turnsStored},
            {"turns_not_stored", result.turnsDropped},
            {"evidence_ids_repaired", result.evidenceIdsRepaired},
            {"evidence_ids_dropped", result.evidenceIdsDropped},
            {"questions_skipped", result.questionsSkipped},
        };

        OrderedJson out = OrderedJson::object();
        out["recall_at"] = recallObject(result.overall, ks);
        if (result.offTopicQueries > 0) {
            OrderedJson answered = OrderedJson::array();
            for (const QString &line : result.offTopicAnswered)
                answered.push_back(line.toStdString());
            out["off_topic"] = OrderedJson{{"queries", result.offTopicQueries},
                                           {"recalls", result.offTopicRecalls},
                                           {"empty", result.offTopicEmpty},
                                           {"empty_fraction", recallValue(result.offTopicEmptyFraction())},
                                           {"answered", answered}};
        }
        out["by_category"] = byCategory;
        out["questions"] = result.overall.questions;
        out["ms_per_query"] = result.msPerQuery();
        out["options"] = options;
        console.writeBytes(QByteArray::fromStdString(out.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + '\n'));
        return;
    }

    TablePrinter table;
    table.addColumn(QStringLiteral("CATEGORY"));
    table.addColumn(QStringLiteral("QUESTIONS"), TablePrinter::Align::Right);
    for (int k : ks)
        table.addColumn(QStringLiteral("R@%1").arg(k), TablePrinter::Align::Right);
    auto row = [&](const QString &label, const LocomoScore &score) {
        QStringList cells{label, QString::number(score.questions)};
        for (int k : ks)
            cells << recallCell(score.recallAt(k));
        table.addRow(cells);
    };
    row(QStringLiteral("overall"), result.overall);
    for (auto it = result.byCategory.constBegin(); it != result.byCategory.constEnd(); ++it)
        row(QStringLiteral("%1 %2").arg(QString::number(it.key()), categoryName(it.key())), it.value());

    QString text = QStringLiteral("LOCOMO retrieval: %1, conversations %2-%3 (%4), embedder %5\n\n")
                       .arg(file, QString::number(first), QString::number(last),
                            result.conversationIds.join(QStringLiteral(", ")), result.embedderId);
    text += table.render();
    text += QStringLiteral("\n%1 ms per query (%2 recalls, shallow); %3 s in all\n")
                .arg(QString::number(result.msPerQuery(), 'f', 2), QString::number(result.recalls),
                     QString::number(seconds, 'f', 1));
    text += QStringLiteral("turns: %1 stored of %2 (%3 blank)\n")
                .arg(QString::number(result.turnsStored), QString::number(result.turns),
                     QString::number(result.turnsDropped));
    text += QStringLiteral("evidence ids: %1 repaired, %2 dropped; %3 questions skipped (no usable evidence)\n")
                .arg(QString::number(result.evidenceIdsRepaired), QString::number(result.evidenceIdsDropped),
                     QString::number(result.questionsSkipped));
    if (result.offTopicQueries > 0) {
        text += QStringLiteral("off-topic: %1 of %2 recalls returned nothing (%3%), %4 queries on %5 conversations\n")
                    .arg(QString::number(result.offTopicEmpty), QString::number(result.offTopicRecalls),
                         QString::number(100.0 * result.offTopicEmptyFraction(), 'f', 1),
                         QString::number(result.offTopicQueries), QString::number(result.conversationIds.size()));
        if (console.isVerbose())
            for (const QString &line : result.offTopicAnswered)
                console.event(QStringLiteral("off-topic query answered: ") + line);
    }
    console.write(text);
}

} // namespace mneme::cli
