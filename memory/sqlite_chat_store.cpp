#include <mneme/memory/sqlite_chat_store.h>

#include "memory/sqlite_file_p.h"

#include <mneme/core/error.h>
#include <mneme/core/version.h>

#include <QFileInfo>
#include <QMutexLocker>
#include <QScopeGuard>
#include <QUrl>
#include <QUuid>
#include <limits>

namespace mneme {

namespace {

// The schema's steps (see SqliteMigration). Every table is named chat_*, the prefix the memory store
// leaves alone when the two share a file.
constexpr SqliteMigration kMigrations[] = {
    {1, R"SQL(
CREATE TABLE chat_meta(
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE chat_sessions(
    session TEXT PRIMARY KEY NOT NULL,
    uid TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    next_seq INTEGER NOT NULL DEFAULT 1,
    next_flush INTEGER NOT NULL DEFAULT 1
) WITHOUT ROWID;

CREATE TABLE chat_messages(
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    tool_call_id TEXT NOT NULL DEFAULT '',
    tool_calls TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}',
    at INTEGER NOT NULL,
    tokens INTEGER,
    flush INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE INDEX chat_messages_flush ON chat_messages(session, flush, seq);

CREATE TABLE chat_flushes(
    session TEXT NOT NULL,
    flush INTEGER NOT NULL,
    session_uid TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    pending TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    claimed_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    PRIMARY KEY (session, flush)
) WITHOUT ROWID;

CREATE TABLE chat_block_states(
    session TEXT NOT NULL,
    block TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session, block)
) WITHOUT ROWID;
)SQL"},
};

constexpr int kLatestSchema = int(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrations[kLatestSchema - 1].version == kLatestSchema);

constexpr int kMaxSessionIdLength = 200;

const QStringList kTables = {QStringLiteral("chat_meta"), QStringLiteral("chat_sessions"), QStringLiteral("chat_messages"),
                             QStringLiteral("chat_flushes"), QStringLiteral("chat_block_states")};

void checkSessionId(const QString &id)
{
    if (id.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a chat session needs an id, such as \"default\" or \"user-42\""));
    if (id.size() > kMaxSessionIdLength)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the chat session id \"%1...\" is %2 characters long; use at most %3")
                        .arg(id.left(40))
                        .arg(id.size())
                        .arg(kMaxSessionIdLength));
    for (const QChar c : id)
        if (c.category() == QChar::Other_Control)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the chat session id must not contain control characters (tabs, line breaks, ...)"));
}

