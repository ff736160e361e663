#include <mneme/flows/flow_condition.h>

#include <mneme/core/error.h>

namespace mneme {

namespace {

// `json` as text for a message, at most three levels and ten members deep: a value read from a
// file may be nested as deep as it likes, and dumping it whole would recurse that deep.
QString brief(const Json &json, int depth = 0)
{
    if (!json.is_structured())
        return QString::fromStdString(json.dump(-1, ' ', false, Json::error_handler_t::replace));
    const bool object = json.is_object();
    if (depth >= 3)
        return object ? QStringLiteral("{...}") : QStringLiteral("[...]");
    QStringList parts;
    for (auto it = json.begin(); it != json.end(); ++it) {
        if (parts.size() == 10) {
            parts << QStringLiteral("...");
            break;
        }
        QString member = brief(it.value(), depth + 1);
        if (object)
            member.prepend(brief(Json(it.key())) + QLatin1Char(':'));
        parts << member;
    }
    return (object ? QLatin1String("{") : QLatin1String("[")) + parts.join(QLatin1Char(',')) + (object ? QLatin1String("}") : QLatin1String("]"));
}

} // namespace

FlowCondition::FlowCondition(const QString &name)
    : m_name(name)
{
}

FlowCondition::FlowCondition(const char *name)
    : m_name(QString::fromUtf8(name))
{
}

FlowCondition::FlowCondition(Kind kind, const QList<FlowCondition> &children)
    : m_kind(kind), m_children(children)
{
}

FlowCondition FlowCondition::all(const QList<FlowCondition> &conditions)
{
    if (conditions.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("and_() needs at least one condition"));
    return FlowCondition(Kind::And, conditions);
}

FlowCondition FlowCondition::any(const QList<FlowCondition> &conditions)
{
    if (conditions.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("or_() needs at least one condition"));
    return FlowCondition(Kind::Or, conditions);
}

void FlowCondition::collectNames(QStringList *out) const
{
    if (m_kind == Kind::Name) {
        if (!out->contains(m_name))
            out->append(m_name);
        return;
    }
    for (const FlowCondition &c : m_children)
        c.collectNames(out);
}

QStringList FlowCondition::names() const
{
    QStringList out;
    collectNames(&out);
    return out;
}

bool FlowCondition::mentions(const QString &name) const
{
    if (m_kind == Kind::Name)
        return m_name == name;
    for (const FlowCondition &c : m_children) {
        if (c.mentions(name))
            return true;
    }
    return false;
}

bool FlowCondition::isSatisfiedBy(const QSet<QString> &seen) const
{
    switch (m_kind) {
    case Kind::Name:
        return seen.contains(m_name);
    case Kind::And:
        for (const FlowCondition &c : m_children) {
            if (!c.isSatisfiedBy(seen))
                return false;
        }
        return true;
    case Kind::Or:
        for (const FlowCondition &c : m_children) {
            if (c.isSatisfiedBy(seen))
                return true;
        }
        return false;
    }
    return false;
}

bool FlowCondition::isMultiEventOr() const
{
    return m_kind == Kind::Or && m_children.size() > 1;
}

QStringList FlowCondition::orAlternatives() const
{
    if (m_kind == Kind::Name)
        return {m_name};
    QStringList out;
    if (m_kind == Kind::Or) {
        for (const FlowCondition &c : m_children) {
            for (const QString &n : c.orAlternatives()) {
                if (!out.contains(n))
                    out.append(n);
            }
        }
    }
    return out;
}

QString FlowCondition::toString() const
{
    if (m_kind == Kind::Name)
        return m_name;
    QStringList parts;
    for (const FlowCondition &c : m_children)
        parts << c.toString();
    return (m_kind == Kind::And ? QStringLiteral("and_(") : QStringLiteral("or_(")) + parts.join(QStringLiteral(", "))
         + QLatin1Char(')');
}

Json FlowCondition::toJson() const
{
    if (m_kind == Kind::Name)
        return Json(m_name);
    Json list = Json::array();
    for (const FlowCondition &c : m_children)
        list.push_back(c.toJson());
    return Json{{m_kind == Kind::And ? "and" : "or", list}};
}

FlowCondition FlowCondition::fromJson(const Json &json, const QString &where)
{
    return fromJson(json, where, 0);
}

FlowCondition FlowCondition::fromJson(const Json &json, const QString &where, int depth)
{
    if (json.is_string())
        return FlowCondition(QString::fromStdString(json.get<std::string>()));
    const auto bad = [&](const QString &what) {
        return Error(ErrorKind::InvalidArgument,
                     QStringLiteral("%1: %2; a trigger is a step name or label (a string), {\"and\": [...]} or {\"or\": [...]}")
                         .arg(where, what));
    };
    // Checked before anything is printed: dumping a deep value recurses as deep as it is nested.
    if (depth >= kMaxJsonDepth)
        throw bad(QStringLiteral("it is nested more than %1 deep (and / or inside one another)").arg(kMaxJsonDepth));
    if (!json.is_object() || json.size() != 1)
        throw bad(QStringLiteral("%1 is not a trigger").arg(brief(json).left(200)));
    const auto it = json.begin();
    const bool isAnd = it.key() == "and";
    if (!isAnd && it.key() != "or")
        throw bad(QStringLiteral("\"%1\" is neither \"and\" nor \"or\"").arg(QString::fromStdString(it.key())));
    if (!it.value().is_array() || it.value().empty())
        throw bad(QStringLiteral("\"%1\" needs a non-empty array of triggers").arg(QString::fromStdString(it.key())));
    QList<FlowCondition> children;
    for (const Json &c : it.value())
        children << fromJson(c, where, depth + 1);
    return isAnd ? all(children) : any(children);
}

bool FlowCondition::operator==(const FlowCondition &other) const
{
    return m_kind == other.m_kind && m_name == other.m_name && m_children == other.m_children;
}

} // namespace mneme
