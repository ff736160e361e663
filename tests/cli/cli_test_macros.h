#pragma once

// Checks shared by the tests of the command line (QtTest macros: they return from the test on failure).

#include "cli_runner.h"

#include <QTest>
#include <nlohmann/json.hpp>

// Compares two JSON values (QCOMPARE cannot take nlohmann::json) and shows both on failure.
#define COMPARE_JSON(actual, expected)                                                                        \
    do {                                                                                                      \
        const Json actual_ = (actual);                                                                        \
        const Json expected_ = (expected);                                                                    \
        QVERIFY2(actual_ == expected_, ("got " + actual_.dump() + ", expected " + expected_.dump()).c_str()); \
    } while (false)
// Fails the current test (returning from it) unless the run exited with `code`.
#define EXPECT_EXIT(run, code) QVERIFY2((run).exitCode == (code), (run).describe().constData())
// Runs the CLI and fails unless it succeeded with one JSON document on stdout and nothing on stderr.
#define EXPECT_JSON_OK(run)                                          \
    do {                                                             \
        EXPECT_EXIT(run, 0);                                         \
        QVERIFY2((run).isJson(), (run).describe().constData());      \
        QVERIFY2((run).err.isEmpty(), (run).describe().constData()); \
    } while (false)
// Fails unless the run failed with `code`, an empty stdout and one line "mneme: ..." on stderr.
#define EXPECT_FAILURE(run, code)                                                                       \
    do {                                                                                                \
        EXPECT_EXIT(run, code);                                                                         \
        QVERIFY2((run).out.isEmpty(), (run).describe().constData());                                    \
        QVERIFY2((run).err.startsWith("mneme: "), (run).describe().constData());                        \
        QVERIFY2((run).err.count('\n') == 1 && (run).err.endsWith('\n'), (run).describe().constData()); \
    } while (false)
