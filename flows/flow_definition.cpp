#include <mneme/flows/flow_definition.h>

#include <mneme/core/error.h>

#include <QSet>
#include <functional>

namespace mneme {

namespace {

QString quoted(const QString &s)
{
    return QLatin1Char('"') + s + QLatin1Char('"');
}

QString listOrNone(const QStringList &names)
{
    return names.isEmpty() ? QStringLiteral("none") : names.join(QStringLiteral(", "));
}

// A DOT identifier or label: quoted, with quotes, backslashes and line breaks escaped.
QString dotString(const QString &s)
{
    QString out = QStringLiteral("\"");
    for (const QChar c : s) {
        if (c == QLatin1Char('"') || c == QLatin1Char('\\'))
            out += QLatin1Char('\\');
        if (c == QLatin1Char('\n')) {
            out += QStringLiteral("\\n");
            continue;
        }
        out += c;
    }
    return out + QLatin1Char('"');
}

QString stepNode(const QString &name)
{
    return dotString(QStringLiteral("step:") + name);
}

QString labelNode(const QString &label)
{
    return dotString(QStringLiteral("label:") + label);
}

} // namespace

FlowDefinition::FlowDefinition(const QString &flowName)
    : m_name(flowName)
{
}

const FlowDefinition::Step *FlowDefinition::step(const QString &name) const
{
    for (const Step &s : m_steps) {
        if (s.name == name)
            return &s;
    }
    return nullptr;
}

QStringList FlowDefinition::labels() const
{
    QStringList out;
    for (const Step &s : m_steps) {
        for (const QString &l : s.labels) {
            if (!out.contains(l))
                out << l;
        }
    }
    return out;
}

QStringList FlowDefinition::stepNames() const
{
    QStringList out;
    for (const Step &s : m_steps)
        out << s.name;
    return out;
}

QString FlowDefinition::kindName(StepKind kind)
{
    switch (kind) {
    case StepKind::Start:
        return QStringLiteral("start");
    case StepKind::Listener:
        return QStringLiteral("listen");
    case StepKind::Router:
        return QStringLiteral("router");
    }
    return {};
}

void FlowDefinition::refuse(const QString &step, const QString &why) const
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("Invalid flow definition for step %1 (flow %2): %3").arg(quoted(step), quoted(m_name), why));
}

void FlowDefinition::addStep(const Step &step)
{
    if (step.name.trimmed().isEmpty())
        refuse(step.name, QStringLiteral("a step needs a name"));
    if (this->step(step.name))
        refuse(step.name, QStringLiteral("a step of that name already exists; give each step its own name"));
    if (labels().contains(step.name))
        refuse(step.name, QStringLiteral("a router already declares the label %1, and labels and step names share one "
                                         "namespace (a listener of %1 would fire for both); rename the step or the label")
                              .arg(quoted(step.name)));
    if (step.kind != StepKind::Start && !step.trigger)
        refuse(step.name, QStringLiteral("a %1 needs a trigger: a step name, a router label, and_(...) or or_(...)")
                              .arg(step.kind == StepKind::Router ? QStringLiteral("router") : QStringLiteral("listener")));
    if (step.trigger && step.trigger->mentions(step.name)) {
        if (step.kind == StepKind::Router)
            refuse(step.name, QStringLiteral("the router is triggered by its own name (%1); it would run again every time "
                                             "it finishes. Trigger it by the step before it")
                                  .arg(step.trigger->toString()));
        refuse(step.name, QStringLiteral("it listens to itself (%1), so it would trigger itself every time it "
                                         "finishes; to loop, go back to it through a router label")
                              .arg(step.trigger->toString()));
    }
    if (step.kind == StepKind::Router) {
        if (step.labels.isEmpty())
            refuse(step.name, QStringLiteral("a router declares the labels it may return, such as "
                                             "router(\"check\", \"draft\", {\"approved\", \"rejected\"}, ...)"));
        QSet<QString> seen;
        for (const QString &label : step.labels) {
            if (seen.contains(label))
                refuse(step.name, QStringLiteral("the label %1 is declared twice").arg(quoted(label)));
            seen.insert(label);
            if (label == step.name || this->step(label))
                refuse(step.name, QStringLiteral("its label %1 is also the name of a step, and labels and step names share "
                                                 "one namespace (a listener of %1 would fire for both); rename one of them")
                                      .arg(quoted(label)));
        }
    } else if (!step.labels.isEmpty()) {
        refuse(step.name, QStringLiteral("only routers declare labels"));
    }
    m_steps << step;
}

