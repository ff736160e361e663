#include "signal_bar_delegate.h"

#include <QApplication>
#include <QPainter>

namespace mneme::studio {

namespace {

constexpr int kMargin = 3;

int numberWidth(const QStyleOptionViewItem &option)
{
    return option.fontMetrics.horizontalAdvance(QStringLiteral("0.00")) + 2 * kMargin;
}

} // namespace

QRect SignalBarDelegate::trackRect(const QStyleOptionViewItem &option)
{
    const QRect cell = option.rect.adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const int height = qMin(cell.height(), option.fontMetrics.height() - 2);
    QRect track(cell.left(), cell.center().y() - height / 2, cell.width() - numberWidth(option), height);
    return track.width() > 0 ? track : QRect();
}

void SignalBarDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    const QVariant value = index.data(Qt::UserRole);
    if (!value.isValid()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QString number = opt.text;
    opt.text.clear();
    const QStyle *style = opt.widget ? opt.widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);

    const bool selected = opt.state.testFlag(QStyle::State_Selected);
    const QPalette::ColorGroup group = opt.state.testFlag(QStyle::State_Enabled) ? QPalette::Normal : QPalette::Disabled;
    const double share = qBound(0.0, value.toDouble(), 1.0);
    const QRect track = trackRect(opt);
    painter->save();
    if (track.isValid()) {
        painter->fillRect(track, opt.palette.color(group, selected ? QPalette::Highlight : QPalette::Midlight).darker(selected ? 120 : 100));
        QRect bar = track;
        bar.setWidth(int(track.width() * share + 0.5));
        if (bar.width() > 0)
            painter->fillRect(bar, opt.palette.color(group, selected ? QPalette::HighlightedText : QPalette::Highlight));
    }
    painter->setPen(opt.palette.color(group, selected ? QPalette::HighlightedText : QPalette::Text));
    const QRect numberRect(opt.rect.right() - numberWidth(opt) + 1, opt.rect.top(), numberWidth(opt) - kMargin, opt.rect.height());
    painter->drawText(numberRect, Qt::AlignRight | Qt::AlignVCenter, number);
    painter->restore();
}

QSize SignalBarDelegate::sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    size.setWidth(qMax(size.width(), numberWidth(option) + 60));
    return size;
}

} // namespace mneme::studio
