#!/usr/bin/env bash
# Runs every GPU test and benchmark on the GPU machine from what
# scripts/gpu-stage.sh staged (no build there), in one go, writing one log and
# the JSON results into OUT:
#   - the plan executor's kernel tests (every kernel, dtype, broadcasting
#     corner, matmul layout; against float64 loops; fused elementwise plans
#     against unfused ones, bit for bit) and its CPU-side tests
#   - the device memory and device tensor tests; per-context default streams
#     (two contexts' streams, cross-context waits, release ordering)
#   - every operation end to end (source -> plan -> AOT module -> runtime +
#     plugin) against PyTorch on the same GPU (tests/gpu/golden_gpu.py)
#   - generated well-shaped programs: GPU results equal the CPU back end's
#     (tests/gpu/generated_gpu.py)
#   - Milestone 3: the transformer block (and its GQA variant) against
#     PyTorch (fp32 and TF32), the CPU back end, and its speed against PyTorch
#     eager/SDPA, torch.compile and JAX jit (bench/transformer_gpu.py)
#   - Milestone 2: the MLP against PyTorch eager and torch.compile
#   - observability: the overhead of tracing/logging instrumentation against
#     a build with it compiled out (bench/obs_overhead.py), NVTX ranges (nsys)
#   - DLPack with PyTorch both ways, zero copy, deleters once
#   - CUDA graph replay: executor tests (replay == direct, bit for bit; moved
#     buffers; two streams) and C ABI tests on the MLP module
#   - dispatch overhead (host us per launch), per-call latency direct vs graph
#     replay vs copy-in (graph_bench.json), and memory resource latency
#   - the tests again under compute-sanitizer memcheck (racecheck on memory)
#
#   bash scripts/gpu-device-run.sh gpu-carry "$OUT"
#
# GPU_STEPS=REGEX runs only the steps whose names match (an extended regex,
# e.g. GPU_STEPS='kernel_tests|cudnn_softmax'); the others are listed as
# skipped. For a quick look at one area; a full run is what a closing note cites.
set -uo pipefail
cd "$(dirname "$0")/.."
carry=$(cd "${1:-gpu-carry}" && pwd)
out=${2:-${OUT:-/tmp/shapeml-gpu-out}}
mkdir -p "$out"
log="$out/gpu-run.log"
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export SHAPEML_CUDA_PLUGIN="$carry/lib/libshapeml_cuda.so"
export PYTHONUNBUFFERED=1
failed=()
step() {  # name, timeout seconds, command...
  local name=$1 limit=$2; shift 2
  if [[ -n "${GPU_STEPS:-}" && ! "$name" =~ ^(${GPU_STEPS})$ ]]; then
    echo "=== $name: skipped (GPU_STEPS)" >>"$log"
    return 0
  fi
  echo "=== $name" | tee -a "$log"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$log"
  ((rc == 0)) || failed+=("$name")
}
{
  date; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
} >>"$log" 2>&1
# The kernel tests generate fused kernels with NVRTC where they run (tests/cuda/fusion_test.cpp): the
# toolkit's, else the copy PyTorch ships.
if [[ -z "${SHAPEML_NVRTC:-}" && ! -e /usr/local/cuda/lib64/libnvrtc.so.13 ]]; then
  SHAPEML_NVRTC=$(python3 -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print((sorted(glob.glob(d + "/nvidia/**/libnvrtc.so.1[23]", recursive=True)) or [""])[-1])' 2>/dev/null)
  export SHAPEML_NVRTC
fi
echo "NVRTC: ${SHAPEML_NVRTC:-/usr/local/cuda/lib64 or the search path of the loader}" >>"$log"
# cuDNN (the bf16 attention launches of library cudnn; src/cuda/executor/cudnn_attention.h): the
# toolkit's, else the copy PyTorch ships.
if [[ -z "${SHAPEML_CUDNN:-}" && ! -e /usr/local/cuda/lib64/libcudnn.so.9 ]]; then
  SHAPEML_CUDNN=$(python3 -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print((sorted(glob.glob(d + "/nvidia/**/libcudnn.so.9", recursive=True)) or [""])[-1])' 2>/dev/null)
  export SHAPEML_CUDNN
fi
echo "cuDNN: ${SHAPEML_CUDNN:-/usr/local/cuda/lib64 or the search path of the loader}" >>"$log"
step plan_tests 120 "$carry/bin/shapeml_cuda_plan_tests" --gtest_brief=1
export SHAPEML_TEST_FUSION_PLANS="$carry/modules"  # fused vs unfused transformer block (fusion_test.cpp)
step kernel_tests 300 "$carry/bin/shapeml_cuda_kernel_tests" --gtest_brief=1
# The kernels that take programmatic dependent launches (dependent_launch.cuh; on by default)
# launched as ordinary ones, same tests.
step kernel_tests_no_pdl 200 env SHAPEML_CUDA_PDL=0 "$carry/bin/shapeml_cuda_kernel_tests" --gtest_brief=1 \
  --gtest_filter='Attention*:FusedKernels.*:Fusion.*:Tf32Split.*'
step memory_tests 300 "$carry/bin/shapeml_gpu_memory_tests" --gtest_brief=1
step tensor_tests 120 "$carry/bin/shapeml_gpu_tensor_tests" --gtest_brief=1
step context_streams_tests 120 env SHAPEML_TEST_STREAMS_MODULE="$carry/modules/context_streams.so" \
  "$carry/bin/shapeml_gpu_context_streams_tests" --gtest_brief=1
step graph_tests 180 "$carry/bin/shapeml_cuda_graph_tests" --gtest_brief=1
step graph_capi_tests 180 env SHAPEML_TEST_MLP_GPU_MODULE="$carry/modules/mlp_gpu.so" "$carry/bin/shapeml_gpu_graph_tests" --gtest_brief=1
step graph_capi_tests_copy_in 180 env SHAPEML_TEST_MLP_GPU_MODULE="$carry/modules/mlp_gpu.so" SHAPEML_CUDA_GRAPH_REBIND=copy-in \
  "$carry/bin/shapeml_gpu_graph_tests" --gtest_brief=1
step golden_gpu 300 python3 tests/gpu/golden_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" \
  --module "$carry/modules/golden_gpu.so" --json "$out/golden_gpu.json"
step generated_gpu 180 python3 tests/gpu/generated_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/generated" \
  --json "$out/generated_gpu.json"
step transformer_gpu 590 python3 bench/transformer_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/transformer" \
  --json "$out/transformer_gpu.json" ${TRANSFORMER_FLAGS:-}
step pdl_block 400 python3 bench/pdl_block_gpu.py --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/transformer" \
  --rounds "${PDL_ROUNDS:-3}" --json "$out/pdl_block.json"
step given_gpu 120 python3 tests/gpu/given_gpu.py --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/modules"
step storylm0_gpu 300 python3 tests/gpu/storylm0_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/storylm0"
step mlpkit_gpu 120 bash -c "set -o pipefail; LD_LIBRARY_PATH=\"$carry/lib:$carry/mlpkit:\$LD_LIBRARY_PATH\" \"$carry/mlpkit/mlpkit_test\" \"$carry/mlpkit/mlp_model.so\" \"$carry/mlpkit/mlp_gpu_model.so\" | tee -a /dev/stderr | grep -q \"GPU: max abs error\""
step mlp_gpu 400 python3 examples/run_mlp_gpu.py --runtime "$carry/lib/libshapeml_runtime.so" \
  --module "$carry/modules/mlp_gpu.so" --bf16-module "$carry/modules/mlp_gpu_bf16.so" --json "$out/mlp_gpu.json" ${MLP_FLAGS:-}
step dlpack_torch 180 python3 sdk-examples/python/dlpack_torch.py --runtime "$carry/lib/libshapeml_runtime.so" \
  --module "$carry/modules/mlp_gpu.so" --json "$out/dlpack_torch.json"
step cudnn_softmax 240 python3 bench/cudnn_softmax_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/cudnn" --json "$out/cudnn_softmax.json"
# The softmax kernels under Nsight Compute: one launch per (shape, op) of the
# bench's agreement check; throughput, occupancy and registers per kernel.
step softmax_ncu 240 bash -c "if ! command -v ncu >/dev/null; then echo 'ncu not found: skipped'; exit 0; fi; \
  ncu --kernel-name-base demangled --kernel-name 'regex:softmax_(warp|block|online|columns)' -c 12 \
    --section SpeedOfLight --section Occupancy --section LaunchStats \
    python3 bench/cudnn_softmax_gpu.py run --check-only --runtime \"$carry/lib/libshapeml_runtime.so\" --dir \"$carry/cudnn\" \
    > \"$out/softmax_ncu.txt\" 2>&1; rc=\$?; grep -E 'softmax_|Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy' \"$out/softmax_ncu.txt\"; exit \$rc"
# Kernel durations of one direct call of the large bf16 block, fused attention
# on and off (bench/profile_block_gpu.py; base clocks off, caches flushed).
step block_ncu 300 bash -c "if ! command -v ncu >/dev/null; then echo 'ncu not found: skipped'; exit 0; fi; set -o pipefail; \
  for m in ${BLOCK_NCU_MODES:-bf16 bf16_noattn}; do ncu --profile-from-start off --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/profile_block_gpu.py --runtime \"$carry/lib/libshapeml_runtime.so\" --dir \"$carry/transformer\" --mode \$m --size large \
    > \"$out/ncu-large-\$m.csv\" || exit 1; done"
# The best peer's kernels for the same block (torch.compile, CUPTI through torch.profiler), per dtype.
step peer_profile 600 bash -c "set -o pipefail; for d in ${PEER_PROFILE_DTYPES:-bf16 fp32}; do \
  python3 bench/profile_peer_gpu.py --dtype \$d --size large > \"$out/peer-large-\$d.txt\" 2>&1 || exit 1; done"
# Causal attention alone: the plan's fused launch beside PyTorch's cuDNN, flash and memory-efficient SDPA (bench/attention_gpu.py).
step attention_gpu 400 python3 bench/attention_gpu.py run --runtime "$carry/lib/libshapeml_runtime.so" --dir "$carry/attention" \
  --json "$out/attention_gpu.json"
# q/k/v and gate/up as separate, pointer-array batched, strided-batched or merged GEMMs.
step gemm_grouping 240 bash -c "set -o pipefail; \"$carry/bin/gemm_grouping\" | tee \"$out/gemm_grouping.txt\""
step plan_bench 120 "$carry/bin/gpu_plan_bench"
# Observability: the overhead of instrumentation (default mode, tracing,
# GPU timing) against a build with it compiled out, on the MLP and the
# transformer block, with and without CUDA graph replay.
step obs_overhead 600 python3 bench/obs_overhead.py run --gpu --on "$carry/obs/on" --off "$carry/obs/off" --modules "$carry/obs/modules" \
  --rounds 5 --json "$out/obs_overhead_gpu.json"
# Per-launch spans, GPU times and the module ID on the GPU; the trace for ui.perfetto.dev.
step obs_gpu 120 python3 tests/gpu/obs_gpu.py --runtime "$carry/lib/libshapeml_runtime.so" --module "$carry/modules/mlp_gpu.so" \
  --trace "$out/obs_gpu_trace.json"
# NVTX ranges named after shapeml's launches, as Nsight Systems sees them (when nsys is installed).
# NVTX: the plugin names a range after each launch. With Nsight Systems, its
# NVTX summary; without it (the H200 machine has only Nsight Compute), ncu
# profiling only the kernels inside ranges named `launch ...` must find the
# plan's kernels, and a filter no range matches must find none.
step obs_nvtx 240 bash -c "set -o pipefail; run=(env LD_LIBRARY_PATH=\"$carry/obs/on/lib:\$LD_LIBRARY_PATH\" \
  SHAPEML_CUDA_PLUGIN=\"$carry/obs/on/lib/libshapeml_cuda.so\" \"$carry/obs/on/bin/obs_overhead_bench\" \"$carry/obs/modules/mlp_gpu.so\" \
  mlp 2 --cuda --graph-off 4x128x256 256x1024 1024 1024x256 256); \
  if command -v nsys >/dev/null; then nsys profile -t nvtx,cuda -f true -o /tmp/shapeml-obs \"\${run[@]}\" && \
    nsys stats -q --report nvtx_sum /tmp/shapeml-obs.nsys-rep | tee -a /dev/stderr | grep -q 'launch'; \
  elif command -v ncu >/dev/null; then \
    ncu --nvtx --nvtx-include 'regex:launch.*/' --metrics gpu__time_duration.sum \"\${run[@]}\" > /tmp/ncu-in.txt 2>&1; \
    ncu --nvtx --nvtx-include 'regex:^no-such-range/' --metrics gpu__time_duration.sum \"\${run[@]}\" > /tmp/ncu-out.txt 2>&1; \
    n_in=\$(grep -c 'gpu__time_duration.sum' /tmp/ncu-in.txt); n_out=\$(grep -c 'gpu__time_duration.sum' /tmp/ncu-out.txt); \
    grep -E '^  [a-zA-Z_].*\\(|gpu__time_duration' /tmp/ncu-in.txt | head -12; \
    echo \"ncu: \$n_in kernel(s) inside NVTX ranges 'launch ...', \$n_out inside a range that does not exist\"; \
    [ \$n_in -ge 3 ] && [ \$n_out -eq 0 ]; \
  else echo 'neither nsys nor ncu: skipped'; fi"
step graph_bench 180 bash -c "set -o pipefail; \"$carry/bin/gpu_graph_bench\" \"$carry/modules/mlp_gpu.plan.txt\" | tee \"$out/graph_bench.json\""
step memory_bench 180 "$carry/bin/cuda_memory_bench" "${BENCH_ITERATIONS:-100000}"
# PyTorch's caching allocator, from C++ against the installed torch's c10, in
# the same run (built here: it needs torch's headers, which only this machine has).
torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)
if [[ -n $torch_dir ]]; then
  step c10_bench_build 180 g++ -O2 -std=c++17 -w -I"$torch_dir/include" -I/usr/local/cuda/include bench/cuda_memory_bench_torch.cpp \
    bench/c10_alloc_bench_main.cpp -L"$torch_dir/lib" -lc10_cuda -lc10 -Wl,-rpath,"$torch_dir/lib" -o /tmp/c10_alloc_bench
  # torch's own CUDA runtime libraries (site-packages/nvidia/*/lib), as torch's import finds them
  nv_libs=$(ls -d "$torch_dir"/../nvidia/*/lib 2>/dev/null | tr '\n' ':')
  step c10_bench 120 env LD_LIBRARY_PATH="$nv_libs$torch_dir/lib:$LD_LIBRARY_PATH" /tmp/c10_alloc_bench "${BENCH_ITERATIONS:-100000}"
fi
if [[ ${SANITIZE:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  step memcheck_kernels 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 "$carry/bin/shapeml_cuda_kernel_tests" --gtest_brief=1 \
    --gtest_filter=-Fusion.SixtyFourBitIndexPath:SixtyFourBit.*  # GBs of output: minutes under memcheck; run in kernel_tests
  # The own attention kernels' shared-memory tiles (bf16, f32, TF32), cuDNN off: racecheck reports hazards
  # inside cuDNN's TMA/mbarrier-synchronized flash kernel, which it does not model (docs/design/gpu-attention.md);
  # memcheck above runs that kernel.
  step racecheck_attention 300 env SHAPEML_CUDNN=none compute-sanitizer --tool racecheck --error-exitcode 3 "$carry/bin/shapeml_cuda_kernel_tests" \
    --gtest_brief=1 --gtest_filter='Attention*' 
  step memcheck_graph 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 "$carry/bin/shapeml_cuda_graph_tests" --gtest_brief=1
  step memcheck_context_streams 300 env SHAPEML_TEST_STREAMS_MODULE="$carry/modules/context_streams.so" compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 3 "$carry/bin/shapeml_gpu_context_streams_tests" --gtest_brief=1
  step memcheck_memory 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 "$carry/bin/shapeml_gpu_memory_tests" --gtest_brief=1
  step racecheck_memory 300 compute-sanitizer --tool racecheck --error-exitcode 3 "$carry/bin/shapeml_gpu_memory_tests" --gtest_brief=1
  # Every operation of the language through the plugin, once (the scan's
  # cub::BlockScan and the index kernels included)
  step memcheck_golden 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 python3 tests/gpu/golden_gpu.py run \
    --runtime "$carry/lib/libshapeml_runtime.so" --module "$carry/modules/golden_gpu.so"
  step racecheck_golden 300 compute-sanitizer --tool racecheck --error-exitcode 3 python3 tests/gpu/golden_gpu.py run \
    --runtime "$carry/lib/libshapeml_runtime.so" --module "$carry/modules/golden_gpu.so"
fi
echo "failed steps: ${failed[*]:-none}" | tee -a "$log"
((${#failed[@]} == 0))