void FlowDefinition::validate() const
{
    const QStringList steps = stepNames();
    const QStringList declared = labels();
    bool hasStart = false;
    for (const Step &s : m_steps) {
        hasStart = hasStart || s.kind == StepKind::Start;
        if (!s.trigger)
            continue;
        for (const QString &name : s.trigger->names()) {
            if (!steps.contains(name) && !declared.contains(name))
                refuse(s.name, QStringLiteral("its trigger %1 names no step and no router label (steps: %2; labels: %3); "
                                              "check the spelling, or declare the label on the router that returns it")
                                   .arg(quoted(name), listOrNone(steps), listOrNone(declared)));
        }
    }
    if (!hasStart)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Invalid flow definition (flow %1): it has no start step; add one with start(\"name\", ...)")
                        .arg(quoted(m_name)));
}

Json FlowDefinition::toJson() const
{
    Json steps = Json::array();
    for (const Step &s : m_steps) {
        Json j{{"name", s.name}, {"kind", kindName(s.kind)}, {"trigger", s.trigger ? s.trigger->toJson() : Json(nullptr)}};
        if (s.kind == StepKind::Router)
            j["labels"] = s.labels;
        j["persist"] = s.persist;
        steps.push_back(j);
    }
    return Json{{"format", kFormat}, {"name", m_name}, {"steps", steps}};
}

FlowDefinition FlowDefinition::fromJson(const Json &json)
{
    const auto bad = [](const QString &what) {
        return Error(ErrorKind::InvalidArgument,
                     QStringLiteral("not a flow description: %1 (write one with Flow::toJson(), or run the flow's program "
                                    "with --flow-graph=json)")
                         .arg(what));
    };
    if (!json.is_object())
        throw bad(QStringLiteral("the document is not a JSON object"));
    if (!json.contains("format") || json["format"] != kFormat)
        throw bad(QStringLiteral("\"format\" must be \"%1\"").arg(QLatin1String(kFormat)));
    if (!json.contains("name") || !json["name"].is_string())
        throw bad(QStringLiteral("\"name\" must be a string"));
    if (!json.contains("steps") || !json["steps"].is_array())
        throw bad(QStringLiteral("\"steps\" must be an array"));
    for (auto it = json.begin(); it != json.end(); ++it) {
        if (it.key() != "format" && it.key() != "name" && it.key() != "steps")
            throw bad(QStringLiteral("unknown key \"%1\"").arg(QString::fromStdString(it.key())));
    }

    FlowDefinition def(QString::fromStdString(json["name"].get<std::string>()));
    int index = 0;
    for (const Json &j : json["steps"]) {
        ++index;
        const QString where = QStringLiteral("step %1").arg(index);
        if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
            throw bad(QStringLiteral("%1 is not an object with a \"name\" string").arg(where));
        Step s;
        s.name = QString::fromStdString(j["name"].get<std::string>());
        const QString kind = j.contains("kind") && j["kind"].is_string() ? QString::fromStdString(j["kind"].get<std::string>())
                                                                         : QString();
        if (kind == QLatin1String("start"))
            s.kind = StepKind::Start;
        else if (kind == QLatin1String("listen"))
            s.kind = StepKind::Listener;
        else if (kind == QLatin1String("router"))
            s.kind = StepKind::Router;
        else
            throw bad(QStringLiteral("%1 (%2): \"kind\" must be \"start\", \"listen\" or \"router\"").arg(where, quoted(s.name)));
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (it.key() != "name" && it.key() != "kind" && it.key() != "trigger" && it.key() != "labels" && it.key() != "persist")
                throw bad(QStringLiteral("%1 (%2): unknown key \"%3\"").arg(where, quoted(s.name), QString::fromStdString(it.key())));
        }
        if (j.contains("trigger") && !j["trigger"].is_null())
            s.trigger = FlowCondition::fromJson(j["trigger"], QStringLiteral("the trigger of step %1").arg(quoted(s.name)));
        if (j.contains("labels")) {
            if (!j["labels"].is_array())
                throw bad(QStringLiteral("%1 (%2): \"labels\" must be an array of strings").arg(where, quoted(s.name)));
            for (const Json &l : j["labels"]) {
                if (!l.is_string())
                    throw bad(QStringLiteral("%1 (%2): \"labels\" must be an array of strings").arg(where, quoted(s.name)));
                s.labels << QString::fromStdString(l.get<std::string>());
            }
        }
        if (j.contains("persist")) {
            if (!j["persist"].is_boolean())
                throw bad(QStringLiteral("%1 (%2): \"persist\" must be true or false").arg(where, quoted(s.name)));
            s.persist = j["persist"].get<bool>();
        }
        def.addStep(s);
    }
    def.validate();
    return def;
}

