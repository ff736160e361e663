#include "memory_operations.h"

#include "source_view.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QSet>
#include <cmath>

namespace mneme::cli {

namespace {

constexpr int kMaxItems = 1000;

QString shown(const Json &value)
{
    QString text = QString::fromStdString(value.dump(-1, ' ', false, Json::error_handler_t::replace));
    return text.size() > 60 ? text.left(57) + QStringLiteral("...") : text;
}

// The arguments of one operation, read key by key; finish() refuses the keys nobody asked for.
class Args
{
public:
    Args(const Json &json, const char *operation, bool stringNumbers)
        : m_json(json.is_null() ? Json::object() : json), m_op(QLatin1String(operation)), m_stringNumbers(stringNumbers)
    {
        if (!m_json.is_object())
            fail(QStringLiteral("the arguments must be a JSON object, not %1").arg(QLatin1String(m_json.type_name())));
    }

    [[noreturn]] void fail(const QString &problem) const
    {
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1: %2").arg(m_op, problem));
    }

    const Json *find(const char *key)
    {
        m_known << QLatin1String(key);
        const auto it = m_json.find(key);
        return it == m_json.end() || it->is_null() ? nullptr : &*it;
    }

    std::optional<QString> string(const char *key)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        if (!v->is_string())
            fail(QStringLiteral("\"%1\" must be a string (got %2)").arg(QLatin1String(key), shown(*v)));
        return QString::fromStdString(v->get<std::string>());
    }

    QString requiredText(const char *key)
    {
        const std::optional<QString> v = string(key);
        if (!v || v->trimmed().isEmpty())
            fail(QStringLiteral("\"%1\" is required: a non-empty string").arg(QLatin1String(key)));
        return *v;
    }

    // A string or a list of strings; blank ones dropped.
    std::optional<QStringList> strings(const char *key)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        QStringList out;
        const auto take = [&](const Json &e) {
            if (!e.is_string())
                fail(QStringLiteral("\"%1\" must be a string or a list of strings (got %2)").arg(QLatin1String(key), shown(*v)));
            const QString s = QString::fromStdString(e.get<std::string>()).trimmed();
            if (!s.isEmpty())
                out << s;
        };
        if (v->is_array())
            for (const Json &e : *v)
                take(e);
        else
            take(*v);
        return out;
    }

    std::optional<QString> scope(const char *key)
    {
        const std::optional<QString> s = string(key);
        if (!s)
            return std::nullopt;
        QString problem;
        if (!ScopePath::isValid(*s, &problem))
            fail(QStringLiteral("\"%1\" is not a valid scope path: %2").arg(QLatin1String(key), problem));
        return ScopePath::normalize(*s);
    }

    std::optional<qint64> integer(const char *key, qint64 minimum, qint64 maximum)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        qint64 n = 0;
        bool ok = v->is_number_integer();
        if (ok)
            n = v->get<qint64>();
        else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() && std::abs(v->get<double>()) < 1e15) {
            n = qint64(v->get<double>());
            ok = true;
        } else if (m_stringNumbers && v->is_string())
            n = QString::fromStdString(v->get<std::string>()).trimmed().toLongLong(&ok);
        if (!ok || n < minimum || n > maximum)
            fail(QStringLiteral("\"%1\" must be an integer from %2 to %3 (got %4)").arg(QLatin1String(key)).arg(minimum).arg(maximum).arg(shown(*v)));
        return n;
    }

    std::optional<double> unit(const char *key)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        bool ok = v->is_number();
        double x = ok ? v->get<double>() : 0;
        if (!ok && m_stringNumbers && v->is_string())
            x = QString::fromStdString(v->get<std::string>()).trimmed().toDouble(&ok);
        if (!ok || !std::isfinite(x) || x < 0 || x > 1)
            fail(QStringLiteral("\"%1\" must be a number from 0 to 1 (got %2)").arg(QLatin1String(key), shown(*v)));
        return x;
    }

    std::optional<bool> boolean(const char *key)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        if (v->is_boolean())
            return v->get<bool>();
        if (m_stringNumbers && v->is_string()) {
            const std::string s = v->get<std::string>();
            if (s == "true" || s == "false")
                return s == "true";
        }
        fail(QStringLiteral("\"%1\" must be true or false (got %2)").arg(QLatin1String(key), shown(*v)));
    }

    std::optional<QDateTime> time(const char *key)
    {
        const std::optional<QString> s = string(key);
        if (!s)
            return std::nullopt;
        const QDateTime t = fromIso(s->trimmed());
        if (!t.isValid())
            fail(QStringLiteral("\"%1\" must be an ISO 8601 date or time such as 2024-05-01 or 2024-05-01T12:00:00Z (got "
                                "\"%2\")")
                     .arg(QLatin1String(key), *s));
        return t;
    }

    std::optional<Json> object(const char *key)
    {
        const Json *v = find(key);
        if (!v)
            return std::nullopt;
        if (!v->is_object())
            fail(QStringLiteral("\"%1\" must be a JSON object (got %2)").arg(QLatin1String(key), shown(*v)));
        return *v;
    }

    const Json &json() const { return m_json; }

    void finish() const
    {
        for (auto it = m_json.begin(); it != m_json.end(); ++it) {
            const QString key = QString::fromStdString(it.key());
            if (!m_known.contains(key)) {
                QStringList keys = m_known.values();
                keys.sort();
                fail(QStringLiteral("unknown argument \"%1\"; the arguments are %2").arg(key, keys.join(QStringLiteral(", "))));
            }
        }
    }

