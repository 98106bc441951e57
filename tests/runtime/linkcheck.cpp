// Empty on purpose: tests/runtime/CMakeLists.txt links all of
// shapeml_runtime_core into a shared library around this file to prove that
// the runtime needs no LLVM, MLIR or Z3 (check_runtime_deps.cmake).