QString FlowDefinition::toDot() const
{
    QStringList lines;
    lines << QStringLiteral("digraph %1 {").arg(dotString(m_name));
    lines << QStringLiteral("  label=%1;").arg(dotString(m_name)) << QStringLiteral("  labelloc=t;")
          << QStringLiteral("  rankdir=TB;") << QStringLiteral("  node [fontname=\"Helvetica\", fontsize=11];")
          << QStringLiteral("  edge [fontname=\"Helvetica\", fontsize=9];");

    for (const Step &s : m_steps) {
        QString attrs;
        switch (s.kind) {
        case StepKind::Start:
            attrs = s.trigger ? QStringLiteral("shape=box, style=\"rounded,filled,dashed\", fillcolor=\"#d5f5e3\"")
                              : QStringLiteral("shape=box, style=\"rounded,filled\", fillcolor=\"#d5f5e3\"");
            break;
        case StepKind::Listener:
            attrs = QStringLiteral("shape=box, style=rounded");
            break;
        case StepKind::Router:
            attrs = QStringLiteral("shape=diamond, style=filled, fillcolor=\"#fdebd0\"");
            break;
        }
        lines << QStringLiteral("  %1 [label=%2, %3];").arg(stepNode(s.name), dotString(s.name), attrs);
    }
    for (const QString &label : labels())
        lines << QStringLiteral("  %1 [label=%2, shape=ellipse, style=dashed];")
                     .arg(labelNode(label), dotString(label.isEmpty() ? QStringLiteral("(empty)") : label));
    for (const Step &s : m_steps) {
        for (const QString &label : s.labels)
            lines << QStringLiteral("  %1 -> %2 [style=dashed];").arg(stepNode(s.name), labelNode(label));
    }

    const QStringList steps = stepNames();
    for (const Step &s : m_steps) {
        if (!s.trigger)
            continue;
        int conditionNodes = 0;
        // Draws `c` as the source of an edge into `target`; and_ / or_ become a node of their own.
        std::function<void(const FlowCondition &, const QString &)> draw = [&](const FlowCondition &c, const QString &target) {
            if (c.kind() == FlowCondition::Kind::Name) {
                const QString source = steps.contains(c.name()) ? stepNode(c.name()) : labelNode(c.name());
                lines << QStringLiteral("  %1 -> %2;").arg(source, target);
                return;
            }
            const QString node = dotString(QStringLiteral("cond:%1:%2").arg(s.name).arg(++conditionNodes));
            lines << QStringLiteral("  %1 [label=%2, shape=circle, fontsize=9, width=0.3];")
                         .arg(node, c.kind() == FlowCondition::Kind::And ? QStringLiteral("\"AND\"") : QStringLiteral("\"OR\""));
            lines << QStringLiteral("  %1 -> %2;").arg(node, target);
            for (const FlowCondition &child : c.children())
                draw(child, node);
        };
        draw(*s.trigger, stepNode(s.name));
    }
    lines << QStringLiteral("}");
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

} // namespace mneme
