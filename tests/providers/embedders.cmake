# The network embedder plugins against the scripted HTTP server, and a Memory embedding through one.
mneme_add_test(test_embedders_http
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_embedders_http.cpp
  LIBS mneme_test_support mneme_memory Qt6::Network
  LABELS providers)
add_dependencies(test_embedders_http
  mneme_embedder_openai mneme_embedder_ollama mneme_embedder_gemini mneme_embedder_cohere
  mneme_embedder_voyageai mneme_embedder_jina mneme_embedder_huggingface mneme_storage_sqlite)