QByteArray jsonText(const Json &j)
{
    return QByteArray::fromStdString(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Json callsJson(const std::vector<ToolCall> &calls)
{
    Json a = Json::array();
    for (const ToolCall &c : calls)
        a.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    return a;
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

QDateTime fromMs(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
}

QString newUid()
{
    return QUuid::createUuid().toString(QUuid::WithoutBraces);
}

} // namespace

using Statement = SqliteStatement;
using Transaction = SqliteTransaction;

SqliteChatStore::SqliteChatStore(const QString &path) : SqliteChatStore(Options{path}) {}

SqliteChatStore::SqliteChatStore(const Options &options)
    : m_options(options),
      m_file(std::make_unique<SqliteFile>(SqliteFileKind{QStringLiteral("chat store"), QStringLiteral("give the chat memory another file"),
                                                         QStringLiteral("memory.db")},
                                          options.busyTimeoutMs))
{
    open();
}

SqliteChatStore::~SqliteChatStore() = default;

int SqliteChatStore::latestSchemaVersion()
{
    return kLatestSchema;
}

QString SqliteChatStore::location() const
{
    return m_file->location();
}

void SqliteChatStore::open()
{
    if (m_options.path.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the chat store needs a path (the memory store's file, such as ~/.local/share/mneme/memory.db, or \":memory:\")"));
    if (m_options.busyTimeoutMs < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("busyTimeoutMs of the chat store must not be negative"));
    m_file->open(m_options.path);
    const int version = storedVersion();
    if (version > kLatestSchema)
        throw Error(ErrorKind::SchemaTooNew,
                    QStringLiteral("%1 was written by a newer Mneme (chat schema %2; this build reads up to %3): upgrade Mneme to "
                                   "use its chat sessions. The file was not changed")
                        .arg(m_file->location())
                        .arg(version)
                        .arg(kLatestSchema));
    if (version < kLatestSchema)
        migrate();
    m_file->useWal();
}

// The chat schema's version: 0 for a file without chat tables that may have them (empty, or a memory
// store); throws for anything else.
int SqliteChatStore::storedVersion()
{
    QStringList tables;
    {
        Statement st(*m_file, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
        while (st.step(QStringLiteral("reading the schema")))
            tables << st.text(0);
    }
    tables.removeAll(QStringLiteral("sqlite_sequence"));
    if (!tables.contains(QStringLiteral("chat_meta"))) {
        const bool memoryStore = tables.contains(QStringLiteral("meta")) && tables.contains(QStringLiteral("records"));
        if (tables.isEmpty() || memoryStore)
            return 0;
        QString what = QStringLiteral("a SQLite database that is neither a Mneme memory store nor a chat store");
        if (tables.contains(QStringLiteral("flow_states")))
            what = QStringLiteral("a flow-state store");
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is %2; Mneme did not change it. Keep chat sessions in the memory "
                                                       "store's file (the default) or in a file of their own")
                                            .arg(m_file->location(), what));
    }
    int version = -1;
    {
        Statement st(*m_file, "SELECT value FROM chat_meta WHERE key = 'schema_version'");
        if (st.step(QStringLiteral("reading the chat schema version"))) {
            bool ok = false;
            version = st.text(0).toInt(&ok);
            if (!ok)
                version = -1;
        }
    }
    if (version < 1)
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its chat_meta table has no valid schema_version; Mneme did "
                                                       "not change it. Move it away or give the chat memory another file")
                                            .arg(m_file->location()));
    if (version <= kLatestSchema) {
        for (const QString &t : kTables)
            if (!tables.contains(t))
                throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: its table \"%2\" is missing; Mneme did not change it. "
                                                               "Move it away or give the chat memory another file")
                                                    .arg(m_file->location(), t));
    }
    return version;
}

void SqliteChatStore::migrate()
{
    Transaction tx(*m_file, QStringLiteral("upgrading the chat schema"));
    // Another process may have created or upgraded the chat tables while we waited for the lock.
    const int current = storedVersion();
    if (current > kLatestSchema)
        return; // the caller's next open reports it; nothing to do here
    applySqliteMigrations(*m_file, kMigrations, current, "chat_meta", QStringLiteral("the chat schema"), [this] {
        Statement by(*m_file, "INSERT INTO chat_meta(key, value) VALUES ('created_by', ?)");
        by.bind(1, QStringLiteral("mneme " MNEME_VERSION_STR)).step(QStringLiteral("recording the creator"));
    });
    tx.commit();
}

// ---------------------------------------------------------------------------------------------
// Copies between files (mneme migrate)

namespace {

// A read-only file: URI of a path (no character of it taken for a URI parameter).
QByteArray readOnlyUri(const QString &path)
{
    return "file:" + QUrl::toPercentEncoding(QFileInfo(path).absoluteFilePath(), "/") + "?mode=ro";
}

} // namespace

