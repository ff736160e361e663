#include "input_lines.h"

#include <mneme/core/error.h>

#include <QFile>
#include <QStringDecoder>
#include <cstdio>

namespace mneme::cli {

namespace {

// The longest line of JSON Lines or text input read (a record with a 65,536-character content and a
// 4,096-dimensional embedding takes well under 1 MiB).
constexpr qsizetype kMaxLineBytes = 8 * 1024 * 1024;

// Decodes one line; false when it is not valid UTF-8.
bool decodeUtf8(QByteArrayView bytes, QString *out)
{
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    *out = decoder.decode(bytes);
    return !decoder.hasError();
}

} // namespace

QByteArray InputLines::readBytes(const QString &file, QString *name)
{
    QFile f;
    bool opened = false;
    if (file == QLatin1String("-")) {
        *name = QStringLiteral("standard input");
        opened = f.open(stdin, QIODevice::ReadOnly);
    } else {
        *name = file;
        f.setFileName(file);
        opened = f.open(QIODevice::ReadOnly);
    }
    if (!opened)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("cannot read %1: %2; check the path").arg(*name, f.errorString()));
    const QByteArray bytes = f.readAll();
    if (f.error() != QFileDevice::NoError)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("cannot read %1: %2").arg(*name, f.errorString()));
    return bytes;
}

InputLines InputLines::read(const QString &file)
{
    QString name;
    const QByteArray bytes = readBytes(file, &name);
    return fromBytes(bytes, name);
}

QString InputLines::readText(const QString &file)
{
    QString name;
    QByteArray bytes = readBytes(file, &name);
    if (bytes.startsWith("\xEF\xBB\xBF"))
        bytes.remove(0, 3);
    QString text;
    if (!decodeUtf8(bytes, &text))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is not valid UTF-8; convert it to UTF-8").arg(name));
    return text;
}

InputLines InputLines::fromBytes(const QByteArray &input, const QString &name)
{
    InputLines result;
    result.m_name = name;
    QByteArrayView bytes(input);
    if (bytes.startsWith("\xEF\xBB\xBF"))
        bytes = bytes.sliced(3);

    int number = 0;
    qsizetype start = 0;
    while (start < bytes.size()) {
        qsizetype end = bytes.indexOf('\n', start);
        if (end < 0)
            end = bytes.size();
        QByteArrayView raw = bytes.sliced(start, end - start);
        if (raw.endsWith('\r'))
            raw.chop(1);
        ++number;
        if (raw.size() > kMaxLineBytes)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 line %2 is %3 bytes long, over the limit of %4 bytes a line; split it (nothing was stored)")
                            .arg(name, QString::number(number), QString::number(raw.size()), QString::number(kMaxLineBytes)));
        Line line;
        line.number = number;
        if (!decodeUtf8(raw, &line.text)) {
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 line %2 is not valid UTF-8; convert the file to UTF-8 (nothing was stored)")
                            .arg(name, QString::number(number)));
        }
        result.m_lines.append(std::move(line));
        start = end + 1;
    }
    return result;
}

QList<InputLines::Line> InputLines::nonBlankLines() const
{
    QList<Line> out;
    for (const Line &line : m_lines) {
        if (!line.text.trimmed().isEmpty())
            out.append(line);
    }
    return out;
}

QString InputLines::where(const Line &line, const QString &what) const
{
    return QStringLiteral("%1 line %2: %3").arg(m_name, QString::number(line.number), what);
}

} // namespace mneme::cli
