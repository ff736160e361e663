// The translation unit that builds the precompiled header shared by the libraries and plugins
// (mneme_pch, cmake/MnemeLibrary.cmake).
