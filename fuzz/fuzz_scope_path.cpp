// Scope paths: normalize, isValid, join, contains, childToward. What normalize() accepts is a fixed
// point of it, valid, within the limits, and never throws anything but mneme::Error.

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QString>
#include <cstdint>
#include <cstdlib>

using namespace mneme;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QString text = QString::fromUtf8(reinterpret_cast<const char *>(data), qsizetype(size));
    const qsizetype cut = text.indexOf(QChar(0x1f)); // "root<US>inner" tests join()
    const QString first = cut < 0 ? text : text.left(cut);
    const QString second = cut < 0 ? QString() : text.mid(cut + 1);
    QString error;
    const bool valid = ScopePath::isValid(first, &error);
    try {
        const QString normal = ScopePath::normalize(first);
        if (!valid || ScopePath::normalize(normal) != normal || !normal.startsWith(QLatin1Char('/')) || normal.size() > 1000
            || ScopePath::segments(normal).size() > 32)
            std::abort();
        if (!ScopePath::contains(ScopePath::parent(normal), normal) || !ScopePath::contains(normal, normal))
            std::abort();
        const QString child = ScopePath::childToward(QStringLiteral("/"), normal);
        if (normal != QLatin1String("/") && !ScopePath::contains(child, normal))
            std::abort();
        (void)ScopePath::join(normal, second);
    } catch (const Error &e) {
        if (valid && e.message().contains(QLatin1String("invalid scope path")) && cut < 0)
            std::abort(); // isValid() said yes, normalize() said no
        if (e.message().size() > 600)
            std::abort(); // messages quote a bounded prefix
    }
    (void)ScopePath::sanitizeName(text);
    return 0;
}
