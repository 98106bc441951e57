# Debian packages with CPack (docs/design/packaging.md):
#   cd build/default && cpack -G DEB -B packages
# One package per install component (packaging/install.cmake). Depends come
# from the binaries (dpkg-shlibdeps); each library package ships a shlibs
# file and an ldconfig trigger; every package a copyright file and a
# changelog.Debian.gz; lintian runs clean (scripts/package-test.sh).
set(SHAPEML_DEB_REVISION 1)
set(SHAPEML_DEB_VERSION "${PROJECT_VERSION}-${SHAPEML_DEB_REVISION}")
set(SHAPEML_DEB_MAINTAINER "shapeml maintainers <shapeml-maintainers@lists.shapeml.org>")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shapeml)
set(CPACK_PACKAGE_VENDOR shapeml)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SHAPEML_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the build is -g (the ABI check needs it); the packages are not
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime runtime_dev doc)
if(NOT SHAPEML_RUNTIME_ONLY)
  list(APPEND CPACK_COMPONENTS_ALL sdk dev tools)
endif()
if(SHAPEML_WITH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Without CPack's ldconfig postinst/postrm (the trigger does it) and
# without a package listed twice in Depends:
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/post-build.cmake)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${SHAPEML_DEB_REVISION})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SHAPEML_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://shapeml.org")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before every
# package's own first line, giving all of them one synopsis.

set(_ldconfig_extra ${CMAKE_CURRENT_LIST_DIR}/triggers)
set(_long "shapeml is a shape-typed tensor language: every tensor type carries a dtype,\na symbolic shape and a device, and shape obligations are proved with Z3\nbefore anything runs. Programs compile through MLIR to native CPU code\n(just in time or ahead of time) and dispatch to CUDA libraries on GPUs.")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libshapeml-runtime0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${_ldconfig_extra})
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "shape-typed tensor compiler - runtime library\n${_long}\n.\nThis package holds libshapeml_runtime.so.0, the runtime alone: tensors,\nmemory resources, DLPack, loading and calling ahead-of-time compiled\nmodules. It needs no LLVM, MLIR or Z3.")

# dpkg-shlibdeps resolves libLLVM.so.19.1 through the RUNPATH to
# /usr/lib/llvm-19/lib, where the file is llvm-19-dev's symlink with no shlibs
# entry, and drops it; the library itself is libllvm19's. Named by hand:
set(SHAPEML_DEB_LLVM "libllvm19 (>= 1:19.1.7)")
set(CPACK_DEBIAN_SDK_PACKAGE_NAME libshapeml0)
set(CPACK_DEBIAN_SDK_PACKAGE_DEPENDS "${SHAPEML_DEB_LLVM}")
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_SDK_PACKAGE_CONTROL_EXTRA ${_ldconfig_extra})
set(CPACK_DEBIAN_SDK_DESCRIPTION "shape-typed tensor compiler - shared library\n${_long}\n.\nThis package holds libshapeml.so.0, the whole SDK behind one C ABI:\nchecking with diagnostics, JIT compilation, ahead-of-time builds, and\nthe runtime.")

set(CPACK_DEBIAN_RUNTIME_DEV_PACKAGE_NAME libshapeml-runtime-dev)
set(CPACK_DEBIAN_RUNTIME_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_RUNTIME_DEV_PACKAGE_DEPENDS "libshapeml-runtime0 (= ${SHAPEML_DEB_VERSION})")
set(CPACK_DEBIAN_RUNTIME_DEV_DESCRIPTION "shape-typed tensor compiler - runtime development files\n${_long}\n.\nThis package holds what building against the runtime library alone takes:\nthe C headers (shapeml.h), the CMake package (find_package(shapeml),\ntarget shapeml::runtime) and shapeml-runtime.pc. It pulls in no LLVM,\nMLIR or Z3.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libshapeml-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libshapeml-runtime-dev (= ${SHAPEML_DEB_VERSION}), libshapeml0 (= ${SHAPEML_DEB_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "shape-typed tensor compiler - development files\n${_long}\n.\nThis package adds the compiler library to libshapeml-runtime-dev: the\nlink libshapeml.so, its CMake target (shapeml::shapeml) and shapeml.pc.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME shapeml-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${SHAPEML_DEB_LLVM}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "shape-typed tensor compiler - command-line compiler\n${_long}\n.\nThis package holds shapemlc: check, format, emit intermediate forms,\nbuild ahead-of-time shared objects and run programs.")

set(CPACK_DEBIAN_DOC_PACKAGE_NAME shapeml-doc)
set(CPACK_DEBIAN_DOC_PACKAGE_SECTION doc)
set(CPACK_DEBIAN_DOC_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DOC_DESCRIPTION "shape-typed tensor compiler - documentation\n${_long}\n.\nThis package holds the documentation under /usr/share/doc/shapeml-doc:\nthe library author's guide and its examples, the language specification,\nthe error index, the design notes, the C ABI reference (HTML) and the\nexample programs.")

# The plugin's CUDA libraries come from NVIDIA's CUDA 13 repository
# (libcublas-13-0: libcublas.so.13, libcublasLt.so.13), which dpkg-shlibdeps
# cannot see when the toolkit was installed by NVIDIA's runfile; the driver
# (libcuda.so.1) is loaded by the CUDA runtime at run time.
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME libshapeml-cuda0)
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "libshapeml-runtime0 (= ${SHAPEML_DEB_VERSION}) | libshapeml0 (= ${SHAPEML_DEB_VERSION}), libcublas-13-0")
set(CPACK_DEBIAN_CUDA_PACKAGE_RECOMMENDS "libcuda1 | cuda-drivers")
set(CPACK_DEBIAN_CUDA_DESCRIPTION "shape-typed tensor compiler - CUDA plugin\n${_long}\n.\nThis package holds libshapeml_cuda.so, the CUDA back end that the\nruntime loads when a CUDA device is asked for: device memory\nresources, the dispatch-plan executor and its kernels (cuBLASLt).")

# Per package: copyright, changelog.Debian.gz and lintian overrides (not for
# other layouts, e.g. the conda recipe).
option(SHAPEML_INSTALL_DEBIAN_FILES "Install the Debian packages' doc and lintian files" ON)
set(_pkgs runtime libshapeml-runtime0 runtime_dev libshapeml-runtime-dev dev libshapeml-dev sdk libshapeml0 tools shapeml-tools cuda
          libshapeml-cuda0 doc shapeml-doc)
execute_process(COMMAND gzip -9n -c ${CMAKE_CURRENT_LIST_DIR}/changelog OUTPUT_FILE ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz)
while(_pkgs AND SHAPEML_INSTALL_DEBIAN_FILES)
  list(POP_FRONT _pkgs _comp _pkg)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg} COMPONENT ${_comp})
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${_pkg}.lintian-overrides)
    install(FILES ${CMAKE_CURRENT_LIST_DIR}/${_pkg}.lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
            RENAME ${_pkg} COMPONENT ${_comp})
  endif()
endwhile()

# shapemlc's manual page (tools), gzipped as Debian wants it.
if(NOT SHAPEML_RUNTIME_ONLY)
  execute_process(COMMAND gzip -9n -c ${CMAKE_CURRENT_LIST_DIR}/shapemlc.1 OUTPUT_FILE ${PROJECT_BINARY_DIR}/packaging/shapemlc.1.gz)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/shapemlc.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endif()

include(CPack)
