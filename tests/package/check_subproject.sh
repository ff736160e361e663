#!/usr/bin/env bash
# Mneme pulled into another project with add_subdirectory(): it gives the Mneme:: targets, sets no
# build type, builds no tests, examples or benchmark, and installs nothing (configured, not built).
#
#   tests/package/check_subproject.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/mneme-subproject.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/parent"
cat > "$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(parent LANGUAGES CXX)
add_subdirectory("$src" mneme)
foreach(target Mneme::Core Mneme::Memory Mneme::Runtime Mneme::Flows Mneme::Models mneme)
  if(NOT TARGET \${target})
    message(FATAL_ERROR "no target \${target}")
  endif()
endforeach()
foreach(target test_memory test_cli mneme_test_support quick_start standalone_memory mneme-bench)
  if(TARGET \${target})
    message(FATAL_ERROR "the subproject defines \${target}, which is only for Mneme built alone")
  endif()
endforeach()
if(CMAKE_BUILD_TYPE)
  message(FATAL_ERROR "the subproject set CMAKE_BUILD_TYPE to \${CMAKE_BUILD_TYPE}")
endif()
get_property(build_type CACHE CMAKE_BUILD_TYPE PROPERTY VALUE)
if(build_type)
  message(FATAL_ERROR "the subproject set the cached CMAKE_BUILD_TYPE to \${build_type}")
endif()
add_executable(hello main.cpp)
target_link_libraries(hello PRIVATE Mneme::Memory)
CMAKE
printf 'int main() { return 0; }\n' > "$work/parent/main.cpp"
cmake -S "$work/parent" -B "$work/build" -G Ninja > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; echo "check_subproject: configuring the parent failed" >&2; exit 1; }
if grep -rl 'file(INSTALL' --include=cmake_install.cmake "$work/build/mneme" | grep -q .; then
  echo "check_subproject: the subproject installs files:" >&2
  grep -rl 'file(INSTALL' --include=cmake_install.cmake "$work/build/mneme" >&2
  exit 1
fi
echo "check_subproject: passed"
