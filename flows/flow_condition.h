#pragma once

#include <mneme/core/json.h>
#include <mneme/flows/export.h>

#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>

namespace mneme {

// What triggers a step: the name of a step (it fires when that step completes), a router label (it
// fires when a router emits it), or and_ / or_ of those, nested as deep as needed.
//
//   flow.listen("write_report", "gather_data", ...);                      // one step
//   flow.listen("publish", "approved", ...);                              // a router label
//   flow.listen("merge", and_("fetch_a", "fetch_b"), ...);                // after both
//   flow.listen("notify", or_("failed", and_("review", "timeout")), ...); // nested
//
// A value type: copy it freely. Strings convert implicitly, so a plain name can be passed wherever a
// condition is expected.
class MNEME_FLOWS_EXPORT FlowCondition
{
public:
    enum class Kind {
        Name,
        And,
        Or
    };

    FlowCondition(const QString &name);
    FlowCondition(const char *name);

    // and_(...) / or_(...) without the variadic sugar. Throws Error(InvalidArgument) when empty.
    static FlowCondition all(const QList<FlowCondition> &conditions);
    static FlowCondition any(const QList<FlowCondition> &conditions);

    Kind kind() const { return m_kind; }
    // The step name or label of a Name condition; empty for and_ / or_.
    const QString &name() const { return m_name; }
    // The operands of and_ / or_; empty for a Name.
    const QList<FlowCondition> &children() const { return m_children; }

    // Every name the condition mentions, in order of first appearance.
    QStringList names() const;
    bool mentions(const QString &name) const;
    // Whether the names seen so far satisfy the condition: a Name when seen, and_ when all its
    // operands are satisfied, or_ when any is.
    bool isSatisfiedBy(const QSet<QString> &seen) const;
    // An or_ with more than one operand: such a listener fires once per cycle (see docs/flows.md).
    bool isMultiEventOr() const;
    // The names that are alternatives of each other: reached from the top through or_ only (a Name
    // on its own is its own single alternative; nothing under an and_ is an alternative).
    QStringList orAlternatives() const;

    // "gather", "and_(a, or_(b, c))".
    QString toString() const;
    // A Name is a string; and_ / or_ are {"and": [...]} / {"or": [...]}.
    Json toJson() const;
    // Reads what toJson() writes. Throws Error(InvalidArgument) naming `where` for anything else,
    // and for and / or nested more than kMaxJsonDepth deep (a description is read from files and
    // pipes: its depth must not decide how deep the reader recurses).
    static FlowCondition fromJson(const Json &json, const QString &where);
    static constexpr int kMaxJsonDepth = 64;

    bool operator==(const FlowCondition &other) const;

private:
    FlowCondition(Kind kind, const QList<FlowCondition> &children);
    void collectNames(QStringList *out) const;
    static FlowCondition fromJson(const Json &json, const QString &where, int depth);

    Kind m_kind = Kind::Name;
    QString m_name;
    QList<FlowCondition> m_children;
};

// and_(a, b, ...): fires when every operand has been seen since it last fired.
template<typename... Conditions>
FlowCondition and_(const Conditions &...conditions)
{
    static_assert(sizeof...(Conditions) > 0, "and_() needs at least one condition");
    return FlowCondition::all(QList<FlowCondition>{FlowCondition(conditions)...});
}

// or_(a, b, ...): fires when any operand is seen (a multi-operand or_ once per cycle).
template<typename... Conditions>
FlowCondition or_(const Conditions &...conditions)
{
    static_assert(sizeof...(Conditions) > 0, "or_() needs at least one condition");
    return FlowCondition::any(QList<FlowCondition>{FlowCondition(conditions)...});
}

} // namespace mneme