SqliteChatStore::Copied SqliteChatStore::copySessionsFrom(const QString &path)
{
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("copying the chat sessions of %1").arg(path);
    Statement(*m_file, "ATTACH DATABASE ? AS mneme_source").bind(1, readOnlyUri(path)).step(doing);
    const auto detach = qScopeGuard([&] {
        try {
            m_file->exec("DETACH DATABASE mneme_source", doing);
        } catch (const Error &) {
            // still attached until the store closes: nothing is written to it
        }
    });
    {
        Statement tables(*m_file, "SELECT count(*) FROM mneme_source.sqlite_master WHERE type = 'table' AND name IN "
                                  "('chat_meta', 'chat_sessions', 'chat_messages', 'chat_flushes', 'chat_block_states')");
        tables.step(doing);
        if (tables.int64(0) == 0)
            return {};
        if (tables.int64(0) != kTables.size())
            throw Error(ErrorKind::Corrupt, QStringLiteral("the chat tables of %1 are incomplete; check it with `mneme check` "
                                                           "pointed at it. Nothing was copied")
                                                .arg(path));
    }
    {
        Statement version(*m_file, "SELECT value FROM mneme_source.chat_meta WHERE key = 'schema_version'");
        const int v = version.step(doing) ? version.text(0).toInt() : 0;
        if (v != kLatestSchema)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the chat sessions of %1 are of chat schema %2, this Mneme copies schema %3; open them once "
                                       "with this Mneme (`mneme chat list` pointed at it), then copy again. Nothing was copied")
                            .arg(path)
                            .arg(v)
                            .arg(kLatestSchema));
    }
    Transaction tx(*m_file, doing);
    Copied out;
    {
        Statement counts(*m_file, "SELECT count(*), count(t.session) FROM mneme_source.chat_sessions s "
                                  "LEFT JOIN main.chat_sessions t ON t.session = s.session");
        counts.step(doing);
        out.already = int(counts.int64(1));
        out.copied = int(counts.int64(0)) - out.already;
    }
    // The rows of the sessions this store lacks, the sessions last (the condition reads them).
    const char *lacking = " WHERE session IN (SELECT session FROM mneme_source.chat_sessions "
                          "EXCEPT SELECT session FROM main.chat_sessions)";
    for (const char *table : {"chat_messages", "chat_flushes", "chat_block_states", "chat_sessions"}) {
        const QByteArray sql = QByteArray("INSERT INTO main.") + table + " SELECT * FROM mneme_source." + table + lacking;
        m_file->exec(sql.constData(), doing);
    }
    tx.commit();
    return out;
}

int SqliteChatStore::countSessions(const QString &path)
{
    if (!QFileInfo(path).isFile())
        return 0;
    // Attached read-only to a connection of its own, so that nothing is created in the file.
    SqliteFile file(SqliteFileKind{QStringLiteral("chat store"), QString(), QString()}, 10000);
    file.open(QStringLiteral(":memory:"));
    const QString doing = QStringLiteral("counting the chat sessions of %1").arg(path);
    Statement(file, "ATTACH DATABASE ? AS mneme_source").bind(1, readOnlyUri(path)).step(doing);
    Statement tables(file, "SELECT count(*) FROM mneme_source.sqlite_master WHERE type = 'table' AND name = 'chat_sessions'");
    tables.step(doing);
    if (tables.int64(0) == 0)
        return 0;
    Statement sessions(file, "SELECT count(*) FROM mneme_source.chat_sessions");
    sessions.step(doing);
    return int(sessions.int64(0));
}

// ---------------------------------------------------------------------------------------------
// Sessions

std::optional<SessionInfo> SqliteChatStore::sessionLocked(const QString &id)
{
    Statement st(*m_file, "SELECT s.session, s.uid, s.created_at, s.updated_at, s.next_flush - 1, "
                          "(SELECT count(*) FROM chat_messages m WHERE m.session = s.session AND m.flush = 0), "
                          "(SELECT count(*) FROM chat_messages m WHERE m.session = s.session AND m.flush <> 0), "
                          "(SELECT coalesce(min(f.flush), 0) FROM chat_flushes f WHERE f.session = s.session AND f.completed_at IS NULL) "
                          "FROM chat_sessions s WHERE s.session = ?");
    st.bind(1, id);
    if (!st.step(QStringLiteral("reading chat session %1").arg(id)))
        return std::nullopt;
    SessionInfo s;
    s.id = st.text(0);
    s.uid = st.text(1);
    s.createdAt = fromMs(st.int64(2));
    s.updatedAt = fromMs(st.int64(3));
    s.flushes = st.int64(4);
    s.activeMessages = int(st.int64(5));
    s.archivedMessages = int(st.int64(6));
    s.pendingFlush = st.int64(7);
    return s;
}

