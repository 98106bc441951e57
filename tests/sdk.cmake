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
# The same package as a wheel (built offline from a copy of the tree),
# installed with pip into a fresh virtual environment and used outside the tree.
add_test(NAME bindings_python_wheel COMMAND bash ${PROJECT_SOURCE_DIR}/sdk-examples/python/tests/test_wheel_venv.sh ${CMAKE_BINARY_DIR})
set_tests_properties(bindings_python_wheel PROPERTIES LABELS "bindings" TIMEOUT 300 PASS_REGULAR_EXPRESSION "python-wheel: ok")

# The library author's guide (docs/guide/README.md): every step is one of
# these, run as the guide shows it. Label guide.
set(G ${PROJECT_SOURCE_DIR}/docs/guide/examples)
add_executable(guide_check ${G}/check.c)
target_link_libraries(guide_check PRIVATE shapeml)
add_executable(guide_call ${G}/call.c)
target_link_libraries(guide_call PRIVATE shapeml_runtime)
add_executable(guide_dlopen ${G}/dlopen.c)
target_include_directories(guide_dlopen PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(guide_dlopen PRIVATE ${CMAKE_DL_LIBS})
add_test(NAME guide_2_check COMMAND shapemlc check ${G}/affine.sml)
add_test(NAME guide_2_check_bad COMMAND shapemlc check ${G}/affine_bad.sml)
set_tests_properties(guide_2_check_bad PROPERTIES WILL_FAIL TRUE)
add_test(NAME guide_3_diagnostics COMMAND guide_check ${G}/affine_bad.sml)
set_tests_properties(guide_3_diagnostics PROPERTIES PASS_REGULAR_EXPRESSION "E0301 at .*affine_bad.sml:11:28.*counterexample: B = 2")
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/guide)
add_test(NAME guide_4_build COMMAND shapemlc build ${G}/affine.sml -o ${CMAKE_CURRENT_BINARY_DIR}/guide/libaffine.so --bind affine:B=2,D=3,F=4)
set_tests_properties(guide_4_build PROPERTIES FIXTURES_SETUP guide_module)
add_test(NAME guide_5_call COMMAND guide_call ${CMAKE_CURRENT_BINARY_DIR}/guide/libaffine.so)
set_tests_properties(guide_5_call PROPERTIES FIXTURES_REQUIRED guide_module
  PASS_REGULAR_EXPRESSION "y = \\[1.5 2.5 3.5 0.5; 4.5 5.5 6.5 0.5\\].*after releasing y: 0 bytes.*wrong shape: INVALID_ARGUMENT \\(code 1\\).*unbuilt binding: NOT_FOUND \\(code 3\\).*unknown entry: NOT_FOUND")
add_test(NAME guide_9_dlopen_runtime COMMAND guide_dlopen $<TARGET_FILE:shapeml_runtime>)
add_test(NAME guide_9_dlopen_sdk COMMAND guide_dlopen $<TARGET_FILE:shapeml>)
set_tests_properties(guide_9_dlopen_runtime PROPERTIES PASS_REGULAR_EXPRESSION "compiler no .*status through the table: NOT_FOUND")
set_tests_properties(guide_9_dlopen_sdk PROPERTIES PASS_REGULAR_EXPRESSION "compiler yes")
set_tests_properties(guide_2_check guide_2_check_bad guide_3_diagnostics guide_4_build guide_5_call guide_9_dlopen_runtime
  guide_9_dlopen_sdk PROPERTIES LABELS "guide")
