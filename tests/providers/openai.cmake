mneme_add_test(test_llm_openai SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llm_openai.cpp LIBS mneme_test_support LABELS providers)
add_dependencies(test_llm_openai mneme_llm_openai)
