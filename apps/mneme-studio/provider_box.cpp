#include "provider_box.h"

#include <mneme/core/plugin_registry.h>
#include <mneme/runtime/llm_ref.h>

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>

namespace mneme::studio {

namespace {

const QString kProviderKey = QStringLiteral("llm/provider");
const QString kModelKey = QStringLiteral("llm/model");

} // namespace

QString ProviderBox::replayChoice()
{
    return QStringLiteral("replay");
}

ProviderBox::ProviderBox(QSettings &settings, QWidget *parent)
    : QGroupBox(tr("Provider"), parent),
      m_settings(settings),
      m_provider(new QComboBox(this)),
      m_model(new QLineEdit(this)),
      m_keyNote(new QLabel(this))
{
    m_provider->setAccessibleName(tr("LLM provider"));
    m_provider->addItem(tr("Replay the example's cassette (offline)"), replayChoice());
    for (const QString &key : PluginRegistry::instance().keys(PluginRegistry::Kind::Llm))
        if (key != replayChoice())
            m_provider->addItem(key, key);
    m_model->setAccessibleName(tr("Model"));
    m_model->setPlaceholderText(tr("the provider's model, e.g. gpt-4o-mini"));
    m_keyNote->setWordWrap(true);
    m_keyNote->setAccessibleName(tr("About API keys"));
    m_keyNote->setText(tr("API keys are read by the provider from its environment variable (OPENAI_API_KEY, "
                          "ANTHROPIC_API_KEY, GEMINI_API_KEY, ...) and never stored by the studio."));
    auto *form = new QFormLayout(this);
    form->addRow(tr("&LLM:"), m_provider);
    form->addRow(tr("Mo&del:"), m_model);
    form->addRow(m_keyNote);
    setTabOrder(m_provider, m_model);

    connect(m_provider, &QComboBox::currentIndexChanged, this, [this] {
        m_model->setEnabled(!isReplay());
        save();
    });
    connect(m_model, &QLineEdit::editingFinished, this, &ProviderBox::save);
    load();
}

void ProviderBox::load()
{
    m_loading = true;
    m_provider->setCurrentIndex(qMax(0, m_provider->findData(m_settings.value(kProviderKey, replayChoice()).toString())));
    m_model->setText(m_settings.value(kModelKey).toString());
    m_model->setEnabled(!isReplay());
    m_loading = false;
}

void ProviderBox::save()
{
    if (m_loading)
        return;
    m_settings.setValue(kProviderKey, m_provider->currentData().toString());
    m_settings.setValue(kModelKey, m_model->text().trimmed());
}

void ProviderBox::showEvent(QShowEvent *event)
{
    load();
    QGroupBox::showEvent(event);
}

bool ProviderBox::isReplay() const
{
    return m_provider->currentData().toString() == replayChoice();
}

LlmRef ProviderBox::llm(const QString &cassette) const
{
    if (isReplay())
        return LlmRef(Json{{"provider", "replay"}, {"config", {{"cassette", cassette.toStdString()}}}});
    const QString provider = m_provider->currentData().toString();
    const QString model = m_model->text().trimmed();
    return LlmRef(model.isEmpty() ? provider : provider + QLatin1Char('/') + model);
}

QComboBox *ProviderBox::providerChoice() const
{
    return m_provider;
}

QLineEdit *ProviderBox::modelEdit() const
{
    return m_model;
}

} // namespace mneme::studio
