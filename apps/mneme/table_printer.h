#pragma once

#include <QList>
#include <QString>
#include <QStringList>

namespace mneme::cli {

// A plain-text table for people: a header line, then one line per row, columns separated by two
// spaces and padded to the widest cell. Cells are flattened to one line and cut to the column's
// maximum width with an ellipsis.
class TablePrinter
{
public:
    enum class Align {
        Left,
        Right
    };

    // maxWidth 0: no limit.
    void addColumn(const QString &header, Align align = Align::Left, int maxWidth = 0);
    void addRow(const QStringList &cells);
    bool isEmpty() const { return m_rows.isEmpty(); }

    QString render() const;

    // `text` on one line (white space runs collapsed), cut to `width` characters with "…".
    static QString preview(const QString &text, int width);

private:
    struct Column
    {
        QString header;
        Align align;
        int maxWidth;
    };
    QList<Column> m_columns;
    QList<QStringList> m_rows;
};

} // namespace mneme::cli
