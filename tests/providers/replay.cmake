mneme_add_test(test_llm_replay SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llm_replay.cpp LIBS mneme_test_support LABELS providers)
add_dependencies(test_llm_replay mneme_llm_replay)
