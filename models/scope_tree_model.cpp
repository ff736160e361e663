#include <mneme/models/scope_tree_model.h>

#include "models/future_watch_p.h"
#include "models/refresher_p.h"
#include <mneme/memory/memory.h>

#include <vector>

namespace mneme {

struct ScopeTreeModel::Node
{
    QString path;
    int count = 0;
    bool hasChildren = false; // known from the read one level above
    bool loaded = false;      // its children were read
    bool loading = false;     // a first read of its children is under way
    Node *parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;

    int row() const
    {
        if (!parent)
            return 0;
        for (std::size_t i = 0; i < parent->children.size(); ++i)
            if (parent->children[i].get() == this)
                return int(i);
        return -1;
    }
    QString name() const
    {
        if (!parent || !parent->parent) // the top row names its whole path
            return path;
        return path.mid(path.lastIndexOf(QLatin1Char('/')) + 1);
    }
};

struct ScopeTreeModel::State
{
    QPointer<Memory> memory;
    Node invisible;         // its one child is the top row (none before the first read)
    quint64 generation = 0; // bumped by setMemory(): reads of an older one are dropped
    int reading = 0;        // reads under way
    int refreshing = 0;     // reads of the refresh under way
    models::Refresher *refresher = nullptr;
    QMetaObject::Connection changed;
    QString lastError;
    ReadContext reader;
};

ScopeTreeModel::ScopeTreeModel(QObject *parent) : QAbstractItemModel(parent), d(std::make_unique<State>())
{
    d->refresher = new models::Refresher(this, [this] { startRefresh(); });
}

ScopeTreeModel::~ScopeTreeModel() = default;

void ScopeTreeModel::setMemory(Memory *memory)
{
    if (d->memory == memory && memory)
        return;
    QObject::disconnect(d->changed);
    d->refresher->cancel();
    ++d->generation;
    const bool wasLoading = isLoading();
    d->reading = 0;
    d->refreshing = 0;
    beginResetModel();
    d->invisible.children.clear();
    d->memory = memory;
    endResetModel();
    if (memory) {
        d->changed = connect(memory, &Memory::recordsChanged, d->refresher, &models::Refresher::request, Qt::QueuedConnection);
        load(QString());
    }
    if (wasLoading != isLoading())
        Q_EMIT loadingChanged();
}

Memory *ScopeTreeModel::memory() const
{
    return d->memory;
}

void ScopeTreeModel::setReader(const ReadContext &reader)
{
    if (d->reader == reader)
        return;
    d->reader = reader;
    Memory *m = d->memory;
    d->memory = nullptr; // setMemory() reloads only for another memory
    setMemory(m);
}

ReadContext ScopeTreeModel::reader() const
{
    return d->reader;
}

bool ScopeTreeModel::isLoading() const
{
    return d->reading > 0;
}

QString ScopeTreeModel::lastError() const
{
    return d->lastError;
}

void ScopeTreeModel::load(const QString &path)
{
    if (!d->memory)
        return;
    QFuture<ScopeNode> future;
    try {
        // Two levels: the children with their counts, and whether each has children of its own. The
        // memory takes paths relative to its root scope; the rows hold full ones.
        const QString root = d->memory->rootScope();
        const QString relative = root.isEmpty() || root == QLatin1String("/") || !path.startsWith(root) ? path : path.mid(root.size());
        future = d->memory->scopeTreeAsync(relative, 2, d->reader, -1);
    } catch (const Error &e) {
        fail(e.message());
        return;
    }
    if (d->reading++ == 0)
        Q_EMIT loadingChanged();
    const quint64 generation = d->generation;
    models::whenFinished(this, future, [this, generation, path](QFuture<ScopeNode> f) {
        if (generation != d->generation)
            return;
        QString error;
        const std::optional<ScopeNode> tree = models::resultOf(f, &error);
        if (tree)
            apply(*tree);
        else if (!error.isEmpty())
            fail(error);
        if (Node *n = path.isEmpty() ? nullptr : find(path))
            n->loading = false;
        readDone();
    });
}

void ScopeTreeModel::readDone()
{
    if (--d->reading == 0)
        Q_EMIT loadingChanged();
    if (d->refreshing > 0 && --d->refreshing == 0)
        d->refresher->finished();
}

void ScopeTreeModel::fail(const QString &message)
{
    d->lastError = message;
    Q_EMIT errorOccurred(message);
}

void ScopeTreeModel::apply(const ScopeNode &tree)
{
    Node *node = find(tree.path);
    if (!node) {
        if (!d->invisible.children.empty())
            return; // a scope removed since the read began
        // The first read: the top row.
        beginInsertRows(QModelIndex(), 0, 0);
        auto top = std::make_unique<Node>();
        top->path = tree.path;
        top->parent = &d->invisible;
        node = top.get();
        d->invisible.children.push_back(std::move(top));
        endInsertRows();
    }
    const bool first = !node->loaded;
    setChildren(node, tree);
    if (first)
        Q_EMIT childrenLoaded(indexOf(node));
}

void ScopeTreeModel::setChildren(Node *node, const ScopeNode &tree)
{
    if (node->count != tree.recordCount) {
        node->count = tree.recordCount;
        Q_EMIT dataChanged(indexOf(node, NameColumn), indexOf(node, CountColumn));
    }
    const QModelIndex parentIndex = indexOf(node);
    QSet<QString> wanted;
    for (const ScopeNode &c : tree.children)
        wanted.insert(c.path);
    // Scopes gone, from the last so that rows keep their numbers meanwhile.
    for (int i = int(node->children.size()) - 1; i >= 0; --i) {
        if (wanted.contains(node->children[std::size_t(i)]->path))
            continue;
        beginRemoveRows(parentIndex, i, i);
        node->children.erase(node->children.begin() + i);
        endRemoveRows();
    }
    // The store lists children in one order each time, so a scope not at its place is new.
    for (int i = 0; i < int(tree.children.size()); ++i) {
        const ScopeNode &c = tree.children[i];
        if (i < int(node->children.size()) && node->children[std::size_t(i)]->path == c.path) {
            Node *child = node->children[std::size_t(i)].get();
            const bool had = child->loaded ? !child->children.empty() : child->hasChildren;
            child->hasChildren = !c.children.isEmpty();
            if (child->count != c.recordCount) {
                child->count = c.recordCount;
                Q_EMIT dataChanged(index(i, NameColumn, parentIndex), index(i, CountColumn, parentIndex));
            }
            if (!child->loaded && had != child->hasChildren)
                Q_EMIT dataChanged(index(i, NameColumn, parentIndex), index(i, NameColumn, parentIndex));
            continue;
        }
        beginInsertRows(parentIndex, i, i);
        auto child = std::make_unique<Node>();
        child->path = c.path;
        child->count = c.recordCount;
        child->hasChildren = !c.children.isEmpty();
        child->parent = node;
        node->children.insert(node->children.begin() + i, std::move(child));
        endInsertRows();
    }
    node->loaded = true;
    node->loading = false;
}

void ScopeTreeModel::refresh()
{
    d->refresher->request();
}

void ScopeTreeModel::startRefresh()
{
    if (!d->memory) {
        d->refresher->finished();
        return;
    }
    // Every row whose children were read, the top one first.
    QStringList paths;
    std::vector<const Node *> todo;
    for (const auto &c : d->invisible.children)
        todo.push_back(c.get());
    while (!todo.empty()) {
        const Node *n = todo.back();
        todo.pop_back();
        if (!n->loaded)
            continue;
        paths << n->path;
        for (const auto &c : n->children)
            todo.push_back(c.get());
    }
    if (paths.isEmpty())
        paths << QString(); // nothing read yet: the top row
    d->refreshing = int(paths.size());
    for (const QString &p : std::as_const(paths))
        load(d->invisible.children.empty() ? QString() : p);
}

ScopeTreeModel::Node *ScopeTreeModel::find(const QString &path) const
{
    if (d->invisible.children.empty())
        return nullptr;
    Node *n = d->invisible.children.front().get();
    if (path.isEmpty() || path == n->path)
        return n;
    // Down the path, one segment at a time.
    if (!path.startsWith(n->path))
        return nullptr;
    while (n && n->path != path) {
        Node *next = nullptr;
        for (const auto &c : n->children) {
            if (path == c->path || path.startsWith(c->path + QLatin1Char('/'))) {
                next = c.get();
                break;
            }
        }
        n = next;
    }
    return n;
}

QModelIndex ScopeTreeModel::indexOfPath(const QString &path) const
{
    const Node *n = find(path);
    return n ? indexOf(n) : QModelIndex();
}

QString ScopeTreeModel::pathAt(const QModelIndex &index) const
{
    const Node *n = nodeOf(index);
    return n && n != &d->invisible ? n->path : QString();
}

ScopeTreeModel::Node *ScopeTreeModel::nodeOf(const QModelIndex &index) const
{
    if (!index.isValid())
        return &d->invisible;
    return static_cast<Node *>(index.internalPointer());
}

QModelIndex ScopeTreeModel::indexOf(const Node *node, int column) const
{
    if (!node || node == &d->invisible)
        return {};
    return createIndex(node->row(), column, const_cast<Node *>(node));
}

QModelIndex ScopeTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || (parent.isValid() && parent.column() != 0))
        return {};
    const Node *p = nodeOf(parent);
    if (row < 0 || row >= int(p->children.size()))
        return {};
    return createIndex(row, column, p->children[std::size_t(row)].get());
}