private:
    Json m_json;
    QString m_op;
    bool m_stringNumbers;
    QSet<QString> m_known;
};

// The fields of a record a save sets, as remember and the items of remember_many give them.
RememberOptions rememberOptions(Args &a, const RememberOptions &defaults = {})
{
    RememberOptions o = defaults;
    if (const auto s = a.scope("scope"))
        o.scope = *s;
    if (const auto c = a.strings("categories"))
        o.categories = *c;
    if (const auto i = a.unit("importance"))
        o.importance = *i;
    if (const auto p = a.boolean("private"))
        o.isPrivate = *p;
    if (const auto t = a.time("created_at"))
        o.createdAt = *t;
    if (const auto m = a.object("metadata")) {
        Json merged = o.metadata.is_object() ? o.metadata : Json::object();
        merged.update(*m);
        o.metadata = merged;
    }
    return o;
}

Json array(const auto &values)
{
    Json out = Json::array();
    for (const auto &v : values)
        out.push_back(v);
    return out;
}

} // namespace

MemoryOperations::MemoryOperations(SourceView &view, bool stringNumbers) : m_view(view), m_stringNumbers(stringNumbers) {}

Json MemoryOperations::remember(const Json &args)
{
    Args a(args, "remember", m_stringNumbers);
    const QString content = a.requiredText("content");
    const RememberOptions o = rememberOptions(a);
    a.finish();
    return m_view.remember(content, o);
}

Json MemoryOperations::rememberMany(const Json &args)
{
    Args a(args, "remember_many", m_stringNumbers);
    const Json *items = a.find("items");
    if (!items || !items->is_array() || items->empty())
        a.fail(QStringLiteral("\"items\" is required: a list of objects, each with \"content\""));
    if (items->size() > size_t(kMaxItems))
        a.fail(QStringLiteral("at most %1 items a request (got %2); send them in several requests").arg(kMaxItems).arg(items->size()));
    const RememberOptions defaults = rememberOptions(a);
    a.finish();
    QList<MemoryInput> inputs;
    int index = 0;
    for (const Json &item : *items) {
        ++index;
        const QString label = QStringLiteral("remember_many item %1").arg(index);
        Args one(item, label.toUtf8().constData(), m_stringNumbers);
        MemoryInput in;
        const std::optional<QString> content = one.string("content");
        if (!content)
            one.fail(QStringLiteral("\"content\" is required: a string (a blank one is dropped, as remember-many drops blank lines)"));
        in.content = *content;
        in.options = rememberOptions(one, defaults);
        one.finish();
        inputs << in;
    }
    const SaveResult r = m_view.rememberMany(inputs);
    return Json{{"stored", r.stored}, {"dropped", r.dropped + r.existing}, {"ids", array(r.ids)}};
}

namespace {

// The Mem0-style identities of a recall or forget ("user_id", "agent_id", "run_id").
template<typename Options>
void readIdentity(Args &a, Options &o)
{
    o.userId = a.string("user_id").value_or(QString()).trimmed();
    o.agentId = a.string("agent_id").value_or(QString()).trimmed();
    o.runId = a.string("run_id").value_or(QString()).trimmed();
}

} // namespace

Json MemoryOperations::recall(const Json &args)
{
    Args a(args, "recall", m_stringNumbers);
    const QString query = a.requiredText("query");
    RecallOptions o;
    if (const auto scopes = a.strings("scope")) {
        for (const QString &s : *scopes) {
            QString problem;
            if (!ScopePath::isValid(s, &problem))
                a.fail(QStringLiteral("\"scope\" holds an invalid scope path \"%1\": %2").arg(s, problem));
            o.scopes << ScopePath::normalize(s);
        }
    }
    o.categories = a.strings("categories").value_or(QStringList());
    o.limit = int(a.integer("limit", 1, 10000).value_or(o.limit));
    if (const auto depth = a.string("depth")) {
        if (*depth == QLatin1String("shallow"))
            o.depth = RecallDepth::Shallow;
        else if (*depth != QLatin1String("deep"))
            a.fail(QStringLiteral("\"depth\" must be \"shallow\" or \"deep\" (got \"%1\")").arg(*depth));
    }
    if (const auto now = a.time("now"))
        o.now = *now;
    o.metadata = a.object("where").value_or(Json::object());
    o.minRelevance = a.unit("min_relevance");
    o.threshold = a.unit("min_score");
    o.onlySource = a.string("only_source").value_or(QString()).trimmed();
    readIdentity(a, o);
    a.finish();
    return array(m_view.recall(query, o));
}

