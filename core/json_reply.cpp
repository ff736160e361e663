#include <mneme/core/json_reply.h>

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <cmath>
#include <optional>
#include <vector>

namespace mneme::JsonReply {

namespace {

// ---------------------------------------------------------------------------------------------
// extract()
// ---------------------------------------------------------------------------------------------

const QString kThinkOpen = QStringLiteral("<think>");
const QString kThinkClose = QStringLiteral("</think>");
const QString kFence = QStringLiteral("```");

// Work budget of the balanced-value scan, in characters looked at: a safety net against replies
// built to make the scan quadratic. Real replies stay far below it.
constexpr qsizetype kScanBudget = 20'000'000;

std::optional<Json> tryParse(const QString &text)
{
    const QString t = text.trimmed();
    if (t.isEmpty())
        return std::nullopt;
    // Comments are tolerated: some models annotate their JSON with // remarks.
    Json j = parseJsonOrDiscarded(t.toStdString(), /*ignoreComments=*/true);
    if (j.is_discarded())
        return std::nullopt;
    return j;
}

// Removes reasoning: every <think>...</think> block, and everything up to a closing </think> that
// has no opening tag (chat templates that put the <think> into the prompt). An opening tag that is
// never closed is dropped on its own and the text after it is still searched.
QString stripThinking(QString s)
{
    for (;;) {
        const qsizetype open = s.indexOf(kThinkOpen, 0, Qt::CaseInsensitive);
        const qsizetype close = s.indexOf(kThinkClose, 0, Qt::CaseInsensitive);
        if (close >= 0 && (open < 0 || close < open)) {
            s.remove(0, close + kThinkClose.size());
            continue;
        }
        if (open < 0)
            return s;
        const qsizetype end = s.indexOf(kThinkClose, open + kThinkOpen.size(), Qt::CaseInsensitive);
        if (end < 0)
            s.remove(open, kThinkOpen.size());
        else
            s.remove(open, end + kThinkClose.size() - open);
    }
}

struct Fence
{
    QString lang;
    QString body;
};

// The ``` fenced blocks in order. The language tag is the word right after the opening fence; the
// body runs to the next fence, or to the end of the text when the model was cut off.
std::vector<Fence> fences(const QString &s)
{
    std::vector<Fence> out;
    qsizetype from = 0;
    for (;;) {
        const qsizetype open = s.indexOf(kFence, from);
        if (open < 0)
            break;
        qsizetype i = open + kFence.size();
        while (i < s.size() && s.at(i) == QLatin1Char('`'))
            ++i;
        const qsizetype langStart = i;
        while (i < s.size()
               && (s.at(i).isLetterOrNumber() || s.at(i) == QLatin1Char('_') || s.at(i) == QLatin1Char('-')
                   || s.at(i) == QLatin1Char('+') || s.at(i) == QLatin1Char('.')))
            ++i;
        Fence f;
        f.lang = s.mid(langStart, i - langStart).toLower();
        const qsizetype close = s.indexOf(kFence, i);
        f.body = s.mid(i, close < 0 ? -1 : close - i);
        out.push_back(std::move(f));
        if (close < 0)
            break;
        from = close + kFence.size();
        while (from < s.size() && s.at(from) == QLatin1Char('`'))
            ++from;
    }
    return out;
}

constexpr qsizetype kUnknown = -2;

// Finds the bracket closing the value that opens at `start` ('{' or '['); -1 when there is none.
// Brackets inside strings (with their escapes) do not count; a mismatched closing bracket ends the
// attempt. Every bracket opened on the way outside a string would see exactly the same characters
// from its own start, so its outcome is recorded in `ends` too: a reply full of unclosed brackets
// (a deep value cut off by the token limit) is still scanned in linear time.
qsizetype balancedEnd(const QString &s, qsizetype start, std::vector<qsizetype> &ends, qsizetype &budget)
{
    std::vector<qsizetype> open;
    bool inString = false;
    bool escaped = false;
    const auto fail = [&] {
        for (const qsizetype p : open)
            ends[size_t(p)] = -1;
        return qsizetype(-1);
    };
    for (qsizetype k = start; k < s.size(); ++k) {
        if (--budget < 0)
            return -1;
        const char16_t c = s.at(k).unicode();
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == u'\\')
                escaped = true;
            else if (c == u'"')
                inString = false;
            continue;
        }
        switch (c) {
        case u'"':
            inString = true;
            break;
        case u'{':
        case u'[':
            open.push_back(k);
            break;
        case u'}':
        case u']': {
            const char16_t opener = s.at(open.back()).unicode();
            if ((c == u'}') != (opener == u'{'))
                return fail();
            ends[size_t(open.back())] = k;
            open.pop_back();
            if (open.empty())
                return k;
            break;
        }
        default:
            break;
        }
    }
    return fail();
}

