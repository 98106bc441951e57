# Install rules, the CMake package and the pkg-config files
# (docs/design/packaging.md). Components, one per package:
#   runtime  libshapeml_runtime.so.0 (no LLVM/MLIR/Z3)   -> libshapeml-runtime0
#   sdk      libshapeml.so.0 (compiler + runtime + C ABI) -> libshapeml0
#   runtime_dev  headers, the runtime's .so link, the CMake package, shapeml-runtime.pc
#                                                        -> libshapeml-runtime-dev (no LLVM/MLIR/Z3)
#   dev      the compiler library's .so link and CMake targets, shapeml.pc -> libshapeml-dev
#   tools    shapemlc                                     -> shapeml-tools
#   cuda     <libdir>/shapeml/libshapeml_cuda.so          -> libshapeml-cuda0
#   doc      the guide, spec, error index, design notes, C ABI HTML, examples
#                                                        -> shapeml-doc (doc.cmake)
# Debian's multiarch library directory (lib/x86_64-linux-gnu) whatever the
# prefix, so the packages (prefix /usr) get it; -DCMAKE_INSTALL_LIBDIR=lib
# for other layouts (the conda recipe).
if(NOT DEFINED CMAKE_INSTALL_LIBDIR AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS /etc/debian_version)
  set(CMAKE_INSTALL_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE} CACHE PATH "Object code libraries (lib)")
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(SHAPEML_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/shapeml)

# Debian's libmlir-19 installs libMLIR.so.19.1 only in /usr/lib/llvm-19/lib,
# which is not on the loader's path: the compiler's binaries need a RUNPATH
# there once installed (the build tree has it already).
if(NOT SHAPEML_RUNTIME_ONLY)
  set_target_properties(shapeml shapemlc PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()

install(TARGETS shapeml_runtime EXPORT shapemlRuntimeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT runtime_dev)
set_target_properties(shapeml_runtime PROPERTIES EXPORT_NAME runtime)
install(EXPORT shapemlRuntimeTargets NAMESPACE shapeml:: DESTINATION ${SHAPEML_CMAKE_DIR} COMPONENT runtime_dev)

if(NOT SHAPEML_RUNTIME_ONLY)
  install(TARGETS shapeml EXPORT shapemlTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk NAMELINK_COMPONENT dev)
  install(EXPORT shapemlTargets NAMESPACE shapeml:: DESTINATION ${SHAPEML_CMAKE_DIR} COMPONENT dev)
  # shapemlc, and its imported target (shapeml::shapemlc) in the same package,
  # so the CMake package offers it exactly when shapeml-tools is installed.
  install(TARGETS shapemlc EXPORT shapemlToolsTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  install(EXPORT shapemlToolsTargets NAMESPACE shapeml:: DESTINATION ${SHAPEML_CMAKE_DIR} COMPONENT tools)
endif()

if(SHAPEML_WITH_CUDA)
  # A plugin, not a library to link: a private directory, found by the
  # runtime next to itself (src/runtime/cuda_plugin_loader.cpp).
  install(TARGETS shapeml_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/shapeml COMPONENT cuda)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/include/shapeml.h ${PROJECT_SOURCE_DIR}/include/shapeml_dlpack.h
              ${PROJECT_SOURCE_DIR}/include/shapeml_memory.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT runtime_dev)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cmake/shapemlConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/shapemlConfig.cmake INSTALL_DESTINATION ${SHAPEML_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# Within major 0 a minor release only adds (docs/design/abi-policy.md), so
# find_package(shapeml 0.3) accepts 0.4.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/shapemlConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/packaging/shapemlConfig.cmake ${PROJECT_BINARY_DIR}/packaging/shapemlConfigVersion.cmake
        DESTINATION ${SHAPEML_CMAKE_DIR} COMPONENT runtime_dev)

# pkg-config: relocatable (prefix from the .pc file's own place), so a tree
# unpacked anywhere (dpkg -x, a conda prefix) works.
file(RELATIVE_PATH SHAPEML_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SHAPEML_PC_TO_PREFIX "${SHAPEML_PC_TO_PREFIX}")
foreach(pc shapeml shapeml-runtime)
  if(pc STREQUAL "shapeml" AND SHAPEML_RUNTIME_ONLY)
    continue()
  endif()
  configure_file(${CMAKE_CURRENT_LIST_DIR}/pkgconfig/${pc}.pc.in ${PROJECT_BINARY_DIR}/packaging/${pc}.pc @ONLY)
  set(_pc_component runtime_dev)  # shapeml-runtime.pc; shapeml.pc goes with the compiler library
  if(pc STREQUAL "shapeml")
    set(_pc_component dev)
  endif()
  install(FILES ${PROJECT_BINARY_DIR}/packaging/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ${_pc_component})
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/doc.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/deb/cpack.cmake)
