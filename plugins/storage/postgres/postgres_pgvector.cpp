// PostgresStorage's vector searches on the server, with the `vector` extension (pgvector): the choice
// at open, the column embedding_v and its HNSW index, and the searches (postgres_storage.h).

#include "postgres_result.h"
#include "postgres_storage.h"

#include <mneme/core/error.h>
#include <mneme/core/metadata_filter.h>

#include <QLoggingCategory>
#include <QMutexLocker>
#include <algorithm>
#include <charconv>
#include <cmath>

namespace mneme {

namespace {

Q_LOGGING_CATEGORY(lcPgvector, "mneme.storage.postgres")

// The lock a process takes while it makes or changes the column (the records' schema lock's namespace).
constexpr qint64 kVectorColumnLock = 0x6d6e656d65L + 3;
// pgvector indexes vectors of up to this many dimensions with HNSW.
constexpr int kMaxIndexedDimension = 2000;
// The HNSW graph's parameters: the shape the per-process index had before it was tuned for its graph
// of 8-bit codes (VectorIndex::AnnParams); the server's graph holds the float vectors, and the
// figures of docs/postgres.md were measured with this shape.
constexpr int kGraphDegree = 16;
constexpr int kGraphConstruction = 100;
// The candidate list of a search (hnsw.ef_search): the per-process index's before its 8-bit graph,
// grown on larger stores as it grows its own (VectorIndex::search), at least the limit, at most
// pgvector's 1000.
constexpr int kCandidates = 96;
constexpr int kMaxCandidates = 1000;
// Rows the upgrade fills at once.
constexpr int kFillChunk = 2000;
// A filter selecting fewer records than the larger of these is scanned exactly (VectorIndex::search's
// rule).
constexpr int kExactBelow = 4000;
constexpr double kExactShare = 0.05;

// Whether an extension version ("0.8.6") is at least major.minor.
bool atLeast(const QString &version, int major, int minor)
{
    const QStringList parts = version.split(QLatin1Char('.'));
    const int a = parts.value(0).toInt(), b = parts.value(1).toInt();
    return a > major || (a == major && b >= minor);
}

const QByteArray kAdvice = "set \"vector_search\" to \"auto\" or \"local\" to search with the per-process index";

} // namespace

std::optional<QByteArray> PostgresStorage::pgvectorText(const Embedding &embedding)
{
    if (embedding.empty())
        return std::nullopt;
    double norm = 0;
    for (const float v : embedding) {
        if (!std::isfinite(v))
            return std::nullopt;
        norm += double(v) * double(v);
    }
    norm = std::sqrt(norm);
    const double scale = norm > 0 ? 1.0 / norm : 0.0;
    QByteArray out;
    out.reserve(qsizetype(embedding.size() * 12 + 2));
    out += '[';
    char buffer[32];
    for (std::size_t i = 0; i < embedding.size(); ++i) {
        if (i)
            out += ',';
        const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, float(double(embedding[i]) * scale));
        out.append(buffer, end - buffer);
    }
    out += ']';
    return out;
}

QByteArray PostgresStorage::vectorColumn() const
{
    QMutexLocker lock(&m_vectorMutex);
    return m_vectorDimension > 0 ? m_vectorSchema + ".vector" : QByteArray();
}

int PostgresStorage::vectorColumnOnServer()
{
    Result r = exec("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'mneme_records'::regclass AND attname = 'embedding_v' "
                    "AND NOT attisdropped",
                    QStringLiteral("looking for pgvector's column"));
    const int dimension = r.rows() ? int(r.int64(0, 0)) : 0;
    QMutexLocker lock(&m_vectorMutex);
    m_vectorDimension = std::max(dimension, 0);
    return m_vectorDimension;
}