SessionInfo SqliteChatStore::ensureSessionLocked(const QString &id)
{
    if (std::optional<SessionInfo> s = sessionLocked(id))
        return *s;
    const qint64 now = nowMs();
    Statement st(*m_file, "INSERT INTO chat_sessions(session, uid, created_at, updated_at) VALUES (?, ?, ?, ?)");
    st.bind(1, id).bind(2, newUid()).bind(3, now).bind(4, now).step(QStringLiteral("creating chat session %1").arg(id));
    return *sessionLocked(id);
}

void SqliteChatStore::touchLocked(const QString &session)
{
    Statement st(*m_file, "UPDATE chat_sessions SET updated_at = ? WHERE session = ?");
    st.bind(1, nowMs()).bind(2, session).step(QStringLiteral("updating chat session %1").arg(session));
}

QList<SessionInfo> SqliteChatStore::sessions()
{
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    QStringList ids;
    {
        Statement st(*m_file, "SELECT session FROM chat_sessions ORDER BY updated_at DESC, session");
        while (st.step(QStringLiteral("listing chat sessions")))
            ids << st.text(0);
    }
    QList<SessionInfo> out;
    for (const QString &id : ids)
        if (std::optional<SessionInfo> s = sessionLocked(id))
            out << *s;
    return out;
}

std::optional<SessionInfo> SqliteChatStore::session(const QString &id)
{
    checkSessionId(id);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    return sessionLocked(id);
}

SessionInfo SqliteChatStore::openSession(const QString &id)
{
    checkSessionId(id);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    if (std::optional<SessionInfo> s = sessionLocked(id))
        return *s;
    Transaction tx(*m_file, QStringLiteral("creating chat session %1").arg(id));
    const SessionInfo s = ensureSessionLocked(id);
    tx.commit();
    return s;
}

// ---------------------------------------------------------------------------------------------
// Messages

QList<SessionMessage> SqliteChatStore::append(const QString &session, const QList<SessionMessage> &messages)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    Transaction tx(*m_file, QStringLiteral("storing messages of chat session %1").arg(session));
    ensureSessionLocked(session);
    qint64 seq = 0;
    {
        Statement st(*m_file, "SELECT next_seq FROM chat_sessions WHERE session = ?");
        st.bind(1, session).step(QStringLiteral("numbering messages of chat session %1").arg(session));
        seq = st.int64(0);
    }
    const QDateTime now = QDateTime::currentDateTimeUtc();
    QList<SessionMessage> stored;
    Statement ins(*m_file, "INSERT INTO chat_messages(session, seq, role, content, name, tool_call_id, tool_calls, metadata, at, "
                           "tokens, flush) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)");
    for (SessionMessage m : messages) {
        m.seq = seq++;
        m.flush = 0;
        if (!m.at.isValid())
            m.at = now;
        m.at = m.at.toUTC();
        const ChatMessage &c = m.message;
        ins.reset();
        ins.bind(1, session)
            .bind(2, m.seq)
            .bind(3, ChatMessage::roleName(c.role))
            .bind(4, c.content)
            .bind(5, c.name)
            .bind(6, c.toolCallId)
            .bind(7, jsonText(callsJson(c.toolCalls)))
            .bind(8, jsonText(m.metadata))
            .bind(9, m.at.toMSecsSinceEpoch());
        if (m.tokens)
            ins.bind(10, qint64(*m.tokens));
        else
            ins.bindNull(10);
        ins.step(QStringLiteral("storing a message of chat session %1").arg(session));
        stored << m;
    }
    {
        Statement st(*m_file, "UPDATE chat_sessions SET next_seq = ?, updated_at = ? WHERE session = ?");
        st.bind(1, seq).bind(2, nowMs()).bind(3, session).step(QStringLiteral("numbering messages of chat session %1").arg(session));
    }
    tx.commit();
    return stored;
}