QModelIndex ScopeTreeModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    return indexOf(nodeOf(child)->parent);
}

int ScopeTreeModel::rowCount(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int ScopeTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

bool ScopeTreeModel::hasChildren(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return false;
    const Node *n = nodeOf(parent);
    return !n->children.empty() || (!n->loaded && n != &d->invisible && n->hasChildren);
}

bool ScopeTreeModel::canFetchMore(const QModelIndex &parent) const
{
    if (!parent.isValid() || parent.column() != 0)
        return false;
    const Node *n = nodeOf(parent);
    return n->hasChildren && !n->loaded;
}

void ScopeTreeModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent))
        return;
    Node *n = nodeOf(parent);
    if (n->loading)
        return;
    n->loading = true;
    load(n->path);
}

QVariant ScopeTreeModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Node *n = nodeOf(index);
    switch (role) {
    case Qt::DisplayRole:
        return index.column() == NameColumn ? QVariant(n->name()) : QVariant(QLocale().toString(n->count));
    case Qt::ToolTipRole:
        return tr("%1: %n record(s)", nullptr, n->count).arg(n->path);
    case Qt::AccessibleTextRole:
        return tr("%1, %n record(s)", nullptr, n->count).arg(n->path);
    case Qt::TextAlignmentRole:
        return index.column() == CountColumn ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    case PathRole:
        return n->path;
    case NameRole:
        return n->name();
    case RecordCountRole:
        return n->count;
    default:
        return {};
    }
}

QVariant ScopeTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::AccessibleTextRole))
        return {};
    switch (section) {
    case NameColumn:
        return tr("Scope");
    case CountColumn:
        return tr("Records");
    default:
        return {};
    }
}

QHash<int, QByteArray> ScopeTreeModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractItemModel::roleNames();
    names.insert(PathRole, "path");
    names.insert(NameRole, "name");
    names.insert(RecordCountRole, "recordCount");
    return names;
}

} // namespace mneme
