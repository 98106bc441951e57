# The SDK as people get it (issue 12): packages, the worked example built
# from them, and the language bindings. Labels: packaging, bindings.
# Each test is registered only where its toolchain exists, and says so
# otherwise (CI installs every toolchain: scripts/install-deps.sh).

# Debian packages -> lintian -> Depends -> dpkg -x -> mlpkit built against
# the unpacked files only (CMake and pkg-config) and run.
find_program(SHAPEML_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(SHAPEML_DPKG_SHLIBDEPS)
  add_test(NAME packaging COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/package-test.sh ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/package-test)
  set_tests_properties(packaging PROPERTIES LABELS "packaging" TIMEOUT 600 PASS_REGULAR_EXPRESSION "package-test: PASS")
else()
  message(STATUS "packaging test skipped: no dpkg-shlibdeps (apt-get install dpkg-dev)")
endif()

# The conda recipe's build script, run into a prefix, and the tree it makes
# checked against what the recipe promises (conda-build itself is not
# installable here: packaging/conda/README.md).
add_test(NAME conda_build_script COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/conda/test-build-script.sh ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/conda-test)
set_tests_properties(conda_build_script PROPERTIES LABELS "packaging" TIMEOUT 600)

# Rust: std only, offline, through shapeml_get_api (Debian 12: rustc 1.63).
find_program(SHAPEML_CARGO cargo)
if(SHAPEML_CARGO)
  add_test(NAME bindings_rust COMMAND ${SHAPEML_CARGO} test --offline --manifest-path ${PROJECT_SOURCE_DIR}/sdk-examples/rust/Cargo.toml
           --target-dir ${CMAKE_BINARY_DIR}/rust-target)
  set_tests_properties(bindings_rust PROPERTIES LABELS "bindings" TIMEOUT 600
    ENVIRONMENT "SHAPEML_LIB_DIR=${CMAKE_BINARY_DIR};CARGO_HOME=${CMAKE_BINARY_DIR}/cargo-home")
else()
  message(STATUS "Rust binding test skipped: no cargo")
endif()

# Go: cgo + dlopen, standard library only (Debian 12: Go 1.19).
find_program(SHAPEML_GO go)
if(SHAPEML_GO)
  add_test(NAME bindings_go COMMAND ${SHAPEML_GO} test -count=1 ./...
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/sdk-examples/go)
  set_tests_properties(bindings_go PROPERTIES LABELS "bindings" TIMEOUT 600
    ENVIRONMENT "SHAPEML_LIB_DIR=${CMAKE_BINARY_DIR};GOCACHE=${CMAKE_BINARY_DIR}/go-cache;GOPATH=${CMAKE_BINARY_DIR}/go-path;GOPROXY=off;GOFLAGS=;GOTOOLCHAIN=local")
else()
  message(STATUS "Go binding test skipped: no go")
endif()

# Python: the package over ctypes (NumPy, DLPack with NumPy and PyTorch).
add_test(NAME bindings_python COMMAND ${SHAPEML_PYTHON} ${PROJECT_SOURCE_DIR}/sdk-examples/python/tests/test_package.py ${CMAKE_BINARY_DIR})
set_tests_properties(bindings_python PROPERTIES LABELS "bindings" TIMEOUT 300 PASS_REGULAR_EXPRESSION "python-package: [0-9]+ passed, 0 failed")