QList<SessionMessage> SqliteChatStore::messagesLocked(const QString &session, const char *where, qint64 a, qint64 b)
{
    const QByteArray sql = QByteArray("SELECT seq, role, content, name, tool_call_id, tool_calls, metadata, at, tokens, flush "
                                      "FROM chat_messages WHERE session = ? AND ")
                         + where + " ORDER BY seq";
    Statement st(*m_file, sql.constData());
    st.bind(1, session).bind(2, a).bind(3, b);
    QList<SessionMessage> out;
    while (st.step(QStringLiteral("reading messages of chat session %1").arg(session))) {
        SessionMessage m;
        m.seq = st.int64(0);
        const std::optional<ChatMessage::Role> role = SessionMessage::roleFromName(st.text(1));
        const Json calls = parseJsonOrDiscarded(st.text(5).toStdString());
        const Json meta = parseJsonOrDiscarded(st.text(6).toStdString());
        if (!role || !calls.is_array() || !meta.is_object())
            throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: message %2 of chat session %3 cannot be read (its role, tool "
                                                           "calls or metadata); Mneme did not change it")
                                                .arg(m_file->location())
                                                .arg(m.seq)
                                                .arg(session));
        m.message.role = *role;
        m.message.content = st.text(2);
        m.message.name = st.text(3);
        m.message.toolCallId = st.text(4);
        for (const Json &c : calls)
            m.message.toolCalls.push_back(ToolCall{QString::fromStdString(c.value("id", std::string())),
                                                   QString::fromStdString(c.value("name", std::string())),
                                                   c.value("arguments", Json::object())});
        m.metadata = meta;
        m.at = fromMs(st.int64(7));
        if (!st.isNull(8))
            m.tokens = int(st.int64(8));
        m.flush = st.int64(9);
        out << m;
    }
    return out;
}

QList<SessionMessage> SqliteChatStore::messages(const QString &session, bool includeArchived)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    // The flush bounds: 0..0 is the active history, 0..max every message.
    return messagesLocked(session, "flush BETWEEN ? AND ?", 0, includeArchived ? std::numeric_limits<qint64>::max() : 0);
}

// ---------------------------------------------------------------------------------------------
// Flushes

std::optional<FlushRecord> SqliteChatStore::pendingLocked(const QString &session, bool withMessages)
{
    Statement st(*m_file, "SELECT flush, session_uid, first_seq, last_seq, tokens, pending, owner, claimed_at FROM chat_flushes "
                          "WHERE session = ? AND completed_at IS NULL ORDER BY flush LIMIT 1");
    st.bind(1, session);
    if (!st.step(QStringLiteral("reading the pending flush of chat session %1").arg(session)))
        return std::nullopt;
    FlushRecord f;
    f.flush = st.int64(0);
    f.sessionUid = st.text(1);
    f.firstSeq = st.int64(2);
    f.lastSeq = st.int64(3);
    f.tokens = int(st.int64(4));
    const Json pending = parseJsonOrDiscarded(st.text(5).toStdString());
    if (!pending.is_array())
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: flush %2 of chat session %3 has no readable list of pending "
                                                       "blocks; Mneme did not change it")
                                            .arg(m_file->location())
                                            .arg(f.flush)
                                            .arg(session));
    for (const Json &b : pending)
        if (b.is_string())
            f.pendingBlocks << QString::fromStdString(b.get<std::string>());
    f.owner = st.text(6);
    f.claimedAt = fromMs(st.int64(7));
    if (withMessages)
        f.messages = messagesLocked(session, "flush = ? AND flush = ?", f.flush, f.flush);
    return f;
}

