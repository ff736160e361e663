#pragma once

#include <mneme/models/export.h>
#include <mneme/runtime/event_bus.h>

#include <QAbstractItemModel>
#include <QStringList>
#include <QVariantMap>
#include <memory>

namespace mneme {

// The events of crews, flows, agents, memory and chats as a tree, for a live timeline: each scope
// (a `*_started` event) is one row that its end event completes or fails, with the events published
// inside it as children (Event::parentId); single events are rows of their own. The chunks of a
// streamed LLM answer (llm_stream_chunk) are not rows: they are appended to their LLM call's row
// (StreamedTextRole) and reported by textStreamed().
//
// Bounded: past maxEvents() rows the oldest top-level rows go, with everything under them.
// Filtered by family (crew, task, agent, llm, tool, memory, flow, chat, mcp, guardrail): an event
// of a hidden family is kept but not shown, and what it holds is shown under its nearest shown
// ancestor. Events reach the model on its own thread (queued when published on another).
class MNEME_MODELS_EXPORT EventLogModel : public QAbstractItemModel
{
    Q_OBJECT
    Q_PROPERTY(QStringList families READ families WRITE setFamilies NOTIFY familiesChanged)
    Q_PROPERTY(int maxEvents READ maxEvents WRITE setMaxEvents)
    Q_PROPERTY(int eventCount READ eventCount NOTIFY eventCountChanged)
public:
    enum Column {
        EventColumn,
        SummaryColumn,
        StatusColumn,
        DurationColumn,
        TimeColumn,
        ColumnCount
    };
    Q_ENUM(Column)
    enum Role {
        TypeRole = Qt::UserRole + 1, // "type": the start event's type for a scope
        FamilyRole,                  // "family"
        EventIdRole,                 // "eventId"
        ParentIdRole,                // "parentId"
        TimestampRole,               // "timestamp": UTC
        PropertiesRole,              // "properties": the start's properties merged with the end's
        StatusRole,                  // "status": "running", "completed", "failed" for a scope; "" for a single event
        DurationRole,                // "durationMs": a finished scope's duration, else -1
        SummaryRole,                 // "summary": the task, agent, tool, method or query it is about
        StreamedTextRole,            // "streamedText": an LLM call's streamed answer so far
    };
    Q_ENUM(Role)

    explicit EventLogModel(QObject *parent = nullptr);
    ~EventLogModel() override;

    // The bus listened to (null: none). It must outlive the model or be reset here first.
    void setEventBus(EventBus *bus);
    EventBus *eventBus() const;

    // The families shown; empty: all.
    QStringList families() const;
    void setFamilies(const QStringList &families);
    static QStringList allFamilies();
    // The family of an event type: "crew_kickoff_started" -> "crew", "method_execution_started" -> "flow".
    static QString familyOf(const QString &type);

    int maxEvents() const;
    // At least 1; lower than the events kept drops the oldest at once.
    void setMaxEvents(int max);
    // Events kept (shown or not).
    int eventCount() const;
    Q_INVOKABLE void clear();

    // Adds one event as if it had been published on the bus.
    void addEvent(const Event &event);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

Q_SIGNALS:
    void familiesChanged();
    void eventCountChanged();
    // A piece of a streamed LLM answer; `index` is its LLM call's row (invalid when it is not shown).
    void textStreamed(const QString &text, const QModelIndex &index);

private:
    struct Node;
    Node *nodeOf(const QModelIndex &index) const;
    QModelIndex indexOf(const Node *node, int column = 0) const;
    Node *shownAncestor(Node *node) const;
    void show(Node *node);
    void dropOldest();
    void rebuild();

    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
