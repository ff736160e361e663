#pragma once

#include <QStyledItemDelegate>

namespace mneme::studio {

// Draws a value in 0..1 (the index's Qt::UserRole, as RecallResultModel gives each signal column) as
// a horizontal bar with the number beside it. Colours come from the palette (the bar is Highlight on
// a Midlight track, HighlightedText on a selected row), so light and dark themes both read.
class SignalBarDelegate : public QStyledItemDelegate
{
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;

    // Where the bar of a cell is drawn (the track; the filled part is its left `value` share).
    static QRect trackRect(const QStyleOptionViewItem &option);
};

} // namespace mneme::studio