// The first balanced {...} or [...] in `s` that parses.
std::optional<Json> firstBalancedValue(const QString &s)
{
    std::vector<qsizetype> ends(size_t(s.size()), kUnknown);
    qsizetype budget = kScanBudget;
    for (qsizetype i = 0; i < s.size() && budget > 0; ++i) {
        const QChar c = s.at(i);
        if (c != QLatin1Char('{') && c != QLatin1Char('['))
            continue;
        const qsizetype known = ends[size_t(i)];
        const qsizetype end = known == kUnknown ? balancedEnd(s, i, ends, budget) : known;
        if (end < 0)
            continue;
        if (auto j = tryParse(s.mid(i, end - i + 1)))
            return j;
    }
    return std::nullopt;
}

QString quote(const QString &reply)
{
    constexpr qsizetype kMax = 120;
    const QString s = reply.simplified();
    if (s.size() <= kMax)
        return s;
    return s.left(kMax) + QStringLiteral("…");
}

// ---------------------------------------------------------------------------------------------
// validate()
// ---------------------------------------------------------------------------------------------

constexpr int kMaxDepth = 256;

QString show(const Json &v)
{
    constexpr qsizetype kMax = 80;
    QString s = QString::fromStdString(v.dump(-1, ' ', false, Json::error_handler_t::replace));
    if (s.size() > kMax)
        s = s.left(kMax) + QStringLiteral("…");
    return s;
}

QString typeName(const Json &v)
{
    switch (v.type()) {
    case Json::value_t::null:
        return QStringLiteral("null");
    case Json::value_t::boolean:
        return QStringLiteral("boolean");
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
        return QStringLiteral("number");
    case Json::value_t::string:
        return QStringLiteral("string");
    case Json::value_t::array:
        return QStringLiteral("array");
    case Json::value_t::object:
        return QStringLiteral("object");
    default:
        return QStringLiteral("unknown");
    }
}

bool isInteger(const Json &v)
{
    if (v.is_number_integer())
        return true;
    if (!v.is_number_float())
        return false;
    const double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
}

bool hasType(const Json &v, const std::string &t)
{
    if (t == "null")
        return v.is_null();
    if (t == "boolean")
        return v.is_boolean();
    if (t == "integer")
        return isInteger(v);
    if (t == "number")
        return v.is_number();
    if (t == "string")
        return v.is_string();
    if (t == "array")
        return v.is_array();
    if (t == "object")
        return v.is_object();
    return true; // an unknown type name constrains nothing
}

// "a", "a or b", "a, b or c"
QString alternatives(const QStringList &items)
{
    if (items.size() <= 1)
        return items.value(0);
    return QStringList(items.mid(0, items.size() - 1)).join(QStringLiteral(", ")) + QStringLiteral(" or ")
         + items.last();
}

