#include <mneme/core/scope_path.h>

#include <mneme/core/error.h>

namespace mneme {

namespace {

// How deep and how long a scope may be (docs/concepts.md#scopes): a tree of these is printed and
// walked level by level, and every path is stored with each of its records.
constexpr qsizetype kMaxSegments = 32;
constexpr qsizetype kMaxSegmentChars = 200;
constexpr qsizetype kMaxPathChars = 1000;

bool check(const QString &input, QString *normalized, QString *error)
{
    QString p = input.trimmed();
    auto fail = [&](const QString &why) {
        if (error)
            *error = QStringLiteral("invalid scope path %1: %2").arg(Error::quoted(input), why);
        return false;
    };
    for (const QChar c : p) {
        if (c.category() == QChar::Other_Control || c.unicode() == 0x7f)
            return fail(QStringLiteral("it contains a control character; use printable characters only"));
    }
    if (p.isEmpty() || p == QLatin1String("/")) {
        if (normalized)
            *normalized = QStringLiteral("/");
        return true;
    }
    if (!p.startsWith(QLatin1Char('/')))
        p.prepend(QLatin1Char('/'));
    if (p.size() > 1 && p.endsWith(QLatin1Char('/')))
        p.chop(1);
    if (p.size() > kMaxPathChars)
        return fail(QStringLiteral("it is %1 characters long; a scope has at most %2").arg(p.size()).arg(kMaxPathChars));
    const QStringList parts = p.mid(1).split(QLatin1Char('/'));
    if (parts.size() > kMaxSegments)
        return fail(QStringLiteral("it has %1 segments; a scope has at most %2 levels").arg(parts.size()).arg(kMaxSegments));
    for (const QString &seg : parts) {
        if (seg.isEmpty())
            return fail(QStringLiteral("it has an empty segment; write paths like /project/alpha"));
        if (seg == QLatin1String("..") || seg == QLatin1String("."))
            return fail(QStringLiteral("'%1' segments are not allowed; write the absolute path").arg(seg));
        if (seg.trimmed() != seg)
            return fail(QStringLiteral("a segment starts or ends with white space"));
        if (seg.size() > kMaxSegmentChars)
            return fail(QStringLiteral("a segment is longer than %1 characters").arg(kMaxSegmentChars));
    }
    if (normalized)
        *normalized = p;
    return true;
}

} // namespace

QString ScopePath::normalize(const QString &path)
{
    QString out, error;
    if (!check(path, &out, &error))
        throw Error(ErrorKind::InvalidArgument, error);
    return out;
}

bool ScopePath::isValid(const QString &path, QString *error)
{
    return check(path, nullptr, error);
}

QString ScopePath::join(const QString &root, const QString &inner)
{
    const QString r = normalize(root);
    const QString i = normalize(inner);
    if (r == QLatin1String("/"))
        return i;
    if (i == QLatin1String("/"))
        return r;
    return r + i;
}

bool ScopePath::contains(const QString &prefix, const QString &path)
{
    if (prefix.isEmpty() || prefix == QLatin1String("/"))
        return true;
    if (!path.startsWith(prefix))
        return false;
    return path.size() == prefix.size() || path.at(prefix.size()) == QLatin1Char('/');
}

QString ScopePath::parent(const QString &path)
{
    const qsizetype i = path.lastIndexOf(QLatin1Char('/'));
    if (i <= 0)
        return QStringLiteral("/");
    return path.left(i);
}

QStringList ScopePath::segments(const QString &path)
{
    if (path.isEmpty() || path == QLatin1String("/"))
        return {};
    return path.mid(1).split(QLatin1Char('/'));
}

QString ScopePath::childToward(const QString &parent, const QString &path)
{
    const bool root = parent.isEmpty() || parent == QLatin1String("/");
    if (path == parent || !contains(parent, path))
        return {};
    const qsizetype start = root ? 1 : parent.size() + 1;
    const qsizetype end = path.indexOf(QLatin1Char('/'), start);
    return end < 0 ? path : path.left(end);
}

QString ScopePath::sanitizeName(const QString &name)
{
    const QString lower = name.trimmed().toLower();
    QString out;
    out.reserve(lower.size());
    for (const QChar c : lower) {
        const ushort u = c.unicode();
        const bool ok = (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '_' || u == '-';
        const QChar w = ok ? c : QLatin1Char('-');
        if (w == QLatin1Char('-') && out.endsWith(QLatin1Char('-')))
            continue;
        out.append(w);
    }
    while (out.startsWith(QLatin1Char('-')))
        out.remove(0, 1);
    while (out.endsWith(QLatin1Char('-')))
        out.chop(1);
    return out.isEmpty() ? QStringLiteral("unknown") : out;
}

} // namespace mneme
