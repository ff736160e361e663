#include <mneme/runtime/console_listener.h>

namespace mneme {

namespace {

// Bounds what a long-running process keeps for depth lookups of events that are not scopes.
constexpr int kMaxRememberedDepths = 4096;
constexpr int kMaxValueChars = 120;

Json redacted(const Json &value)
{
    if (value.is_object()) {
        Json out = Json::object();
        for (auto it = value.begin(); it != value.end(); ++it) {
            if (!ConsoleListener::isSecretKey(QString::fromStdString(it.key())))
                out[it.key()] = redacted(it.value());
        }
        return out;
    }
    if (value.is_array()) {
        Json out = Json::array();
        for (const Json &e : value)
            out.push_back(redacted(e));
        return out;
    }
    return value;
}

QString shortened(QString text)
{
    text.replace(QLatin1Char('\n'), QLatin1String("\\n"));
    if (text.size() > kMaxValueChars)
        text = text.left(kMaxValueChars - 3) + QLatin1String("...");
    return text;
}

QString valueText(const Json &v)
{
    if (v.is_string())
        return QLatin1Char('"') + shortened(QString::fromStdString(v.get<std::string>())) + QLatin1Char('"');
    if (v.is_number_float()) {
        const double d = v.get<double>();
        return QString::number(d, 'f', d == double(qint64(d)) ? 0 : 1);
    }
    return shortened(QString::fromStdString(v.dump()));
}

} // namespace

ConsoleListener::ConsoleListener(EventBus *bus, FILE *out, QObject *parent) : QObject(parent), m_file(out)
{
    connect(bus, &EventBus::eventPublished, this, &ConsoleListener::onEvent, Qt::DirectConnection);
}

ConsoleListener::ConsoleListener(EventBus *bus, QString *out, QObject *parent) : QObject(parent), m_string(out)
{
    connect(bus, &EventBus::eventPublished, this, &ConsoleListener::onEvent, Qt::DirectConnection);
}

bool ConsoleListener::isSecretKey(const QString &name)
{
    const QString k = name.toLower();
    // Token counts (prompt_tokens, ...) are not secrets.
    const bool token = k.contains(QLatin1String("token")) && !k.endsWith(QLatin1String("_tokens"));
    return token || k.contains(QLatin1String("api_key")) || k.contains(QLatin1String("apikey"))
        || k.contains(QLatin1String("authorization")) || k.contains(QLatin1String("password"))
        || k.contains(QLatin1String("secret"));
}

QString ConsoleListener::format(const Event &event, int depth, std::optional<qint64> durationMs)
{
    QString line = event.timestamp.toUTC().toString(QStringLiteral("HH:mm:ss.zzz")) + QLatin1String("  ");
    line += QString(2 * std::max(depth, 0), QLatin1Char(' ')) + event.type;
    if (!event.agentId.isEmpty())
        line += QLatin1String("  agent=") + event.agentId;
    if (!event.taskId.isEmpty())
        line += QLatin1String("  task=") + event.taskId;
    const Json props = redacted(event.properties);
    // The error first: it is what a reader of a failing trace looks for.
    if (props.is_object() && props.contains("error"))
        line += QLatin1String("  error=") + valueText(props["error"]);
    if (props.is_object()) {
        for (auto it = props.begin(); it != props.end(); ++it) {
            // Lists of results are summarised by their counts.
            if (it.key() == "error" || it.key() == "results")
                continue;
            line += QLatin1String("  ") + QString::fromStdString(it.key()) + QLatin1Char('=') + valueText(it.value());
        }
    }
    if (durationMs)
        line += QStringLiteral("  (%1 ms)").arg(*durationMs);
    return line;
}

void ConsoleListener::onEvent(const Event &event)
{
    // One lock for the bookkeeping and the write, so lines keep the order of the events.
    QMutexLocker lock(&m_mutex);
    {
        int depth = 0;
        std::optional<qint64> duration;
        if (auto it = m_open.find(event.parentId); it != m_open.end() && !events::startTypeOf(event.type).isEmpty()) {
            // An end: printed at its start's depth.
            depth = it->depth;
            duration = it->started.msecsTo(event.timestamp);
            m_open.erase(it);
        } else if (auto open = m_open.constFind(event.parentId); open != m_open.constEnd()) {
            depth = open->depth + 1;
        } else if (auto d = m_depths.constFind(event.parentId); d != m_depths.constEnd()) {
            depth = *d + 1;
        }
        if (events::isStartType(event.type))
            m_open.insert(event.id, Open{depth, event.timestamp});
        if (m_depths.size() >= kMaxRememberedDepths)
            m_depths.clear();
        m_depths.insert(event.id, depth);
        write(format(event, depth, duration));
    }
}

void ConsoleListener::write(const QString &line)
{
    if (m_file) {
        const QByteArray bytes = (line + QLatin1Char('\n')).toUtf8();
        std::fwrite(bytes.constData(), 1, size_t(bytes.size()), m_file);
        std::fflush(m_file);
    }
    if (m_string)
        m_string->append(line + QLatin1Char('\n'));
}

} // namespace mneme