std::optional<FlushRecord> SqliteChatStore::beginFlush(const QString &session, qint64 firstSeq, qint64 lastSeq, int tokens,
                                                       const QStringList &blocks, const QString &owner)
{
    checkSessionId(session);
    if (firstSeq < 1 || lastSeq < firstSeq)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("a flush of chat session %1 needs messages: seq %2 to %3 is no range").arg(session).arg(firstSeq).arg(lastSeq));
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("flushing messages of chat session %1").arg(session);
    Transaction tx(*m_file, doing);
    if (pendingLocked(session, false))
        return std::nullopt;
    {
        Statement st(*m_file, "SELECT min(seq) FROM chat_messages WHERE session = ? AND flush = 0");
        st.bind(1, session);
        if (!st.step(doing) || st.isNull(0) || st.int64(0) != firstSeq)
            return std::nullopt;
    }
    const std::optional<SessionInfo> info = sessionLocked(session);
    if (!info)
        return std::nullopt;
    const qint64 flush = info->flushes + 1;
    const qint64 now = nowMs();
    {
        Statement st(*m_file, "UPDATE chat_messages SET flush = ? WHERE session = ? AND flush = 0 AND seq BETWEEN ? AND ?");
        st.bind(1, flush).bind(2, session).bind(3, firstSeq).bind(4, lastSeq).step(doing);
    }
    {
        Statement st(*m_file, "INSERT INTO chat_flushes(session, flush, session_uid, first_seq, last_seq, tokens, pending, owner, "
                              "claimed_at, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        st.bind(1, session).bind(2, flush).bind(3, info->uid).bind(4, firstSeq).bind(5, lastSeq).bind(6, qint64(tokens));
        st.bind(7, jsonText(Json(blocks))).bind(8, owner).bind(9, now).bind(10, now);
        if (blocks.isEmpty())
            st.bind(11, now); // no block to wait for: done as it begins
        else
            st.bindNull(11);
        st.step(doing);
    }
    {
        Statement st(*m_file, "UPDATE chat_sessions SET next_flush = ?, updated_at = ? WHERE session = ?");
        st.bind(1, flush + 1).bind(2, now).bind(3, session).step(doing);
    }
    FlushRecord f;
    f.flush = flush;
    f.sessionUid = info->uid;
    f.firstSeq = firstSeq;
    f.lastSeq = lastSeq;
    f.tokens = tokens;
    f.pendingBlocks = blocks;
    f.owner = owner;
    f.claimedAt = fromMs(now);
    f.messages = messagesLocked(session, "flush = ? AND flush = ?", flush, flush);
    tx.commit();
    return f;
}

std::optional<FlushRecord> SqliteChatStore::pendingFlush(const QString &session)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    return pendingLocked(session, true);
}

bool SqliteChatStore::claimFlush(const QString &session, qint64 flush, const QString &expectedOwner, const QString &owner)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("claiming flush %1 of chat session %2").arg(flush).arg(session);
    Transaction tx(*m_file, doing);
    Statement st(*m_file, "UPDATE chat_flushes SET owner = ?, claimed_at = ? WHERE session = ? AND flush = ? AND owner = ? "
                          "AND completed_at IS NULL");
    st.bind(1, owner).bind(2, nowMs()).bind(3, session).bind(4, flush).bind(5, expectedOwner).step(doing);
    const bool claimed = m_file->changes() == 1;
    tx.commit();
    return claimed;
}

void SqliteChatStore::completeBlock(const QString &session, qint64 flush, const QString &block, const Json &state)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("recording block %1 of flush %2 of chat session %3").arg(block).arg(flush).arg(session);
    Transaction tx(*m_file, doing);
    std::optional<FlushRecord> f = pendingLocked(session, false);
    if (!f || f->flush != flush || !f->pendingBlocks.contains(block))
        return;
    f->pendingBlocks.removeAll(block);
    const qint64 now = nowMs();
    {
        Statement st(*m_file, "INSERT INTO chat_block_states(session, block, state, updated_at) VALUES (?, ?, ?, ?) "
                              "ON CONFLICT(session, block) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at");
        st.bind(1, session).bind(2, block).bind(3, jsonText(state)).bind(4, now).step(doing);
    }
    {
        Statement st(*m_file, "UPDATE chat_flushes SET pending = ?, claimed_at = ?, completed_at = ? WHERE session = ? AND flush = ?");
        st.bind(1, jsonText(Json(f->pendingBlocks))).bind(2, now);
        if (f->pendingBlocks.isEmpty())
            st.bind(3, now);
        else
            st.bindNull(3);
        st.bind(4, session).bind(5, flush).step(doing);
    }
    touchLocked(session);
    tx.commit();
}

