mneme_add_test(test_llm_ollama SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llm_ollama.cpp LIBS mneme_test_support Qt6::Network LABELS providers)
add_dependencies(test_llm_ollama mneme_llm_ollama)
