#pragma once

// The throwaway PostgreSQL cluster of the CTest fixture "postgres" (scripts/pg-cluster.sh), for tests:
// its settings, and a fresh schema per test so that tests never see each other's records.

#include <mneme/core/error.h>

#include <QFile>
#include <QString>
#include <QUuid>
#include <functional>
#include <libpq-fe.h>
#include <stdexcept>

namespace mneme::test {

class PgCluster
{
public:
    // Reads MNEME_PG_DIR/env into the environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSFILE);
    // false when there is no cluster there.
    static bool load(const QString &dir)
    {
        QFile f(dir + QStringLiteral("/env"));
        if (!f.open(QIODevice::ReadOnly))
            return false;
        for (const QByteArray &line : f.readAll().split('\n')) {
            const int eq = line.indexOf('=');
            if (eq > 0 && line.startsWith("PG"))
                qputenv(line.left(eq).constData(), line.mid(eq + 1));
        }
        return qEnvironmentVariableIsSet("PGPORT");
    }

    // A dsn whose search_path is a schema of its own, created empty (the password from PGPASSFILE).
    static QString freshDsn()
    {
        const QString schema = QStringLiteral("t_") + QUuid::createUuid().toString(QUuid::Id128).left(16);
        run(QStringLiteral("CREATE SCHEMA %1").arg(schema));
        return dsnFor(schema);
    }
    static QString dsnFor(const QString &schema)
    {
        return QStringLiteral("host=%1 port=%2 dbname=%3 user=%4 options='-c search_path=%5'")
            .arg(qEnvironmentVariable("PGHOST"), qEnvironmentVariable("PGPORT"), qEnvironmentVariable("PGDATABASE"),
                 qEnvironmentVariable("PGUSER"), schema);
    }

    // Runs one statement on the cluster's database as its owner; throws with the server's message.
    static void run(const QString &sql, const QString &dsn = QString()) { scalar(sql, dsn); }

    // Runs one statement, as run(), and returns the first column of its first row (empty: none).
    static QString scalar(const QString &sql, const QString &dsn = QString())
    {
        PGconn *c = PQconnectdb(dsn.toUtf8().constData());
        if (PQstatus(c) != CONNECTION_OK) {
            const std::string message = PQerrorMessage(c);
            PQfinish(c);
            throw std::runtime_error(message);
        }
        PGresult *r = PQexec(c, sql.toUtf8().constData());
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        const std::string message = PQerrorMessage(c);
        const QString first = ok && PQntuples(r) > 0 && PQnfields(r) > 0 ? QString::fromUtf8(PQgetvalue(r, 0, 0)) : QString();
        PQclear(r);
        PQfinish(c);
        if (!ok)
            throw std::runtime_error(message);
        return first;
    }
};

// The message of the mneme::Error `f` throws (and its kind, when asked), or an empty string when it
// throws none.
inline QString errorOf(const std::function<void()> &f, ErrorKind *kind = nullptr)
{
    try {
        f();
    } catch (const Error &e) {
        if (kind)
            *kind = e.kind();
        return e.message();
    }
    return QString();
}

} // namespace mneme::test
