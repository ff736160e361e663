#pragma once

#include <QString>
#include <QStringList>

namespace mneme {

// The offline half of extractMemories(): splits a text into statements without a model.
//
// A statement ends at a sentence end (". ", "! ", "? " before a capital letter, a digit or a quote),
// at a semicolon between clauses, at the end of a list item ("- ", "* ", "• ", "1. ", "2) ") and at a
// blank line. Abbreviations ("Dr.", "e.g.", "U.S."), decimals ("3.5") and ellipses do not end one.
// List markers are dropped; a short heading line ending in ':' ("Action items:") is not a statement
// of its own; fragments without a letter or a digit are dropped, and repeats kept once, in order.
namespace StatementSplitter {

QStringList split(const QString &text);

} // namespace StatementSplitter

} // namespace mneme
