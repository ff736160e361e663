#pragma once

#include <QGroupBox>

class QComboBox;
class QLabel;
class QLineEdit;
class QSettings;

namespace mneme {
class LlmRef;
}

namespace mneme::studio {

// The LLM the Run and Chat views use: the example's replay cassette (offline), or an LLM plugin
// chosen by its key as the PluginRegistry lists it, with a model name. API keys are never asked
// for: each provider reads its own environment variable. The key and the model are kept in
// `settings` (shared by every box: a box reads them again when it is shown); nothing else is.
class ProviderBox : public QGroupBox
{
    Q_OBJECT
public:
    explicit ProviderBox(QSettings &settings, QWidget *parent = nullptr);

    // The value of the replay choice in providerChoice().
    static QString replayChoice();
    // The chosen LLM; the replay choice replays `cassette`.
    LlmRef llm(const QString &cassette) const;
    bool isReplay() const;

    QComboBox *providerChoice() const;
    QLineEdit *modelEdit() const;

protected:
    void showEvent(QShowEvent *event) override;

private:
    void load();
    void save();

    QSettings &m_settings;
    QComboBox *m_provider;
    QLineEdit *m_model;
    QLabel *m_keyNote;
    bool m_loading = false;
};

} // namespace mneme::studio