QString childPath(const QString &path, const std::string &key)
{
    static const QRegularExpression identifier(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    const QString k = QString::fromStdString(key);
    if (identifier.match(k).hasMatch())
        return path + QLatin1Char('.') + k;
    return path + QLatin1Char('[') + show(Json(key)) + QLatin1Char(']');
}

QString itemPath(const QString &path, size_t index)
{
    return path + QLatin1Char('[') + QString::number(index) + QLatin1Char(']');
}

qsizetype codePoints(const std::string &s)
{
    qsizetype n = 0;
    for (const unsigned char c : s) {
        if ((c & 0xC0) != 0x80)
            ++n;
    }
    return n;
}

QString plural(qint64 n, const QString &one, const QString &many)
{
    return QString::number(n) + QLatin1Char(' ') + (n == 1 ? one : many);
}

class Validator
{
public:
    explicit Validator(const Json &root) : m_root(root) {}

    QStringList run(const Json &v, const Json &s, const QString &path, int depth) const
    {
        QStringList errors;
        check(v, s, path, depth, errors);
        return errors;
    }

private:
    const Json *resolve(const std::string &ref) const
    {
        if (ref.empty() || ref.front() != '#')
            return nullptr;
        const std::string pointer = ref.substr(1);
        if (pointer.empty())
            return &m_root;
        try {
            return &m_root.at(Json::json_pointer(pointer));
        } catch (const Json::exception &) {
            return nullptr;
        }
    }

    void check(const Json &v, const Json &s, const QString &path, int depth, QStringList &errors) const
    {
        if (depth > kMaxDepth) {
            errors << QStringLiteral("%1: the schema nests too deeply (a circular $ref?)").arg(path);
            return;
        }
        if (s.is_boolean()) {
            if (!s.get<bool>())
                errors << QStringLiteral("%1: no value is allowed here").arg(path);
            return;
        }
        if (!s.is_object())
            return;

        if (const auto it = s.find("$ref"); it != s.end() && it->is_string()) {
            const std::string ref = it->get<std::string>();
            if (const Json *target = resolve(ref))
                check(v, *target, path, depth + 1, errors);
            else
                errors << QStringLiteral("%1: cannot resolve $ref %2").arg(path, show(*it));
        }

        if (!checkType(v, s, path, errors))
            return; // the other keywords would only repeat the mismatch

        if (const auto it = s.find("enum"); it != s.end() && it->is_array()) {
            bool found = false;
            for (const Json &e : *it)
                found = found || e == v;
            if (!found)
                errors << QStringLiteral("%1: %2 is not one of %3").arg(path, show(v), show(*it));
        }
        if (const auto it = s.find("const"); it != s.end() && *it != v)
            errors << QStringLiteral("%1: expected %2, got %3").arg(path, show(*it), show(v));

        if (v.is_number())
            checkNumber(v, s, path, errors);
        else if (v.is_string())
            checkString(v, s, path, errors);
        else if (v.is_array())
            checkArray(v, s, path, depth, errors);
        else if (v.is_object())
            checkObject(v, s, path, depth, errors);

        checkCombinators(v, s, path, depth, errors);
    }

    bool checkType(const Json &v, const Json &s, const QString &path, QStringList &errors) const
    {
        const auto it = s.find("type");
        if (it == s.end())
            return true;
        QStringList names;
        bool ok = false;
        if (it->is_string()) {
            names << QString::fromStdString(it->get<std::string>());
            ok = hasType(v, it->get<std::string>());
        } else if (it->is_array()) {
            for (const Json &t : *it) {
                if (!t.is_string())
                    continue;
                names << QString::fromStdString(t.get<std::string>());
                ok = ok || hasType(v, t.get<std::string>());
            }
            if (names.isEmpty())
                return true;
        } else {
            return true;
        }
        if (!ok)
            errors << QStringLiteral("%1: expected %2, got %3").arg(path, alternatives(names), typeName(v));
        return ok;
    }

    void checkNumber(const Json &v, const Json &s, const QString &path, QStringList &errors) const
    {
        const double x = v.get<double>();
        const auto number = [&](const char *key) -> std::optional<double> {
            const auto it = s.find(key);
            if (it == s.end() || !it->is_number())
                return std::nullopt;
            return it->get<double>();
        };
        const auto flag = [&](const char *key) {
            const auto it = s.find(key);
            return it != s.end() && it->is_boolean() && it->get<bool>();
        };
        const QString shown = show(v);
        // Draft 4 spells exclusiveness as a boolean next to minimum / maximum.
        if (const auto min = number("minimum")) {
            if (flag("exclusiveMinimum") ? !(x > *min) : x < *min)
                errors << QStringLiteral("%1: %2 is less than the %3minimum %4")
                              .arg(path, shown, flag("exclusiveMinimum") ? QStringLiteral("exclusive ") : QString(),
                                   show(s.at("minimum")));
        }
        if (const auto max = number("maximum")) {
            if (flag("exclusiveMaximum") ? !(x < *max) : x > *max)
                errors << QStringLiteral("%1: %2 is greater than the %3maximum %4")
                              .arg(path, shown, flag("exclusiveMaximum") ? QStringLiteral("exclusive ") : QString(),
                                   show(s.at("maximum")));
        }
        if (const auto min = number("exclusiveMinimum"); min && !(x > *min))
            errors << QStringLiteral("%1: %2 must be greater than %3").arg(path, shown, show(s.at("exclusiveMinimum")));
        if (const auto max = number("exclusiveMaximum"); max && !(x < *max))
            errors << QStringLiteral("%1: %2 must be less than %3").arg(path, shown, show(s.at("exclusiveMaximum")));
    }

    void checkString(const Json &v, const Json &s, const QString &path, QStringList &errors) const
    {
        const qsizetype n = codePoints(v.get_ref<const std::string &>());
        if (const auto it = s.find("minLength"); it != s.end() && it->is_number() && n < it->get<double>())
            errors << QStringLiteral("%1: expected at least %2, got %3")
                          .arg(path, plural(it->get<qint64>(), QStringLiteral("character"), QStringLiteral("characters")))
                          .arg(n);
        if (const auto it = s.find("maxLength"); it != s.end() && it->is_number() && n > it->get<double>())
            errors << QStringLiteral("%1: expected at most %2, got %3")
                          .arg(path, plural(it->get<qint64>(), QStringLiteral("character"), QStringLiteral("characters")))
                          .arg(n);
        if (const auto it = s.find("pattern"); it != s.end() && it->is_string()) {
            const QRegularExpression re(QString::fromStdString(it->get<std::string>()));
            if (re.isValid() && !re.match(QString::fromStdString(v.get<std::string>())).hasMatch())
                errors << QStringLiteral("%1: %2 does not match the pattern %3").arg(path, show(v), show(*it));
        }
    }

    void checkArray(const Json &v, const Json &s, const QString &path, int depth, QStringList &errors) const
    {
        const auto n = static_cast<qint64>(v.size());
        if (const auto it = s.find("minItems"); it != s.end() && it->is_number() && n < it->get<double>())
            errors << QStringLiteral("%1: expected at least %2, got %3")
                          .arg(path, plural(it->get<qint64>(), QStringLiteral("item"), QStringLiteral("items")))
                          .arg(n);
        if (const auto it = s.find("maxItems"); it != s.end() && it->is_number() && n > it->get<double>())
            errors << QStringLiteral("%1: expected at most %2, got %3")
                          .arg(path, plural(it->get<qint64>(), QStringLiteral("item"), QStringLiteral("items")))
                          .arg(n);

        // prefixItems (2020-12) and an array-valued items (draft 7) check positions; a schema-valued
        // items checks every element after the prefix.
        size_t positional = 0;
        const auto positions = [&](const Json &list) {
            for (size_t i = 0; i < list.size() && i < v.size(); ++i)
                check(v[i], list[i], itemPath(path, i), depth + 1, errors);
            positional = list.size();
        };
        if (const auto it = s.find("prefixItems"); it != s.end() && it->is_array())
            positions(*it);
        if (const auto it = s.find("items"); it != s.end()) {
            if (it->is_array()) {
                positions(*it);
            } else if (it->is_object() || it->is_boolean()) {
                for (size_t i = positional; i < v.size(); ++i)
                    check(v[i], *it, itemPath(path, i), depth + 1, errors);
            }
        }
    }

    void checkObject(const Json &v, const Json &s, const QString &path, int depth, QStringList &errors) const
    {
        if (const auto it = s.find("required"); it != s.end() && it->is_array()) {
            for (const Json &name : *it) {
                if (name.is_string() && !v.contains(name.get<std::string>()))
                    errors << QStringLiteral("%1: missing required property %2").arg(path, show(name));
            }
        }

        const auto props = s.find("properties");
        const bool hasProps = props != s.end() && props->is_object();
        std::vector<std::pair<QRegularExpression, const Json *>> patterns;
        if (const auto it = s.find("patternProperties"); it != s.end() && it->is_object()) {
            for (auto p = it->begin(); p != it->end(); ++p) {
                QRegularExpression re(QString::fromStdString(p.key()));
                if (re.isValid())
                    patterns.emplace_back(std::move(re), &p.value());
            }
        }
        const auto additional = s.find("additionalProperties");

        for (auto m = v.begin(); m != v.end(); ++m) {
            const QString at = childPath(path, m.key());
            bool known = false;
            if (hasProps) {
                if (const auto p = props->find(m.key()); p != props->end()) {
                    known = true;
                    check(m.value(), *p, at, depth + 1, errors);
                }
            }
            const QString key = QString::fromStdString(m.key());
            for (const auto &[re, schema] : patterns) {
                if (re.match(key).hasMatch()) {
                    known = true;
                    check(m.value(), *schema, at, depth + 1, errors);
                }
            }
            if (known || additional == s.end())
                continue;
            if (additional->is_boolean()) {
                if (!additional->get<bool>())
                    errors << QStringLiteral("%1: unexpected property %2").arg(path, show(Json(m.key())));
            } else if (additional->is_object()) {
                check(m.value(), *additional, at, depth + 1, errors);
            }
        }
    }

    void checkCombinators(const Json &v, const Json &s, const QString &path, int depth, QStringList &errors) const
    {
        if (const auto it = s.find("allOf"); it != s.end() && it->is_array()) {
            for (const Json &branch : *it)
                check(v, branch, path, depth + 1, errors);
        }
        if (const auto it = s.find("not"); it != s.end() && (it->is_object() || it->is_boolean())) {
            if (run(v, *it, path, depth + 1).isEmpty())
                errors << QStringLiteral("%1: must not match the schema under \"not\"").arg(path);
        }
        for (const char *keyword : {"anyOf", "oneOf"}) {
            const auto it = s.find(keyword);
            if (it == s.end() || !it->is_array() || it->empty())
                continue;
            QStringList why;
            QStringList matching;
            int index = 0;
            for (const Json &branch : *it) {
                ++index;
                const QStringList e = run(v, branch, path, depth + 1);
                if (e.isEmpty())
                    matching << QString::number(index);
                else
                    why << QStringLiteral("%1) %2").arg(index).arg(e.first());
            }
            const QString kw = QString::fromLatin1(keyword);
            if (matching.isEmpty()) {
                errors << QStringLiteral("%1: matches none of the %2 alternatives of %3 (%4)")
                              .arg(path)
                              .arg(it->size())
                              .arg(kw, why.join(QStringLiteral("; ")));
            } else if (kw == QLatin1String("oneOf") && matching.size() > 1) {
                errors << QStringLiteral("%1: matches %2 alternatives of oneOf (%3), expected exactly one")
                              .arg(path)
                              .arg(matching.size())
                              .arg(alternatives(matching).replace(QStringLiteral(" or "), QStringLiteral(" and ")));
            }
        }
    }

    const Json &m_root;
};

} // namespace

