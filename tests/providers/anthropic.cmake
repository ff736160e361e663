# The anthropic LLM plugin against the scripted HTTP server.
mneme_add_test(test_llm_anthropic
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llm_anthropic.cpp
  LIBS mneme_test_support Qt6::Network
  LABELS providers)
add_dependencies(test_llm_anthropic mneme_llm_anthropic)
