#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace mneme {
class Memory;
class RecallResultModel;
} // namespace mneme

namespace mneme::studio {

// A recall as an agent would make it: a query, the scope and source it is limited to, how many
// matches and how deep; the matches best first (RecallResultModel) with each signal drawn as a bar
// (SignalBarDelegate), and the chosen match's content, reasons and evidence gaps below.
class RecallPanel : public QWidget
{
    Q_OBJECT
public:
    explicit RecallPanel(QWidget *parent = nullptr);

    void setMemory(Memory *memory);
    void recall();

    RecallResultModel *resultModel() const;
    QTableView *resultView() const;
    QLineEdit *queryEdit() const;
    QLineEdit *scopeEdit() const;
    QLineEdit *sourceEdit() const;
    QPlainTextEdit *matchView() const;

Q_SIGNALS:
    void failed(const QString &message);

private:
    void showMatch();
    void showSummary();

    Memory *m_memory = nullptr;
    RecallResultModel *m_results;
    QLineEdit *m_query;
    QLineEdit *m_scope;
    QLineEdit *m_source;
    QSpinBox *m_limit;
    QComboBox *m_depth;
    QPushButton *m_run;
    QTableView *m_table;
    QLabel *m_summary;
    QPlainTextEdit *m_match;
};

} // namespace mneme::studio
