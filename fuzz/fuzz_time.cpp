// Time parsing: fromIso() (every time Mneme reads) and the offline time-phrase parser
// (TimeExpression::parse). A time fromIso() accepts is within the years 1 to 9999 and is written and
// read back unchanged; a period parse() finds is ordered.

#include "memory/time_expression_p.h"
#include <mneme/core/json.h>

#include <QDateTime>
#include <cstdint>
#include <cstdlib>

using namespace mneme;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QString text = QString::fromUtf8(reinterpret_cast<const char *>(data), qsizetype(size));
    const QDateTime t = fromIso(text);
    if (t.isValid()) {
        if (t.timeSpec() != Qt::UTC || t.date().year() < 1 || t.date().year() > 9999)
            std::abort();
        if (fromIso(toIso(t)) != t)
            std::abort();
    }
    static const QDateTime now(QDate(2024, 5, 15), QTime(12, 0), Qt::UTC);
    if (const std::optional<TimeRange> r = TimeExpression::parse(text.left(2000), now)) {
        if (r->from.isValid() && r->to.isValid() && r->to < r->from)
            std::abort();
    }
    return 0;
}
