# Helpers shared by the project's CMakeLists: one place that decides how a library, a plugin and the
# package are built and installed.

include(GenerateExportHeader)

# Where the build tree's public include tree lives: <mneme/LAYER/NAME.h> forwards to the source file.
set(MNEME_INCLUDE_BUILD_DIR ${PROJECT_BINARY_DIR}/include)
set(MNEME_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Mneme)
set(MNEME_PKGCONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The headers nearly every translation unit of the project parses, precompiled
# (MNEME_PRECOMPILE_HEADERS=OFF turns it off).
set(MNEME_PCH_HEADERS
  <QDateTime> <QFuture> <QHash> <QList> <QMutex> <QObject> <QSet> <QString> <QStringList>
  <algorithm> <functional> <map> <memory> <optional> <vector>
  <nlohmann/json.hpp>)

# mneme_precompile_headers(<target> [headers...]): MNEME_PCH_HEADERS and the given ones, precompiled
# for this target alone.
function(mneme_precompile_headers target)
  if(MNEME_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${MNEME_PCH_HEADERS} ${ARGN})
  endif()
endfunction()

# One precompiled header for the libraries and plugins, which share their compiler flags
# (position-independent, hidden visibility): mneme_reuse_pch(<target>) makes <target> use it.
if(MNEME_PRECOMPILE_HEADERS)
  add_library(mneme_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
  target_link_libraries(mneme_pch PRIVATE Qt6::Core Qt6::Network nlohmann_json::nlohmann_json)
  set_target_properties(mneme_pch PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  mneme_precompile_headers(mneme_pch)
endif()
function(mneme_reuse_pch target)
  if(MNEME_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} REUSE_FROM mneme_pch)
  endif()
endfunction()

# mneme_add_library(<target> <Component> LAYER <folder> HEADERS <public headers> SOURCES <sources>
#                   [PUBLIC_LIBS ...] [PRIVATE_LIBS ...] [PKG_REQUIRES ...])
#
# A shared library of the package, `Mneme::<Component>`: hidden visibility with a generated export
# header <mneme/LAYER/export.h>, VERSION and SOVERSION, the public headers (and only those) reachable
# as <mneme/LAYER/NAME.h> in the build tree and installed there, an export set of its own and a
# pkg-config file mneme-<layer>.pc. Private headers (*_p.h) are reachable inside the project only, as
# "LAYER/NAME_p.h".
function(mneme_add_library target component)
  cmake_parse_arguments(L "" "LAYER" "HEADERS;SOURCES;PUBLIC_LIBS;PRIVATE_LIBS;PKG_REQUIRES" ${ARGN})
  foreach(h IN LISTS L_HEADERS)
    if(h MATCHES "_p\\.h$")
      message(FATAL_ERROR "${h} is private (*_p.h) and cannot be a public header of ${target}")
    endif()
  endforeach()

  add_library(${target} SHARED ${L_SOURCES} ${L_HEADERS})
  add_library(Mneme::${component} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${component}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${MNEME_SOVERSION}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN")
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${MNEME_INCLUDE_BUILD_DIR}>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC ${L_PUBLIC_LIBS} PRIVATE ${L_PRIVATE_LIBS})
  mneme_reuse_pch(${target})
  # Only namespace mneme leaves the library: not the Qt and standard templates instantiated in it.
  target_link_options(${target} PRIVATE "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/mneme.map")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/mneme.map)

  string(TOUPPER "${L_LAYER}" upper)
  set(include_dir ${MNEME_INCLUDE_BUILD_DIR}/mneme/${L_LAYER})
  generate_export_header(${target}
    BASE_NAME MNEME_${upper}
    EXPORT_FILE_NAME ${include_dir}/export.h)
  foreach(h IN LISTS L_HEADERS)
    file(CONFIGURE OUTPUT ${include_dir}/${h}
         CONTENT "// Generated: the build tree's copy of <mneme/${L_LAYER}/${h}>.\n#include \"${CMAKE_CURRENT_SOURCE_DIR}/${h}\"\n")
  endforeach()

  if(MNEME_INSTALL)
    install(TARGETS ${target} EXPORT Mneme${component}Targets
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT libs NAMELINK_COMPONENT dev)
    install(FILES ${L_HEADERS} ${include_dir}/export.h
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mneme/${L_LAYER} COMPONENT dev)
    install(EXPORT Mneme${component}Targets NAMESPACE Mneme::
      DESTINATION ${MNEME_CMAKE_INSTALL_DIR} COMPONENT dev)
    mneme_write_pkgconfig(mneme-${L_LAYER} "Mneme ${component}: ${PROJECT_DESCRIPTION}"
      "${L_PKG_REQUIRES}" "-lmneme_${L_LAYER}")
  endif()
endfunction()

# mneme_write_pkgconfig(<name> <description> <requires> <libs>): installs <name>.pc, written at install
# time so that it names the prefix really installed to (`cmake --install --prefix`, CPack).
function(mneme_write_pkgconfig name description requires libs)
  list(JOIN requires " " requires)
  set(template ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc.in)
  file(CONFIGURE OUTPUT ${template} CONTENT
"prefix=%PREFIX%
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}
plugindir=\${libdir}/mneme/plugins

Name: ${name}
Description: ${description}
Version: ${PROJECT_VERSION}
Requires: ${requires}
Libs: -L\${libdir} ${libs}
Cflags: -I\${includedir}
" @ONLY)
  install(CODE "
    file(READ \"${template}\" pc)
    string(REPLACE %PREFIX% \"\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/pkgconfig/install/${name}.pc\" \"\${pc}\")
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${MNEME_PKGCONFIG_INSTALL_DIR}\"
         TYPE FILE FILES \"${PROJECT_BINARY_DIR}/pkgconfig/install/${name}.pc\")"
    COMPONENT dev)
endfunction()

# mneme_add_plugin(<target> SOURCES ... [LIBS ...]): a Qt plugin (MODULE library) in the build tree's
# lib/mneme/plugins, installed to <libdir>/mneme/plugins: the same place relative to libmneme_core in
# both, which is where PluginRegistry looks.
function(mneme_add_plugin target)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  add_library(${target} MODULE ${P_SOURCES})
  set_property(GLOBAL APPEND PROPERTY MNEME_PLUGIN_TARGETS ${target})
  target_link_libraries(${target} PRIVATE Mneme::Core ${P_LIBS})
  mneme_reuse_pch(${target})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${MNEME_PLUGIN_BUILD_DIR}
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN/../..")
  if(MNEME_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${MNEME_PLUGIN_INSTALL_DIR} COMPONENT libs)
  endif()
endfunction()
