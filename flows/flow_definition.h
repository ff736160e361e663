#pragma once

#include <mneme/core/json.h>
#include <mneme/flows/export.h>
#include <mneme/flows/flow_condition.h>

#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

// The shape of a flow without its code: the steps, what triggers each, the labels each router may
// emit. A Flow builds one as steps are registered and checks every step as it is added; validate()
// checks what can only be known once all are there. It is also what Flow::toJson() writes, what
// `mneme flow-graph` reads, and what toDot() draws.
class MNEME_FLOWS_EXPORT FlowDefinition
{
public:
    enum class StepKind {
        Start,
        Listener,
        Router
    };

    struct Step
    {
        QString name;
        StepKind kind = StepKind::Listener;
        // A listener's or router's trigger; a start's condition (none: an unconditional start).
        std::optional<FlowCondition> trigger;
        // A router's labels: the values it may return.
        QStringList labels;
        // Saved after this step even when the flow does not persist every step.
        bool persist = false;
    };

    // The version of the JSON description written by toJson().
    static constexpr const char *kFormat = "mneme-flow/1";

    explicit FlowDefinition(const QString &flowName = QStringLiteral("flow"));

    const QString &name() const { return m_name; }
    const QList<Step> &steps() const { return m_steps; }
    const Step *step(const QString &name) const;
    // Every label some router declares, in order of declaration.
    QStringList labels() const;
    QStringList stepNames() const;

    // Adds a step after checking it against the steps added so far. Throws Error(InvalidArgument)
    // "Invalid flow definition for step "X" ...: <why>" for: an empty or duplicate name; a listener
    // or router without a trigger; a step whose trigger mentions itself (inside and_ / or_ too);
    // a router without labels, with a label twice, or with a label that is also a step's name (and
    // a step named like a label already declared).
    void addStep(const Step &step);

    // The checks that need every step: each name a trigger mentions is a step or a declared label,
    // and there is at least one start. Throws Error(InvalidArgument) naming the step.
    void validate() const;

    // {"format": "mneme-flow/1", "name": ..., "steps": [{"name", "kind": "start"|"listen"|"router",
    //  "trigger": null | "name" | {"and"|"or": [...]}, "labels": [...], "persist": bool}, ...]}
    Json toJson() const;
    // Reads and validates what toJson() writes. Throws Error(InvalidArgument) saying what is wrong.
    static FlowDefinition fromJson(const Json &json);

    // The graph in Graphviz DOT: starts (green), listeners, routers (diamonds) with a dashed node
    // per label, and_ / or_ as small AND / OR nodes; edges run from trigger to step.
    QString toDot() const;

    static QString kindName(StepKind kind);

private:
    [[noreturn]] void refuse(const QString &step, const QString &why) const;

    QString m_name;
    QList<Step> m_steps;
};

} // namespace mneme