Json MemoryOperations::forget(const Json &args)
{
    Args a(args, "forget", m_stringNumbers);
    ForgetOptions o;
    o.scope = a.scope("scope");
    o.ids = a.strings("ids").value_or(QStringList());
    o.categories = a.strings("categories").value_or(QStringList());
    if (const auto t = a.time("older_than"))
        o.olderThan = *t;
    o.metadata = a.object("where").value_or(Json::object());
    readIdentity(a, o);
    a.finish();
    if (!o.scope && o.ids.isEmpty() && o.categories.isEmpty() && !o.olderThan.isValid() && o.metadata.empty()
        && o.userId.isEmpty() && o.agentId.isEmpty() && o.runId.isEmpty())
        a.fail(QStringLiteral("give at least one of \"scope\", \"ids\", \"categories\", \"older_than\", \"where\", "
                              "\"user_id\", \"agent_id\" or \"run_id\"; every record they all select is deleted"));
    return Json{{"deleted", m_view.forget(o)}};
}

Json MemoryOperations::update(const Json &args)
{
    Args a(args, "update", m_stringNumbers);
    const QString id = a.requiredText("id").trimmed();
    UpdateOptions o;
    if (const auto c = a.string("content")) {
        if (c->trimmed().isEmpty())
            a.fail(QStringLiteral("\"content\" must be a non-empty text"));
        o.content = *c;
    }
    o.scope = a.scope("scope");
    o.categories = a.strings("categories");
    o.importance = a.unit("importance");
    o.metadata = a.object("metadata");
    a.finish();
    if (!o.content && !o.scope && !o.categories && !o.importance && !o.metadata)
        a.fail(QStringLiteral("give at least one of \"content\", \"scope\", \"categories\", \"importance\" or \"metadata\""));
    return m_view.update(id, o);
}

Json MemoryOperations::get(const Json &args)
{
    Args a(args, "get", m_stringNumbers);
    const QString id = a.requiredText("id").trimmed();
    a.finish();
    const std::optional<MemoryRecord> r = m_view.get(id);
    if (!r)
        SourceView::unknownId(id);
    return *r;
}

Json MemoryOperations::history(const Json &args)
{
    Args a(args, "history", m_stringNumbers);
    const QString id = a.requiredText("id").trimmed();
    a.finish();
    return array(m_view.history(id));
}

Json MemoryOperations::undo(const Json &args)
{
    Args a(args, "undo", m_stringNumbers);
    const QString id = a.requiredText("id").trimmed();
    a.finish();
    return m_view.undo(id);
}

Json MemoryOperations::tree(const Json &args)
{
    Args a(args, "tree", m_stringNumbers);
    const QString scope = a.scope("scope").value_or(QStringLiteral("/"));
    const int depth = int(a.integer("max_depth", 0, 100).value_or(3));
    a.finish();
    return m_view.tree(scope, depth);
}

Json MemoryOperations::info(const Json &args)
{
    Args a(args, "info", m_stringNumbers);
    const QString scope = a.scope("scope").value_or(QStringLiteral("/"));
    a.finish();
    return m_view.info(scope);
}

Json MemoryOperations::scopes(const Json &args)
{
    Args a(args, "scopes", m_stringNumbers);
    const QString scope = a.scope("scope").value_or(QStringLiteral("/"));
    a.finish();
    return Json(m_view.scopes(scope));
}

Json MemoryOperations::categories(const Json &args)
{
    Args a(args, "categories", m_stringNumbers);
    const QString scope = a.scope("scope").value_or(QString());
    a.finish();
    Json out = Json::object();
    const QMap<QString, int> counts = m_view.categories(scope);
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        out[it.key().toStdString()] = it.value();
    return out;
}

Json MemoryOperations::list(const Json &args)
{
    Args a(args, "list", m_stringNumbers);
    const QString scope = a.scope("scope").value_or(QString());
    const int limit = int(a.integer("limit", 1, 10000).value_or(200));
    const int offset = int(a.integer("offset", 0, std::numeric_limits<int>::max()).value_or(0));
    a.finish();
    return array(m_view.list(scope, limit, offset));
}

Json MemoryOperations::extract(const Json &args)
{
    Args a(args, "extract", m_stringNumbers);
    const std::optional<QString> text = a.string("text");
    if (!text)
        a.fail(QStringLiteral("\"text\" is required: the text to split into facts"));
    a.finish();
    return Json(text->trimmed().isEmpty() ? QStringList() : m_view.extract(*text));
}

} // namespace mneme::cli
