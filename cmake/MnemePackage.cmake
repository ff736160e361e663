# What `cmake --install` writes besides the libraries and headers: the CMake package
# (MnemeConfig.cmake, MnemeConfigVersion.cmake; the export sets come from mneme_add_library), the
# umbrella pkg-config file, the license; and the Debian packages CPack builds (`make package`).
include(CMakePackageConfigHelpers)

configure_package_config_file(cmake/MnemeConfig.cmake.in ${PROJECT_BINARY_DIR}/cmake/MnemeConfig.cmake
  INSTALL_DESTINATION ${MNEME_CMAKE_INSTALL_DIR}
  PATH_VARS MNEME_PLUGIN_INSTALL_DIR)
# 0.x minor releases are not compatible with each other; from 1.0 on, SameMajorVersion.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/MnemeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/MnemeConfig.cmake ${PROJECT_BINARY_DIR}/cmake/MnemeConfigVersion.cmake
  DESTINATION ${MNEME_CMAKE_INSTALL_DIR} COMPONENT dev)

mneme_write_pkgconfig(mneme "${PROJECT_DESCRIPTION}" "mneme-core mneme-memory mneme-runtime mneme-flows mneme-models" "")

install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT libs)

# Debian packages: libmneme<soversion> (libraries and plugins), libmneme-dev (headers, CMake and
# pkg-config files), mneme (the command line), mneme-studio (the desktop app, so that the command line
# does not pull in Qt Widgets and a display stack). Dependencies on Debian's packages are found by
# dpkg-shlibdeps from the binaries themselves.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mneme)
set(CPACK_PACKAGE_VENDOR "The Mneme authors")
set(CPACK_PACKAGE_CONTACT "The Mneme authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL libs dev cli studio)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps runs in each component's staging folder; Mneme's own libraries are in the libs one.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ../libs${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(mneme_libs_package libmneme${MNEME_SOVERSION})
set(CPACK_DEBIAN_LIBS_PACKAGE_NAME ${mneme_libs_package})
set(CPACK_COMPONENT_LIBS_DESCRIPTION
    "Mneme ${PROJECT_VERSION}: the runtime libraries and plugins\n Libraries of Mneme, an agent runtime for C++/Qt with long-term memory: memory, crews, flows, and the plugins for storage (SQLite), embedders and LLM providers.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmneme-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS libs)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "qt6-base-dev (>= 6.4), nlohmann-json3-dev (>= 3.10)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Mneme ${PROJECT_VERSION}: development files\n Headers (<mneme/...>), the CMake package (find_package(Mneme)) and pkg-config files of Mneme, an agent runtime for C++/Qt with long-term memory.")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME mneme)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DEPENDS libs)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "Mneme ${PROJECT_VERSION}: the mneme command line\n Stores, recalls and curates an agent's long-term memory from a terminal.")
set(CPACK_DEBIAN_STUDIO_PACKAGE_NAME mneme-studio)
set(CPACK_DEBIAN_STUDIO_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_STUDIO_DEPENDS libs)
set(CPACK_COMPONENT_STUDIO_DESCRIPTION
    "Mneme ${PROJECT_VERSION}: Mneme Studio, the desktop app\n Browses, edits, recalls, imports and exports an agent's long-term memory in a window, and runs example crews and a chat on it.")
include(CPack)
