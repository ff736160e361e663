#pragma once

#include "core/embedder.h"

#include <QString>
#include <QStringList>
#include <vector>

namespace mneme {

// The default embedder: deterministic, offline, no model weights. Feature hashing of
// normalised words, adjacent word pairs and character 3- and 4-grams into `dimension` signed
// buckets, L2-normalised. See plugins/embedders/builtin/README.md for what it does and does not
// capture.
//
// The hashing is fixed (its own 64-bit hash over UTF-8 bytes), so a vector computed today equals
// the vector computed by any later build on any platform for the same text, id and dimension.
// Thread-safe: embed() keeps all its working state on the caller's stack.
class HashEmbedder : public Embedder
{
public:
    static constexpr int DefaultDimension = 384;
    static constexpr int MinDimension = 16;
    static constexpr int MaxDimension = 4096;

    // "hash-v1"
    static QString modelName();

    // Throws Error(InvalidArgument) when dimension is outside MinDimension..MaxDimension.
    explicit HashEmbedder(int dimension = DefaultDimension);

    QString id() const override;   // "builtin/hash-v1"
    int dimension() const override;
    std::vector<Embedding> embed(const QStringList &texts) override;

    // One text; a blank text (or one with nothing but punctuation) gives an empty vector.
    Embedding embedOne(const QString &text) const;

    // The normalisation the features are computed from: compatibility decomposition, case
    // folding, diacritics removed, apostrophe/hyphen variants unified, canonical composition.
    // Exposed for diagnostics and tests of the normaliser; embed() uses a table-driven fast path
    // that gives the same result.
    static QString normalize(const QString &text);

private:
    int m_dimension;
};

} // namespace mneme