void SqliteChatStore::abandonBlocks(const QString &session, qint64 flush, const QStringList &blocks)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("dropping blocks from flush %1 of chat session %2").arg(flush).arg(session);
    Transaction tx(*m_file, doing);
    std::optional<FlushRecord> f = pendingLocked(session, false);
    if (!f || f->flush != flush)
        return;
    for (const QString &b : blocks)
        f->pendingBlocks.removeAll(b);
    const qint64 now = nowMs();
    Statement st(*m_file, "UPDATE chat_flushes SET pending = ?, completed_at = ? WHERE session = ? AND flush = ?");
    st.bind(1, jsonText(Json(f->pendingBlocks)));
    if (f->pendingBlocks.isEmpty())
        st.bind(2, now);
    else
        st.bindNull(2);
    st.bind(3, session).bind(4, flush).step(doing);
    tx.commit();
}

QMap<QString, Json> SqliteChatStore::blockStates(const QString &session)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    Statement st(*m_file, "SELECT block, state FROM chat_block_states WHERE session = ?");
    st.bind(1, session);
    QMap<QString, Json> out;
    while (st.step(QStringLiteral("reading the block states of chat session %1").arg(session))) {
        const Json state = parseJsonOrDiscarded(st.text(1).toStdString());
        if (state.is_discarded())
            throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is damaged: the state of block %2 of chat session %3 is not JSON; "
                                                           "Mneme did not change it")
                                                .arg(m_file->location(), st.text(0), session));
        out.insert(st.text(0), state);
    }
    return out;
}

int SqliteChatStore::clearSession(const QString &session)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("clearing chat session %1").arg(session);
    Transaction tx(*m_file, doing);
    ensureSessionLocked(session);
    int deleted = 0;
    {
        Statement st(*m_file, "DELETE FROM chat_messages WHERE session = ?");
        st.bind(1, session).step(doing);
        deleted = m_file->changes();
    }
    for (const char *sql : {"DELETE FROM chat_flushes WHERE session = ?", "DELETE FROM chat_block_states WHERE session = ?"}) {
        Statement st(*m_file, sql);
        st.bind(1, session).step(doing);
    }
    {
        Statement st(*m_file, "UPDATE chat_sessions SET uid = ?, updated_at = ? WHERE session = ?");
        st.bind(1, newUid()).bind(2, nowMs()).bind(3, session).step(doing);
    }
    tx.commit();
    return deleted;
}

bool SqliteChatStore::deleteSession(const QString &session)
{
    checkSessionId(session);
    QMutexLocker lock(&m_mutex);
    m_file->checkOpen();
    const QString doing = QStringLiteral("deleting chat session %1").arg(session);
    Transaction tx(*m_file, doing);
    for (const char *sql : {"DELETE FROM chat_messages WHERE session = ?", "DELETE FROM chat_flushes WHERE session = ?",
                            "DELETE FROM chat_block_states WHERE session = ?"}) {
        Statement st(*m_file, sql);
        st.bind(1, session).step(doing);
    }
    Statement st(*m_file, "DELETE FROM chat_sessions WHERE session = ?");
    st.bind(1, session).step(doing);
    const bool existed = m_file->changes() == 1;
    tx.commit();
    return existed;
}

void SqliteChatStore::close()
{
    QMutexLocker lock(&m_mutex);
    m_file->close();
}

// ---------------------------------------------------------------------------------------------

Json SessionInfo::toJson() const
{
    return Json{{"id", id},
                {"uid", uid},
                {"created_at", toIso(createdAt)},
                {"updated_at", toIso(updatedAt)},
                {"active_messages", activeMessages},
                {"archived_messages", archivedMessages},
                {"flushes", flushes},
                {"pending_flush", pendingFlush}};
}

} // namespace mneme