Json extract(const QString &reply)
{
    if (reply.trimmed().isEmpty())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("The model's reply is empty; a JSON value was expected."));

    const QString text = stripThinking(reply);

    // The whole reply is JSON (an object, an array or a bare scalar such as 42 or "x").
    if (auto j = tryParse(text))
        return *j;

    // A fenced block: first one labelled json, then any that parses.
    const std::vector<Fence> blocks = fences(text);
    for (const Fence &f : blocks) {
        if (f.lang.startsWith(QLatin1String("json"))) {
            if (auto j = tryParse(f.body))
                return *j;
        }
    }
    for (const Fence &f : blocks) {
        if (auto j = tryParse(f.body))
            return *j;
    }

    // The first balanced object or array that parses, whatever surrounds it.
    if (auto j = firstBalancedValue(text))
        return *j;

    throw Error(ErrorKind::MalformedReply,
                QStringLiteral("The model's reply contains no JSON value: \"%1\".").arg(quote(reply)));
}

QStringList validate(const Json &value, const Json &schema)
{
    return Validator(schema).run(value, schema, QStringLiteral("$"), 0);
}

QString instructionFor(const Json &schema)
{
    return QStringLiteral("Reply with exactly one JSON value that follows the JSON schema below. Write the JSON "
                          "only: no prose before or after it, no explanation, no code fence.\n\nJSON schema:\n")
         + QString::fromStdString(schema.dump(2, ' ', false, Json::error_handler_t::replace));
}

} // namespace mneme::JsonReply
