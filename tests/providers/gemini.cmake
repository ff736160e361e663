mneme_add_test(test_llm_gemini SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llm_gemini.cpp LIBS mneme_test_support Qt6::Network LABELS providers)
add_dependencies(test_llm_gemini mneme_llm_gemini)
