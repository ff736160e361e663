#include "table_printer.h"

#include "console.h"

namespace mneme::cli {

void TablePrinter::addColumn(const QString &header, Align align, int maxWidth)
{
    m_columns.append(Column{header, align, maxWidth});
}

void TablePrinter::addRow(const QStringList &cells)
{
    QStringList row;
    for (qsizetype i = 0; i < m_columns.size(); ++i)
        row.append(preview(cells.value(i), m_columns.at(i).maxWidth));
    m_rows.append(row);
}

QString TablePrinter::render() const
{
    QList<qsizetype> widths;
    for (const Column &c : m_columns)
        widths.append(c.header.size());
    for (const QStringList &row : m_rows) {
        for (qsizetype i = 0; i < row.size(); ++i)
            widths[i] = std::max(widths[i], row.at(i).size());
    }
    auto line = [&](const QStringList &cells) {
        QString out;
        for (qsizetype i = 0; i < cells.size(); ++i) {
            const bool last = i + 1 == cells.size();
            if (i > 0)
                out += QStringLiteral("  ");
            if (m_columns.at(i).align == Align::Right)
                out += cells.at(i).rightJustified(widths.at(i));
            else
                out += last ? cells.at(i) : cells.at(i).leftJustified(widths.at(i));
        }
        return out + QLatin1Char('\n');
    };
    QStringList headers;
    for (const Column &c : m_columns)
        headers.append(c.header);
    QString text = line(headers);
    for (const QStringList &row : m_rows)
        text += line(row);
    return text;
}

QString TablePrinter::preview(const QString &text, int width)
{
    const QString flat = Console::oneLine(text).simplified();
    if (width <= 0 || flat.size() <= width)
        return flat;
    return flat.left(std::max(0, width - 1)) + QChar(0x2026);
}

} // namespace mneme::cli