// Auto: pgvector when the database has the extension (an installed extension is the database owner's
// decision; creating one is not a store's to make). Pgvector: the extension is created when the server
// has it and the role may create it. Either way the column is made for a store with an embedder.
void PostgresStorage::detectVectorSearch()
{
    const Options::VectorSearch mode = m_options.vectorSearch;
    if (mode == Options::VectorSearch::Pgvector && m_vectorExtension.isEmpty()) {
        Result available = exec("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'",
                                QStringLiteral("looking for pgvector on the server"));
        if (!available.rows())
            throw Error(ErrorKind::Storage,
                        QStringLiteral("storage config \"vector_search\" is \"pgvector\", but the server of %1 does not have the "
                                       "extension `vector` (pgvector); install pgvector on the server, or %2")
                            .arg(m_location, QString::fromLatin1(kAdvice)));
        // Into the schema public where there is one (as an administrator would): not into the store's,
        // whose removal (DROP SCHEMA ... CASCADE) would take other stores' columns with it.
        const bool hasPublic = exec("SELECT 1 FROM pg_namespace WHERE nspname = 'public'", QStringLiteral("looking for the schema public")).rows() > 0;
        Result created(PQexec(current(), hasPublic ? "CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public" : "CREATE EXTENSION IF NOT EXISTS vector"));
        if (created.status() != PGRES_COMMAND_OK)
            throw Error(ErrorKind::Storage,
                        QStringLiteral("storage config \"vector_search\" is \"pgvector\", but the extension `vector` is not installed "
                                       "in the database of %1 and could not be created (%2); ask the database's owner to run "
                                       "CREATE EXTENSION vector, or %3")
                            .arg(m_location, QString::fromUtf8(created.errorMessage()).trimmed(), QString::fromLatin1(kAdvice)));
    }
    Result ext = exec("SELECT e.extversion, quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                      "WHERE e.extname = 'vector'",
                      QStringLiteral("looking for pgvector"));
    m_vectorExtension = ext.rows() ? ext.text(0, 0) : QString();
    m_vectorSchema = ext.rows() ? ext.bytes(0, 1) : QByteArray();
    if (!m_vectorExtension.isEmpty() && !atLeast(m_vectorExtension, 0, 7)) { // without l2_normalize (the triggers')
        if (mode == Options::VectorSearch::Pgvector)
            throw Error(ErrorKind::Storage, QStringLiteral("storage config \"vector_search\" is \"pgvector\", but the database of %1 has "
                                                           "pgvector %2, older than the 0.7 Mneme needs; update it (ALTER EXTENSION vector "
                                                           "UPDATE), or %3")
                                                .arg(m_location, m_vectorExtension, QString::fromLatin1(kAdvice)));
        qCInfo(lcPgvector).noquote() << "pgvector" << m_vectorExtension << "is older than 0.7: not used";
        m_vectorExtension.clear();
        m_vectorSchema.clear();
    }
    // The column may be there whatever this process searches with: its writes then fill it too.
    const int column = m_vectorExtension.isEmpty() ? 0 : vectorColumnOnServer();
    m_pgvector = mode != Options::VectorSearch::Local && !m_vectorExtension.isEmpty();
    const std::optional<EmbedderBinding> binding = storedBinding();
    if (m_pgvector && binding && binding->dimension > kMaxIndexedDimension) {
        if (mode == Options::VectorSearch::Pgvector)
            throw Error(ErrorKind::Storage, QStringLiteral("storage config \"vector_search\" is \"pgvector\", but the store %1 holds "
                                                           "embeddings of %2 dimensions and pgvector indexes %3 at most; %4")
                                                .arg(m_location)
                                                .arg(binding->dimension)
                                                .arg(kMaxIndexedDimension)
                                                .arg(QString::fromLatin1(kAdvice)));
        m_pgvector = false;
    }
    if (m_pgvector && binding && column != binding->dimension)
        prepareVectorColumn(binding->dimension); // the upgrade of a store the per-process index searched
    qCInfo(lcPgvector).noquote() << "vector searches of" << m_location
                                 << (m_pgvector ? QStringLiteral("run on the server with pgvector %1").arg(m_vectorExtension)
                                                : QStringLiteral("use the per-process index"));
}

