#!/usr/bin/env bash
# The README's second command: install what is missing, build, run every test.
#   1. default build (RelWithDebInfo, -g): every test, incl. ABI, proofs, obligations,
#      the Debian packages with the worked example built from them (label
#      packaging), the Rust/Go/Python bindings (bindings), the guide's steps (guide)
#   2. ASan+UBSan build: every test that runs our native code
#   3. libFuzzer build (clang-19): six fuzzers (parser+checker, diagnostic JSON,
#      .npy, .npz, module manifest, DLPack import), 25 s each (<= 3 min in all)
#   4. ThreadSanitizer build of only the concurrency tests (8-thread check,
#      parallel loops on the runtime's pool from 8 host threads,
#      compile, first-call specialization and calls through the C ABI)
# GPU tests (label "gpu") skip on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/install-deps.sh

declare -A results
run_stage() {  # name, command...
  local name=$1; shift
  echo "=== $name ==="
  if "$@"; then results[$name]=passed; else results[$name]=failed; fi
}

cmake --preset default >/dev/null
cmake --build --preset default
run_stage default ctest --preset default -j2

cmake --preset asan >/dev/null
cmake --build --preset asan
# Everything that runs native code of ours, under the sanitizers. Left out:
# Python-hosted tests (an ASan library cannot be dlopen'ed into python), the
# proofs, ABI snapshots and the obligation re-check (no C++ of ours runs).
run_stage asan env ASAN_OPTIONS=detect_leaks=1:use_sigaltstack=0 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --preset asan -LE "golden|proofs|abi|obligations" -j2

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzz_check fuzz_json fuzz_npy fuzz_npz fuzz_manifest fuzz_dlpack fuzz_plan
run_stage fuzz ctest --test-dir build/fuzz -L fuzz --output-on-failure

# Only the two concurrency test binaries are built (CMakePresets.json).
cmake --preset tsan >/dev/null
cmake --build --preset tsan
run_stage tsan ctest --preset tsan

passed=0; failed=0
for k in "${!results[@]}"; do
  echo "stage $k: ${results[$k]}"
  [[ ${results[$k]} == passed ]] && passed=$((passed + 1)) || failed=$((failed + 1))
done
echo "all stages took $((SECONDS - start)) s"
echo "stages: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
