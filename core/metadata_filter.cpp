#include <mneme/core/metadata_filter.h>

#include <mneme/core/error.h>

#include <map>
#include <optional>

namespace mneme {

namespace {

constexpr int kMaxDepth = 8;

const std::map<std::string, MetadataFilter::Op> &operators()
{
    static const std::map<std::string, MetadataFilter::Op> ops = {
        {"$eq", MetadataFilter::Op::Eq},
        {"$ne", MetadataFilter::Op::Ne},
        {"$gt", MetadataFilter::Op::Gt},
        {"$gte", MetadataFilter::Op::Gte},
        {"$lt", MetadataFilter::Op::Lt},
        {"$lte", MetadataFilter::Op::Lte},
        {"$in", MetadataFilter::Op::In},
        {"$nin", MetadataFilter::Op::Nin},
        {"$exists", MetadataFilter::Op::Exists},
    };
    return ops;
}

[[noreturn]] void refuse(const QString &why)
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("metadata filter: %1. Write conditions as {\"key\": value} or {\"key\": {\"$gte\": 2}} with "
                               "$eq, $ne, $gt, $gte, $lt, $lte, $in, $nin or $exists")
                    .arg(why));
}

// A key or an operator for a message: quoted, a bounded prefix of a long one (Error::quoted()).
QString keyText(const std::string &key)
{
    return Error::quoted(QString::fromStdString(key));
}

// A value for a message, as JSON: a bounded prefix of a long one.
QString valueText(const Json &value)
{
    return Error::quoted(QString::fromStdString(value.dump(-1, ' ', false, Json::error_handler_t::replace)));
}

bool isOperatorObject(const Json &v)
{
    if (!v.is_object() || v.empty())
        return false;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (!it.key().empty() && it.key().front() == '$')
            return true;
    return false;
}

// -1, 0, 1, or nothing when the two cannot be ordered.
std::optional<int> order(const Json &a, const Json &b)
{
    if (a.is_number() && b.is_number()) {
        const double x = a.get<double>(), y = b.get<double>();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.get_ref<const std::string &>().compare(b.get_ref<const std::string &>());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    return std::nullopt;
}

bool contains(const Json &list, const Json &value)
{
    for (const Json &v : list)
        if (v == value)
            return true;
    return false;
}

} // namespace

MetadataFilter MetadataFilter::parse(const Json &document)
{
    MetadataFilter f;
    if (document.is_null())
        return f;
    // Copying and comparing values recurse once per level: a filter nests no deeper than JSON read
    // from outside may.
    if (const int depth = jsonDepth(document); depth > kJsonMaxDepth)
        refuse(QStringLiteral("it nests %1 levels deep, more than the %2 JSON from outside may").arg(depth).arg(kJsonMaxDepth));
    f.read(document, 0);
    return f;
}

void MetadataFilter::read(const Json &document, int depth)
{
    if (!document.is_object())
        refuse(QStringLiteral("the filter must be a JSON object, not %1").arg(valueText(document)));
    if (depth > kMaxDepth)
        refuse(QStringLiteral("\"$and\" is nested more than %1 levels deep").arg(kMaxDepth));
    for (auto it = document.begin(); it != document.end(); ++it) {
        const std::string &key = it.key();
        const Json &value = it.value();
        if (key == "$and") {
            if (!value.is_array())
                refuse(QStringLiteral("\"$and\" takes a list of filter objects"));
            for (const Json &part : value)
                read(part, depth + 1);
            continue;
        }
        if (key.empty())
            refuse(QStringLiteral("a key is empty"));
        if (key.front() == '$')
            refuse(QStringLiteral("%1 is not a key: only \"$and\" may stand at the top; put operators under a key, "
                                  "as in {\"priority\": {%1: 2}}")
                       .arg(keyText(key)));
        if (!isOperatorObject(value)) {
            m_conditions.push_back(Condition{key, Op::Eq, value});
            continue;
        }
        for (auto op = value.begin(); op != value.end(); ++op) {
            const auto known = operators().find(op.key());
            if (known == operators().end())
                refuse(QStringLiteral("%1 under %2 is not an operator (an object with operators holds nothing "
                                      "else)")
                           .arg(keyText(op.key()), keyText(key)));
            Condition c{key, known->second, op.value()};
            switch (c.op) {
            case Op::In:
            case Op::Nin:
                if (!c.value.is_array())
                    refuse(QStringLiteral("%1 of %2 takes a list of values").arg(keyText(op.key()), keyText(key)));
                break;
            case Op::Exists:
                if (!c.value.is_boolean())
                    refuse(QStringLiteral("\"$exists\" of %1 takes true or false").arg(keyText(key)));
                break;
            case Op::Gt:
            case Op::Gte:
            case Op::Lt:
            case Op::Lte:
                if (!c.value.is_number() && !c.value.is_string())
                    refuse(QStringLiteral("%1 of %2 compares with a number or a string, not %3")
                               .arg(keyText(op.key()), keyText(key), valueText(c.value)));
                break;
            case Op::Eq:
            case Op::Ne:
                break;
            }
            m_conditions.push_back(std::move(c));
        }
    }
}

Json MetadataFilter::both(const Json &a, const Json &b)
{
    const bool aEmpty = a.is_null() || (a.is_object() && a.empty());
    const bool bEmpty = b.is_null() || (b.is_object() && b.empty());
    if (aEmpty)
        return bEmpty ? Json::object() : b;
    if (bEmpty)
        return a;
    return Json{{"$and", Json::array({a, b})}};
}

bool MetadataFilter::holds(const Condition &c, const Json *value)
{
    switch (c.op) {
    case Op::Exists:
        return (value != nullptr) == c.value.get<bool>();
    case Op::Ne:
        return !value || *value != c.value;
    case Op::Nin:
        return !value || !contains(c.value, *value);
    default:
        break;
    }
    if (!value)
        return false;
    switch (c.op) {
    case Op::Eq:
        return *value == c.value;
    case Op::In:
        return contains(c.value, *value);
    case Op::Gt:
    case Op::Gte:
    case Op::Lt:
    case Op::Lte: {
        const std::optional<int> o = order(*value, c.value);
        if (!o)
            return false;
        return c.op == Op::Gt ? *o > 0 : c.op == Op::Gte ? *o >= 0
                                   : c.op == Op::Lt      ? *o < 0
                                                         : *o <= 0;
    }
    default:
        return false;
    }
}

bool MetadataFilter::matches(const Json &metadata) const
{
    for (const Condition &c : m_conditions) {
        const Json *value = nullptr;
        if (metadata.is_object()) {
            const auto it = metadata.find(c.key);
            if (it != metadata.end())
                value = &*it;
        }
        if (!holds(c, value))
            return false;
    }
    return true;
}

QString MetadataFilter::opName(Op op)
{
    switch (op) {
    case Op::Eq: return QStringLiteral("$eq");
    case Op::Ne: return QStringLiteral("$ne");
    case Op::Gt: return QStringLiteral("$gt");
    case Op::Gte: return QStringLiteral("$gte");
    case Op::Lt: return QStringLiteral("$lt");
    case Op::Lte: return QStringLiteral("$lte");
    case Op::In: return QStringLiteral("$in");
    case Op::Nin: return QStringLiteral("$nin");
    case Op::Exists: return QStringLiteral("$exists");
    }
    return QString();
}

} // namespace mneme