// In the caller's transaction when there is one (a write recording the store's first dimension), else
// in one of its own; other processes making it at once wait for the lock, then find it made.
void PostgresStorage::prepareVectorColumn(int dimension)
{
    if (m_vectorSchema.isEmpty() || dimension <= 0)
        return;
    if (!m_pgvector && vectorColumnOnServer() == 0)
        return; // no column to keep up: nothing to do for a store the per-process index searches
    if (dimension > kMaxIndexedDimension && m_options.vectorSearch == Options::VectorSearch::Pgvector)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("pgvector indexes embeddings of %1 dimensions at most, not %2; %3")
                                                    .arg(kMaxIndexedDimension)
                                                    .arg(dimension)
                                                    .arg(QString::fromLatin1(kAdvice)));
    const bool own = PQtransactionStatus(current()) == PQTRANS_IDLE;
    if (own)
        exec("BEGIN", QStringLiteral("preparing pgvector's column"));
    try {
        Params lock;
        lock.add(kVectorColumnLock);
        exec("SELECT pg_advisory_xact_lock($1)", lock, QStringLiteral("waiting for another process preparing pgvector's column"));
        const QByteArray type = m_vectorSchema + ".vector(" + QByteArray::number(dimension) + ")";
        const int existing = vectorColumnOnServer();
        exec("DROP TRIGGER IF EXISTS mneme_records_vector_insert ON mneme_records;\n"
             "DROP TRIGGER IF EXISTS mneme_records_vector_update ON mneme_records;",
             QStringLiteral("making pgvector's triggers"));
        if (dimension > kMaxIndexedDimension) {
            // ("auto" or "local") Embeddings pgvector cannot index: the store has no column, and this
            // process searches with its own index.
            exec("ALTER TABLE mneme_records DROP COLUMN IF EXISTS embedding_v", QStringLiteral("dropping pgvector's column"));
            if (own)
                exec("COMMIT", QStringLiteral("dropping pgvector's column"));
            m_pgvector = false;
            vectorColumnOnServer();
            qCInfo(lcPgvector).noquote() << "embeddings of" << dimension << "dimensions are more than pgvector indexes; vector searches of"
                                         << m_location << "use the per-process index";
            return;
        }
        if (existing == 0)
            exec("ALTER TABLE mneme_records ADD COLUMN embedding_v " + type, QStringLiteral("adding pgvector's column"));
        else if (existing != dimension) // a store reset and bound to an embedder of another dimension
            exec("ALTER TABLE mneme_records ALTER COLUMN embedding_v TYPE " + type + " USING NULL", QStringLiteral("changing pgvector's column"));
        // The rows written without the column (before it was made, or by a process that did not know of
        // it), a chunk at a time.
        for (qint64 after = 0;;) {
            Params p;
            p.add(after);
            p.add(qint64(4 * dimension));
            p.add(qint64(kFillChunk));
            Result rows = exec("SELECT rid, embedding FROM mneme_records WHERE rid > $1 AND embedding_v IS NULL AND length(embedding) = $2 "
                               "ORDER BY rid LIMIT $3",
                               p, QStringLiteral("reading the embeddings for pgvector's column"), true);
            std::vector<qint64> rids;
            std::vector<std::optional<QByteArray>> vectors;
            for (int i = 0; i < rows.rows(); ++i) {
                after = rows.binaryInt64(i, 0);
                const std::string_view bytes = rows.view(i, 1);
                rids.push_back(after);
                vectors.push_back(pgvectorText(pg::embeddingOf(QByteArray(bytes.data(), qsizetype(bytes.size())))));
            }
            if (!rids.empty()) {
                Params fill;
                fill.add(pg::bigintArray(rids));
                fill.add(pg::arrayLiteral(vectors));
                exec("UPDATE mneme_records AS r SET embedding_v = t.v::" + type + " FROM unnest($1::bigint[], $2::text[]) AS t(rid, v) "
                                                                                  "WHERE r.rid = t.rid",
                     fill, QStringLiteral("filling pgvector's column"));
            }
            if (rows.rows() < kFillChunk)
                break;
        }
        // The graph, built once the column is filled (faster than growing it row by row).
        exec("SET LOCAL maintenance_work_mem = '512MB'", QStringLiteral("indexing pgvector's column"));
        exec("CREATE INDEX IF NOT EXISTS mneme_records_embedding_v ON mneme_records USING hnsw (embedding_v " + m_vectorSchema
                 + ".vector_ip_ops) WITH (m = " + QByteArray::number(kGraphDegree) + ", ef_construction = "
                 + QByteArray::number(kGraphConstruction) + ")",
             QStringLiteral("indexing pgvector's column"));
        // The writers that do not write the column: a trigger converts their embeddings on the server
        // (little-endian float32, read bit by bit; slower than the writers that send the vector).
        const QByteArray dim = QByteArray::number(dimension);
        exec("CREATE OR REPLACE FUNCTION mneme_embedding_vector() RETURNS trigger LANGUAGE plpgsql AS $fn$\n"
             "BEGIN\n"
             "  IF NEW.embedding IS NULL OR length(NEW.embedding) <> 4 * "
                 + dim + " THEN\n"
                         "    NEW.embedding_v := NULL;\n"
                         "    RETURN NEW;\n"
                         "  END IF;\n"
                         "  NEW.embedding_v := "
                 + m_vectorSchema + ".l2_normalize((\n"
                                    "    SELECT array_agg(CASE WHEN e = 0 THEN 0::real\n"
                                    "                          ELSE ((1 - 2 * s) * (1 + m / 8388608.0::float8) * 2.0::float8 ^ (e - 127))::real END ORDER BY i)\n"
                                    "    FROM (SELECT i, get_byte(NEW.embedding, 4 * i + 3) >> 7 AS s,\n"
                                    "                 ((get_byte(NEW.embedding, 4 * i + 3) & 127) << 1) | (get_byte(NEW.embedding, 4 * i + 2) >> 7) AS e,\n"
                                    "                 ((get_byte(NEW.embedding, 4 * i + 2) & 127) << 16) | (get_byte(NEW.embedding, 4 * i + 1) << 8)\n"
                                    "                   | get_byte(NEW.embedding, 4 * i) AS m\n"
                                    "          FROM generate_series(0, "
                 + dim + " - 1) AS i) AS bits)::" + type + ");\n"
                                                           "  RETURN NEW;\n"
                                                           "END\n"
                                                           "$fn$;\n"
                                                           "CREATE TRIGGER mneme_records_vector_insert BEFORE INSERT ON mneme_records FOR EACH ROW\n"
                                                           "  WHEN (NEW.embedding IS NOT NULL AND NEW.embedding_v IS NULL) EXECUTE FUNCTION mneme_embedding_vector();\n"
                                                           "CREATE TRIGGER mneme_records_vector_update BEFORE UPDATE OF embedding ON mneme_records FOR EACH ROW\n"
                                                           "  WHEN (NEW.embedding IS DISTINCT FROM OLD.embedding AND ((NEW.embedding_v IS NULL AND OLD.embedding_v IS NULL)\n"
                                                           "        OR NEW.embedding_v OPERATOR("
                 + m_vectorSchema + ".=) OLD.embedding_v))\n"
                                    "  EXECUTE FUNCTION mneme_embedding_vector();",
             QStringLiteral("making pgvector's triggers"));
        if (own)
            exec("COMMIT", QStringLiteral("preparing pgvector's column"));
    } catch (...) {
        if (own)
            PQclear(PQexec(current(), "ROLLBACK"));
        throw;
    }
    vectorColumnOnServer();
}

