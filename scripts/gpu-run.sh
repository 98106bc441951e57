#!/usr/bin/env bash
# Builds the runtime, the CUDA plugin, the GPU tests and the device memory
# benchmark without the compiler (-DSHAPEML_RUNTIME_ONLY=ON: no LLVM, MLIR,
# Z3 or cmocka needed), then runs the GPU tests, the same tests under
# compute-sanitizer (memcheck; racecheck on the memory tests) and the
# benchmark. For the GPU test machine; on a machine without a GPU every
# test says "skipped: no GPU".
#
#   scripts/gpu-run.sh                 # build/gpu, torch found through python3
#   BUILD_DIR=... SHAPEML_TORCH_DIR=.../site-packages/torch SANITIZE=0 scripts/gpu-run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build/gpu}
torch_dir=${SHAPEML_TORCH_DIR:-$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAPEML_RUNTIME_ONLY=ON \
  ${torch_dir:+-DSHAPEML_TORCH_DIR="$torch_dir"}
cmake --build "$build" -j "${JOBS:-$(nproc)}"
export SHAPEML_CUDA_PLUGIN="$build/libshapeml_cuda.so"
status=0
ctest --test-dir "$build" -L gpu --output-on-failure || status=1
if [[ ${SANITIZE:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  for t in "$build/tests/gpu/shapeml_gpu_memory_tests" "$build/tests/gpu/shapeml_gpu_tensor_tests"; do
    echo "== compute-sanitizer memcheck $(basename "$t")"
    compute-sanitizer --tool memcheck --error-exitcode 3 "$t" --gtest_brief=1 || status=1
  done
  echo "== compute-sanitizer racecheck shapeml_gpu_memory_tests"
  compute-sanitizer --tool racecheck --error-exitcode 3 "$build/tests/gpu/shapeml_gpu_memory_tests" --gtest_brief=1 || status=1
fi
echo "== cuda_memory_bench"
"$build/cuda_memory_bench" "${BENCH_ITERATIONS:-100000}" || status=1
exit $status
