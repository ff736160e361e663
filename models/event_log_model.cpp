#include <mneme/models/event_log_model.h>

#include <QLocale>
#include <QPointer>
#include <algorithm>
#include <deque>
#include <vector>

namespace mneme {

// One kept event (a scope with its end, or a single event). `children` is the tree of the bus
// (every kept event); `shown` the rows of the model under this node (the events of shown families
// whose nearest shown ancestor it is).
struct EventLogModel::Node
{
    Event event;
    std::optional<Event> end;
    QString family;
    QString streamed;
    Node *parent = nullptr;      // in the bus's tree (null: top level)
    Node *shownParent = nullptr; // the row above it (null: top level, or not shown)
    std::vector<Node *> children;
    std::vector<Node *> shown;
    bool visible = false;
};

struct EventLogModel::State
{
    QPointer<EventBus> bus;
    QMetaObject::Connection connection;
    QStringList families;
    int maxEvents = 10000;
    // Every kept event, oldest first; owned here.
    std::deque<std::unique_ptr<Node>> nodes;
    QHash<QString, Node *> byId;
    Node root; // its `children` are the top-level events, its `shown` the top-level rows
};

namespace {

QString firstOf(const Json &properties, std::initializer_list<const char *> keys)
{
    if (!properties.is_object())
        return {};
    for (const char *key : keys) {
        const auto it = properties.find(key);
        if (it != properties.end() && it->is_string() && !it->get<std::string>().empty())
            return QString::fromStdString(it->get<std::string>());
    }
    return {};
}

} // namespace

EventLogModel::EventLogModel(QObject *parent) : QAbstractItemModel(parent), d(std::make_unique<State>()) {}

EventLogModel::~EventLogModel() = default;

void EventLogModel::setEventBus(EventBus *bus)
{
    if (d->bus == bus)
        return;
    QObject::disconnect(d->connection);
    d->bus = bus;
    if (bus)
        d->connection = connect(bus, &EventBus::eventPublished, this, &EventLogModel::addEvent);
}

EventBus *EventLogModel::eventBus() const { return d->bus; }
QStringList EventLogModel::families() const { return d->families; }
int EventLogModel::maxEvents() const { return d->maxEvents; }
int EventLogModel::eventCount() const { return int(d->nodes.size()); }

QStringList EventLogModel::allFamilies()
{
    return {QStringLiteral("crew"), QStringLiteral("task"), QStringLiteral("agent"), QStringLiteral("llm"),
            QStringLiteral("tool"), QStringLiteral("memory"), QStringLiteral("flow"), QStringLiteral("chat"),
            QStringLiteral("mcp"), QStringLiteral("guardrail")};
}

QString EventLogModel::familyOf(const QString &type)
{
    if (type.startsWith(QLatin1String("flow_")) || type.startsWith(QLatin1String("method_execution_")))
        return QStringLiteral("flow");
    if (type.startsWith(QLatin1String("llm_guardrail_")))
        return QStringLiteral("guardrail");
    return type.section(QLatin1Char('_'), 0, 0);
}

void EventLogModel::setFamilies(const QStringList &families)
{
    if (d->families == families)
        return;
    d->families = families;
    rebuild();
    Q_EMIT familiesChanged();
}

void EventLogModel::setMaxEvents(int max)
{
    d->maxEvents = std::max(1, max);
    const int before = eventCount();
    while (int(d->nodes.size()) > d->maxEvents)
        dropOldest();
    if (before != eventCount())
        Q_EMIT eventCountChanged();
}

void EventLogModel::clear()
{
    beginResetModel();
    d->nodes.clear();
    d->byId.clear();
    d->root.children.clear();
    d->root.shown.clear();
    endResetModel();
    Q_EMIT eventCountChanged();
}

EventLogModel::Node *EventLogModel::shownAncestor(Node *node) const
{
    for (Node *p = node->parent; p; p = p->parent)
        if (p->visible)
            return p;
    return &d->root;
}

void EventLogModel::show(Node *node)
{
    node->visible = d->families.isEmpty() || d->families.contains(node->family);
    if (!node->visible)
        return;
    Node *above = shownAncestor(node);
    node->shownParent = above;
    const int row = int(above->shown.size());
    beginInsertRows(indexOf(above), row, row);
    above->shown.push_back(node);
    endInsertRows();
}

void EventLogModel::addEvent(const Event &event)
{
    // A stream chunk goes to its LLM call.
    if (event.type == QLatin1String(events::kLlmStreamChunk)) {
        Node *call = d->byId.value(event.parentId);
        const QString chunk = firstOf(event.properties, {"chunk"});
        if (call) {
            call->streamed += chunk;
            const QModelIndex at = call->visible ? indexOf(call) : QModelIndex();
            if (at.isValid())
                Q_EMIT dataChanged(at, indexOf(call, ColumnCount - 1), {StreamedTextRole});
            Q_EMIT textStreamed(chunk, at);
        } else {
            Q_EMIT textStreamed(chunk, QModelIndex());
        }
        return;
    }
    // An end completes its start's row.
    if (const QString startType = events::startTypeOf(event.type); !startType.isEmpty()) {
        if (Node *start = d->byId.value(event.parentId); start && !start->end && start->event.type == startType) {
            start->end = event;
            if (start->visible)
                Q_EMIT dataChanged(indexOf(start), indexOf(start, ColumnCount - 1));
            return;
        }
    }
    auto owned = std::make_unique<Node>();
    Node *node = owned.get();
    node->event = event;
    node->family = familyOf(event.type);
    node->parent = d->byId.value(event.parentId);
    (node->parent ? node->parent : &d->root)->children.push_back(node);
    d->nodes.push_back(std::move(owned));
    if (!event.id.isEmpty())
        d->byId.insert(event.id, node);
    show(node);
    while (int(d->nodes.size()) > d->maxEvents)
        dropOldest();
    Q_EMIT eventCountChanged();
}

void EventLogModel::dropOldest()
{
    if (d->root.children.empty())
        return;
    // The oldest top-level event and everything under it.
    Node *top = d->root.children.front();
    std::vector<Node *> doomed{top};
    for (std::size_t i = 0; i < doomed.size(); ++i)
        doomed.insert(doomed.end(), doomed[i]->children.begin(), doomed[i]->children.end());
    QSet<Node *> gone(doomed.begin(), doomed.end());
    // Its shown rows are its own subtree's, or top-level rows (none is under another top-level row).
    for (int row = int(d->root.shown.size()) - 1; row >= 0; --row) {
        if (!gone.contains(d->root.shown[std::size_t(row)]))
            continue;
        beginRemoveRows(QModelIndex(), row, row);
        d->root.shown.erase(d->root.shown.begin() + row);
        endRemoveRows();
    }
    d->root.children.erase(d->root.children.begin());
    for (Node *n : doomed)
        d->byId.remove(n->event.id);
    d->nodes.erase(std::remove_if(d->nodes.begin(), d->nodes.end(), [&](const std::unique_ptr<Node> &n) { return gone.contains(n.get()); }),
                   d->nodes.end());
}

void EventLogModel::rebuild()
{
    beginResetModel();
    d->root.shown.clear();
    for (const auto &n : d->nodes) {
        n->shown.clear();
        n->shownParent = nullptr;
        n->visible = d->families.isEmpty() || d->families.contains(n->family);
    }
    // Oldest first, so each row list keeps the order of publication.
    for (const auto &n : d->nodes) {
        if (!n->visible)
            continue;
        Node *above = shownAncestor(n.get());
        n->shownParent = above;
        above->shown.push_back(n.get());
    }
    endResetModel();
}

EventLogModel::Node *EventLogModel::nodeOf(const QModelIndex &index) const
{
    return index.isValid() ? static_cast<Node *>(index.internalPointer()) : &d->root;
}

QModelIndex EventLogModel::indexOf(const Node *node, int column) const
{
    if (!node || node == &d->root || !node->shownParent)
        return {};
    const std::vector<Node *> &siblings = node->shownParent->shown;
    const auto it = std::find(siblings.begin(), siblings.end(), node);
    if (it == siblings.end())
        return {};
    return createIndex(int(it - siblings.begin()), column, const_cast<Node *>(node));
}

QModelIndex EventLogModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || (parent.isValid() && parent.column() != 0))
        return {};
    const Node *p = nodeOf(parent);
    if (row < 0 || row >= int(p->shown.size()))
        return {};
    return createIndex(row, column, p->shown[std::size_t(row)]);
}