std::vector<SearchHit> PostgresStorage::pgvectorNearest(const Embedding &query, const RecordFilter &filter, int limit,
                                                        VectorSearchAnswer *answer)
{
    const std::optional<QByteArray> q = pgvectorText(query);
    if (!q)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a vector search needs a query embedding of finite numbers"));
    int dimension = 0;
    {
        QMutexLocker lock(&m_vectorMutex);
        dimension = m_vectorDimension;
    }
    if (dimension != int(query.size()))
        dimension = vectorColumnOnServer(); // made (or changed) by another process since
    if (dimension != int(query.size())) {
        const std::optional<EmbedderBinding> binding = storedBinding();
        if (!binding)
            return {}; // nothing was ever embedded into this store
        if (binding->dimension != int(query.size()))
            checkDimension(int(query.size()), QStringLiteral("the query embedding")); // throws
        prepareVectorColumn(binding->dimension);                                      // bound by a process that searches with its own index
        if (!m_pgvector)
            throw Error(ErrorKind::Storage,
                        QStringLiteral("the store %1 was bound to embeddings of %2 dimensions since it was opened, more than pgvector "
                                       "indexes; open it again to search it with the per-process index")
                            .arg(m_location)
                            .arg(binding->dimension));
    }
    const QByteArray type = m_vectorSchema + ".vector(" + QByteArray::number(query.size()) + ")";
    const QByteArray distance = "embedding_v OPERATOR(" + m_vectorSchema + ".<#>) $1::" + type;
    // What SQL judges of the filter, plus its categories (any of them); the rest (metadata, content)
    // is judged on the records, reading more candidates until `limit` pass.
    const auto condition = [&](Params &params) {
        QByteArray sql = "embedding_v IS NOT NULL AND " + where(filter, params);
        if (!filter.categories.isEmpty()) {
            std::vector<std::optional<QByteArray>> names;
            for (const QString &c : filter.categories)
                names.push_back(c.toUtf8());
            sql += " AND categories::jsonb ?| $" + QByteArray::number(params.add(pg::arrayLiteral(names))) + "::text[]";
        }
        return sql;
    };
    Params p;
    p.add(*q);
    const QByteArray selected = condition(p);
    const bool onRecords = !filter.metadata.empty() || !filter.contentContains.isEmpty();
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    // pgvector 0.8 goes on walking the graph while the filter rejects what it finds; an older one
    // stops at ef_search candidates, and the exact scan below finds the rest.
    const bool iterative = atLeast(m_vectorExtension, 0, 8);

    // Exact: ordered by an expression the HNSW index does not serve, so the server reads the selected
    // rows (by the scope index, for a scope) and sorts them.
    const auto run = [&](int rows, bool exact) {
        std::vector<Statement> statements;
        statements.push_back(Statement{"BEGIN", {}});
        // As many candidates as the per-process index takes on a graph of this size; filtered searches
        // go on through the graph (pgvector's iterative scan) until enough rows pass.
        Params settings;
        settings.add(qint64(std::max(limit, 1)));
        settings.add(qint64(kCandidates));
        settings.add(qint64(kMaxCandidates));
        statements.push_back(Statement{
            "SELECT set_config('hnsw.ef_search', least($3::int, greatest($1::int, ceil($2::int * power(1 + greatest(0, "
            "log(greatest(c.reltuples, 1)::numeric / 100000)), 2))))::int::text, true)"
                + QByteArray(iterative ? ", set_config('hnsw.iterative_scan', 'relaxed_order', true)" : "")
                + " FROM pg_class c WHERE c.oid = 'mneme_records'::regclass",
            std::move(settings)});
        Params search = p;
        QByteArray tail = " ORDER BY " + (exact ? "(" + distance + ") + 0" : distance);
        if (rows > 0)
            tail += " LIMIT $" + QByteArray::number(search.add(qint64(rows)));
        statements.push_back(
            Statement{"SELECT rid, -(" + distance + "), importance, created_at FROM mneme_records WHERE " + selected + tail, std::move(search)});
        statements.push_back(Statement{"COMMIT", {}});
        std::vector<Result> done = execAll(statements, QStringLiteral("searching vectors with pgvector"));
        const Result &r = done[done.size() - 2];
        std::vector<SearchHit> hits;
        for (int i = 0; i < r.rows(); ++i)
            hits.push_back(SearchHit{r.int64(i, 0), r.number(i, 1), r.number(i, 1), r.number(i, 2),
                                     QDateTime::fromMSecsSinceEpoch(r.int64(i, 3), Qt::UTC)});
        // The relaxed scan returns nearly in order: the exact order of what it found.
        std::sort(hits.begin(), hits.end(),
                  [](const SearchHit &a, const SearchHit &b) { return a.score != b.score ? a.score > b.score : a.key < b.key; });
        return hits;
    };
    const auto judged = [&](std::vector<SearchHit> hits) {
        if (!onRecords)
            return hits;
        std::vector<qint64> rids;
        for (const SearchHit &h : hits)
            rids.push_back(h.key);
        const std::unordered_map<qint64, MemoryRecord> rows = byRids(rids, false);
        std::erase_if(hits, [&](const SearchHit &h) {
            const auto it = rows.find(h.key);
            return it == rows.end() || !filter.matches(it->second, conditions);
        });
        return hits;
    };
    const auto cut = [&](std::vector<SearchHit> hits) {
        if (limit >= 0 && int(hits.size()) > limit)
            hits.resize(std::size_t(limit));
        return hits;
    };

    // As the per-process index: ids, and a filter that selects few records (under 5 % of them, or
    // under 4,000), are scanned exactly; the count stops at that bound.
    bool exact = limit < 0 || !filter.ids.isEmpty();
    const bool narrows = (!filter.scopes.isEmpty() && !filter.scopes.contains(QStringLiteral("/"))) || !filter.categories.isEmpty()
                      || filter.createdBefore.isValid() || filter.createdAfter.isValid() || !filter.onlySource.isEmpty();
    if (!exact && narrows) {
        Params count;
        const QByteArray where = condition(count);
        const QByteArray bound = "(SELECT greatest(" + QByteArray::number(kExactBelow) + ", (" + QByteArray::number(kExactShare)
                               + " * c.reltuples)::bigint) FROM pg_class c WHERE c.oid = 'mneme_records'::regclass)";
        exact = exec("SELECT (SELECT count(*) FROM (SELECT 1 FROM mneme_records WHERE " + where + " LIMIT " + bound + ") AS s) < " + bound,
                     count, QStringLiteral("counting the records a vector search selects"))
                    .boolean(0, 0);
    }
    const auto answered = [&](bool byIndex) {
        if (!answer)
            return;
        answer->method = byIndex ? VectorSearchAnswer::Method::Index : VectorSearchAnswer::Method::Exact;
        answer->indexBuilding = false;
        answer->detail = byIndex ? QStringLiteral("pgvector's HNSW index on the server")
                                 : QStringLiteral("exact scan on the server (pgvector) of the records the filter selects");
    };
    answered(!exact);
    if (exact)
        return cut(judged(run(0, true)));
    // Candidates by the graph; more of them while the rows judged here reject too many; an exact scan
    // when the graph's walk ends short of `limit` (pgvector stops an iterative scan after
    // hnsw.max_scan_tuples rows).
    for (int rows = onRecords ? std::max(4 * limit, 40) : limit;; rows *= 4) {
        std::vector<SearchHit> found = run(rows, false);
        const bool ended = int(found.size()) < rows;
        std::vector<SearchHit> hits = judged(std::move(found));
        if (int(hits.size()) >= limit)
            return cut(std::move(hits));
        if (ended) {
            answered(false);
            return cut(judged(run(0, true)));
        }
    }
}

std::unordered_map<qint64, double> PostgresStorage::pgvectorSimilarities(const Embedding &query, const std::vector<qint64> &rids)
{
    std::unordered_map<qint64, double> out;
    const std::optional<QByteArray> q = pgvectorText(query);
    {
        QMutexLocker lock(&m_vectorMutex);
        if (m_vectorDimension != int(query.size()))
            return out; // no column, or one of another dimension: the store would refuse the query
    }
    if (!q || rids.empty())
        return out;
    Params p;
    p.add(*q);
    p.add(pg::bigintArray(rids));
    Result r = exec("SELECT rid, -(embedding_v OPERATOR(" + m_vectorSchema + ".<#>) $1::" + m_vectorSchema + ".vector) FROM mneme_records "
                                                                                                             "WHERE rid = ANY($2::bigint[]) AND embedding_v IS NOT NULL",
                    p, QStringLiteral("scoring keyword matches by their vectors"));
    for (int i = 0; i < r.rows(); ++i)
        out[r.int64(i, 0)] = r.number(i, 1);
    return out;
}

} // namespace mneme
