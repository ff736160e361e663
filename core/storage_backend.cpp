#include <mneme/core/error.h>
#include <mneme/core/storage_backend.h>

namespace mneme {

void StateRequest::checkKey(const QString &key)
{
    if (key.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a state key is empty; name the document, such as \"conversation/42\""));
    qsizetype characters = 0;
    for (qsizetype i = 0; i < key.size(); ++i, ++characters) {
        const QChar c = key.at(i);
        if (c.category() == QChar::Other_Control)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the state key holds the control character U+%1 at position %2; use printable characters only")
                            .arg(QString::number(c.unicode(), 16).toUpper().rightJustified(4, QLatin1Char('0')))
                            .arg(i));
        // A lone surrogate has no UTF-8 form: stored, it would turn into U+FFFD and name another key.
        if (c.isSurrogate()) {
            if (!c.isHighSurrogate() || i + 1 >= key.size() || !key.at(i + 1).isLowSurrogate())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("the state key holds an unpaired UTF-16 surrogate at position %1; pass valid Unicode text").arg(i));
            ++i;
        }
    }
    if (characters > kMaxKeyLength)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the state key \"%1...\" is %2 characters long; use at most %3")
                        .arg(key.left(40))
                        .arg(characters)
                        .arg(kMaxKeyLength));
}

} // namespace mneme
