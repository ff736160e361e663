#include "memory/recall_flow_p.h"

#include "memory/analysis_call_p.h"
#include "memory/llm_analysis_p.h"
#include "memory/memory_p.h"
#include "memory/scoring_p.h"
#include "memory/time_expression_p.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QHash>

namespace mneme {

namespace {

constexpr int kMaxSuggestedScopes = 20;
constexpr int kExcerpts = 5;
constexpr int kExcerptChars = 1000;

// The scopes the LLM suggested, clamped inside the searched scopes (decision 4), without repeats and
// without scopes another suggestion already covers.
QStringList clampedSuggestions(const QStringList &suggested, const QString &base, const QStringList &scopes)
{
    QStringList picked;
    for (const QString &s : suggested) {
        const QString c = LlmAnalysis::clampScope(base, s);
        bool inside = false;
        for (const QString &p : scopes)
            inside = inside || ScopePath::contains(p, c);
        if (inside && !picked.contains(c))
            picked << c;
        if (picked.size() >= kMaxSuggestedScopes)
            break;
    }
    QStringList kept;
    for (const QString &c : std::as_const(picked)) {
        bool covered = false;
        for (const QString &other : std::as_const(picked))
            covered = covered || (other != c && ScopePath::contains(other, c));
        if (!covered)
            kept << c;
    }
    return kept;
}

QString dayOf(const QDateTime &t) { return t.toUTC().date().toString(Qt::ISODate); }

// "last week (2024-05-06 to 2024-05-12)": the period as the query named it, with its dates.
QString describePeriod(const QString &phrase, const QDateTime &after, const QDateTime &before)
{
    QString dates;
    // `before` is exclusive: the last day in the period is the one before it.
    if (after.isValid() && before.isValid())
        dates = QStringLiteral("%1 to %2").arg(dayOf(after), dayOf(before.addMSecs(-1)));
    else if (after.isValid())
        dates = QStringLiteral("since %1").arg(dayOf(after));
    else
        dates = QStringLiteral("before %1").arg(dayOf(before));
    return phrase.isEmpty() ? dates : QStringLiteral("%1 (%2)").arg(phrase, dates);
}

// The router's confidence: the best reference composite (semantic, recency and importance, without
// the keyword signal) among the matches found. Not the ranking score: the keyword signal is
// normalised by the best hit of each search, so the top match nearly always has it at 1, and the
// score would pass the thresholds (made for a 0..1 composite) without any semantic evidence.
double confidenceOf(const QList<QList<MemoryMatch>> &findings, const MemoryConfig &c)
{
    double best = 0;
    for (const QList<MemoryMatch> &f : findings)
        for (const MemoryMatch &m : f)
            best = std::max(best, c.semanticWeight * m.signalValues.semantic + c.recencyWeight * m.signalValues.recency
                                      + c.importanceWeight * m.signalValues.importance);
    return best;
}

// Every finding in one list: scores weighed against the best of all of them (results of different
// searches are otherwise scaled each to its own best) and by what each turn's record says about the
// query (Scoring::turnFactor), each record once with its best score, sorted.
QList<MemoryMatch> merged(const QList<QList<MemoryMatch>> &findings, const QString &query, const MemoryConfig &config)
{
    QList<MemoryMatch> all;
    for (const QList<MemoryMatch> &f : findings)
        all += f;
    if (findings.size() > 1) {
        Scoring::weighByRelevance(all, config);
        Scoring::weighTurns(all, query);
    }
    QList<MemoryMatch> out;
    QHash<QString, qsizetype> at;
    for (MemoryMatch &m : all) {
        auto it = at.constFind(m.record.id);
        if (it == at.constEnd()) {
            at.insert(m.record.id, out.size());
            out << std::move(m);
        } else if (m.score > out[*it].score) {
            out[*it] = std::move(m);
        }
    }
    MemoryPrivate::sortMatches(out);
    return out;
}

} // namespace

QList<MemoryMatch> RecallFlow::run(const QString &query, const RecallOptions &o, const QStringList &scopes,
                                   const QStringList &categories, const QDateTime &now)
{
    m_options = o;
    m_categories = categories;
    m_now = now;
    m_gaps.clear();
    m_searched.clear();

    Plan plan = analyze(query, o, scopes, now);
    bool timed = plan.after.isValid() || plan.before.isValid();
    // A single search is exactly the shallow recall; several are merged, so each brings more.
    const auto perSearch = [&] { return plan.phrases.size() * plan.scopes.size() == 1 ? o.limit : o.limit * 2; };

    QList<QList<MemoryMatch>> findings = search(plan.phrases, plan, timed, perSearch());
    if (findings.isEmpty() && plan.suggested) {
        // The suggested scopes hold nothing relevant: the whole prefix.
        plan.scopes = scopes;
        plan.suggested = false;
        findings = search(plan.phrases, plan, timed, perSearch());
    }
    if (findings.isEmpty() && timed) {
        // Nothing relevant in the period: answer from any time, and say so.
        timed = false;
        m_gaps << QStringLiteral("Nothing relevant was stored in the period asked for, %1; these memories are from any time.")
                      .arg(describePeriod(plan.period, plan.after, plan.before));
        findings = search(plan.phrases, plan, timed, perSearch());
    }

    // The router: the reference's rules in order, until it synthesizes or the budget is spent.
    const MemoryConfig &c = d.config;
    int budget = c.explorationBudget;
    double confidence = confidenceOf(findings, c);
    // When the scopes hold nothing this caller may see, no rephrased search can find anything: no LLM
    // call is spent on it.
    if (findings.isEmpty() && !anythingVisible(plan))
        budget = 0;
    while (budget > 0) {
        const bool explore = (plan.complex && confidence < c.complexQueryThreshold)
                          || (confidence < c.confidenceThresholdHigh && confidence < c.confidenceThresholdLow);
        if (!explore)
            break;
        --budget;
        if (!this->explore(query, plan, timed, findings))
            break;
        confidence = confidenceOf(findings, c);
    }

    // Synthesis, with graph memory's evidence: the records of the query's relations.
    QList<MemoryMatch> out = merged(findings, query, d.config);
    if (d.graph && !plan.phrases.isEmpty())
        d.addGraphEvidence(out, query, plan.phrases.first().vector, d.recallFilter(scopes, m_categories, m_options), o.limit, now,
                           o.asOf.isValid() ? o.asOf.toUTC() : QDateTime());
    if (out.size() > o.limit)
        out.resize(o.limit);
    for (MemoryMatch &m : out) {
        if (timed && !m.matchReasons.contains(QLatin1String("time_filter")))
            m.matchReasons << QStringLiteral("time_filter");
        if (timed && plan.offlinePeriod && !m.matchReasons.contains(QLatin1String("offline_analysis")))
            m.matchReasons << QStringLiteral("offline_analysis");
    }
    m_gaps.removeDuplicates();
    if (!out.isEmpty())
        out.first().evidenceGaps = m_gaps;
    return out;
}

RecallFlow::Plan RecallFlow::analyze(const QString &query, const RecallOptions &o, const QStringList &scopes,
                                     const QDateTime &now)
{
    Plan plan;
    plan.scopes = scopes;
    const std::optional<TimeRange> offline = TimeExpression::parse(query, now);
    // Without the LLM's reading, only a period that cannot mean anything else filters the search
    // ("last week", "in May 2023"): in "Are deployments allowed on Friday?" the day is the subject.
    const bool offlineDefinite = offline && offline->definite;
    const bool longQuery = query.size() >= d.config.queryAnalysisThreshold;

    std::optional<QueryAnalysis> a;
    QString why;
    bool failed = false;
    const QString base = scopes.size() == 1 ? scopes.first() : d.readScope(QString());
    if (!longQuery) {
        why = QStringLiteral("the query is shorter than query_analysis_threshold (%1 characters)")
                  .arg(d.config.queryAnalysisThreshold);
    } else {
        if (!d.llmConfigured()) {
            why = QStringLiteral("no LLM is configured");
        } else {
            // Of a slice, its scopes and what is below them; else the prefix's children and grandchildren.
            // Only what the reader may see: the names of others' private scopes and categories never
            // reach the LLM.
            const RecordFilter visible = d.readFilter({}, o.effectiveReader());
            const QStringList tops = scopes.size() > 1 ? scopes : d.storage->childScopes(base, visible);
            QStringList available = LlmAnalysis::scopesForPrompt(*d.storage, base, tops, visible);
            if (available.isEmpty())
                available << QStringLiteral("/");
            std::optional<ScopeInfo> info;
            if (!o.scopes.isEmpty() && scopes.size() == 1)
                info = d.storage->scopeInfo(base, visible);
            AnalysisCall call(d.q, AnalysisStep::Query);
            call.start(LlmAnalysis::queryRequest(query, available, info, now));
            a = call.read(
                LlmAnalysis::readQuery,
                QStringLiteral("the query analysis reply is not a JSON object"), &why);
            failed = !a;
        }
    }

    QStringList texts;
    if (a) {
        const QStringList suggested = clampedSuggestions(a->suggestedScopes, base, scopes);
        if (!suggested.isEmpty() && suggested != scopes) {
            plan.scopes = suggested;
            plan.suggested = true;
        }
        plan.complex = a->complexity == QLatin1String("complex");
        texts = a->recallQueries.mid(0, 3);
        // The LLM's time_filter is the earliest date; an unparseable one is ignored. When the offline
        // reading names a period starting that day, its end bounds the search too ("in May 2023").
        const QDateTime from = a->timeFilter.isEmpty() ? QDateTime() : fromIso(a->timeFilter);
        if (from.isValid()) {
            plan.after = from;
            plan.period = QStringLiteral("from the query analysis");
            if (offline && offline->from.isValid() && offline->from.date() == from.date()) {
                plan.before = offline->to;
                plan.period = offline->phrase;
            }
        }
        reportAnalysis(d.q, AnalysisStep::Query, AnalysisPath::Llm);
    } else {
        if (offlineDefinite) {
            plan.after = offline->from;
            plan.before = offline->to;
            plan.period = offline->phrase;
            plan.offlinePeriod = true;
        }
        const char *path = (longQuery || offlineDefinite) ? AnalysisPath::Offline : AnalysisPath::Skipped;
        reportAnalysis(d.q, AnalysisStep::Query, path, why, failed);
    }

    if (texts.isEmpty())
        texts << query;
    plan.phrases = embedPhrases(texts);
    if (plan.phrases.isEmpty())
        plan.phrases << Phrase{query, texts == QStringList{query} ? Embedding() : d.embedQuery(query)};
    return plan;
}

QList<RecallFlow::Phrase> RecallFlow::embedPhrases(const QStringList &texts)
{
    std::vector<Embedding> vectors = d.embedAll(texts);
    QList<Phrase> out;
    for (qsizetype i = 0; i < texts.size(); ++i)
        if (!vectors[size_t(i)].empty())
            out << Phrase{texts[i], std::move(vectors[size_t(i)])};
    return out;
}

QList<QList<MemoryMatch>> RecallFlow::search(const QList<Phrase> &phrases, const Plan &plan, bool timed, int perSearch)
{
    QList<QList<MemoryMatch>> out;
    for (const Phrase &p : phrases) {
        m_searched << p.text.toLower();
        for (const QString &scope : plan.scopes) {
            // The prefix and everything below it (decision 3), under the caller's categories and privacy.
            RecordFilter filter = d.recallFilter({scope}, m_categories, m_options);
            if (timed) {
                filter.createdAfter = plan.after;
                if (plan.before.isValid() && (!filter.createdBefore.isValid() || plan.before < filter.createdBefore))
                    filter.createdBefore = plan.before; // the period, within the recall's "as of"
            }
            QList<MemoryMatch> found = d.rank(p.text, p.vector, filter, perSearch, m_now, d.relevanceFloor(m_options));
            if (!found.isEmpty())
                out << std::move(found);
        }
    }
    return out;
}

bool RecallFlow::anythingVisible(const Plan &plan) const
{
    for (const QString &scope : plan.scopes)
        if (d.storage->count(d.recallFilter({scope}, m_categories, m_options)) > 0)
            return true;
    return false;
}

bool RecallFlow::explore(const QString &query, const Plan &plan, bool timed, QList<QList<MemoryMatch>> &findings)
{
    QStringList excerpts;
    for (const MemoryMatch &m : merged(findings, query, d.config)) {
        if (excerpts.size() >= kExcerpts)
            break;
        excerpts << m.record.content.left(kExcerptChars);
    }
    AnalysisCall call(d.q, AnalysisStep::Exploration);
    call.start(LlmAnalysis::explorationRequest(query, excerpts));
    QString why;
    std::optional<LlmAnalysis::Exploration> e = call.read(
        LlmAnalysis::readExploration,
        QStringLiteral("the exploration reply is not a JSON object"), &why);
    if (!call.hadLlm()) {
        reportAnalysis(d.q, AnalysisStep::Exploration, AnalysisPath::Skipped,
                       QStringLiteral("no LLM is configured; the results of the first search are returned"));
        return false;
    }
    if (!e) {
        // The reference's fallback: the results found so far.
        reportAnalysis(d.q, AnalysisStep::Exploration, AnalysisPath::Defaults, why, true);
        return false;
    }
    reportAnalysis(d.q, AnalysisStep::Exploration, AnalysisPath::Llm);
    if (!e->missing.isEmpty())
        m_gaps << e->missing;

    // Decision 8: the second search uses the phrases the LLM proposes (the reference repeats the first).
    QStringList fresh;
    for (const QString &t : e->refinedQueries)
        if (!m_searched.contains(t.toLower()))
            fresh << t;
    if (fresh.isEmpty())
        return false;
    const QList<Phrase> phrases = embedPhrases(fresh);
    if (phrases.isEmpty())
        return false;
    findings += search(phrases, plan, timed, m_options.limit * 2);
    return true;
}

} // namespace mneme