QModelIndex EventLogModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    return indexOf(nodeOf(child)->shownParent);
}

int EventLogModel::rowCount(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return 0;
    return int(nodeOf(parent)->shown.size());
}

int EventLogModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant EventLogModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Node *n = nodeOf(index);
    const Event &e = n->event;
    const bool scope = events::isStartType(e.type);
    const QString status = !scope  ? QString()
                         : !n->end ? QStringLiteral("running")
                         : (n->end->type.endsWith(QLatin1String("_failed")) || n->end->type.endsWith(QLatin1String("_error")))
                             ? QStringLiteral("failed")
                             : QStringLiteral("completed");
    const qint64 duration = n->end && n->end->timestamp.isValid() && e.timestamp.isValid() ? e.timestamp.msecsTo(n->end->timestamp) : -1;
    Json properties = e.properties.is_object() ? e.properties : Json::object();
    if (n->end && n->end->properties.is_object())
        properties.update(n->end->properties);
    const QString summary = firstOf(properties, {"task_name", "method_name", "tool_name", "agent_role", "crew_name", "flow_name",
                                                 "step", "query", "model", "server_name", "description", "error"});
    switch (role) {
    case TypeRole:
        return e.type;
    case FamilyRole:
        return n->family;
    case EventIdRole:
        return e.id;
    case ParentIdRole:
        return e.parentId;
    case TimestampRole:
        return e.timestamp;
    case PropertiesRole:
        return toQJson(properties).toVariantMap();
    case StatusRole:
        return status;
    case DurationRole:
        return duration;
    case SummaryRole:
        return summary;
    case StreamedTextRole:
        return n->streamed;
    case Qt::DisplayRole:
    case Qt::AccessibleTextRole:
        switch (index.column()) {
        case EventColumn:
            return scope ? e.type.chopped(int(qstrlen("_started"))) : e.type;
        case SummaryColumn:
            return summary.left(200);
        case StatusColumn:
            return status;
        case DurationColumn:
            return duration < 0 ? QString() : tr("%1 ms").arg(QLocale().toString(duration));
        case TimeColumn:
            return QLocale().toString(e.timestamp.toLocalTime().time(), QStringLiteral("HH:mm:ss.zzz"));
        default:
            return {};
        }
    case Qt::ToolTipRole:
        return n->streamed.isEmpty() ? summary : n->streamed;
    default:
        return {};
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::AccessibleTextRole))
        return QAbstractItemModel::headerData(section, orientation, role);
    switch (section) {
    case EventColumn:
        return tr("Event");
    case SummaryColumn:
        return tr("About");
    case StatusColumn:
        return tr("Status");
    case DurationColumn:
        return tr("Duration");
    case TimeColumn:
        return tr("Time");
    default:
        return {};
    }
}

QHash<int, QByteArray> EventLogModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractItemModel::roleNames();
    names.insert(TypeRole, "type");
    names.insert(FamilyRole, "family");
    names.insert(EventIdRole, "eventId");
    names.insert(ParentIdRole, "parentId");
    names.insert(TimestampRole, "timestamp");
    names.insert(PropertiesRole, "properties");
    names.insert(StatusRole, "status");
    names.insert(DurationRole, "durationMs");
    names.insert(SummaryRole, "summary");
    names.insert(StreamedTextRole, "streamedText");
    return names;
}

} // namespace mneme
