#!/usr/bin/env bash
# Stages what the GPU test machine runs, built HERE (that machine has no
# LLVM, MLIR or Z3): the runtime library, the CUDA plugin, the GPU test and
# benchmark executables, and the ahead-of-time modules the Python scripts
# load (the MLP of Milestone 2 and the every-operation corpus). Everything
# goes into one folder (default gpu-carry/, ignored by git) that the device
# tool carries; scripts/gpu-device-run.sh runs it there.
#
#   bash scripts/gpu-stage.sh            # then, on the GPU machine:
#   bash scripts/gpu-device-run.sh gpu-carry "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
carry=${1:-gpu-carry}
build=build/default
cmake --preset default >/dev/null
cmake --build --preset default
for f in "$build/libshapeml_cuda.so" "$build/tests/cuda/shapeml_cuda_kernel_tests"; do
  [[ -f $f ]] || { echo "gpu-stage: $f was not built (no CUDA compiler here?)" >&2; exit 2; }
done
rm -rf "$carry"
mkdir -p "$carry/lib" "$carry/bin" "$carry/modules"
# Real files, not symlinks (links do not travel): the runtime finds the
# plugin next to itself.
cp -L "$build/libshapeml_runtime.so" "$carry/lib/libshapeml_runtime.so"
cp "$carry/lib/libshapeml_runtime.so" "$carry/lib/libshapeml_runtime.so.0"
cp "$build/libshapeml_cuda.so" "$carry/lib/"
cp "$build/tests/cuda/shapeml_cuda_kernel_tests" "$build/tests/cuda/shapeml_cuda_plan_tests" "$build/tests/cuda/gpu_plan_bench" \
   "$build/tests/cuda/shapeml_cuda_graph_tests" "$build/tests/cuda/gpu_graph_bench" "$build/tests/gpu/shapeml_gpu_graph_tests" \
   "$build/tests/gpu/shapeml_gpu_memory_tests" "$build/tests/gpu/shapeml_gpu_tensor_tests" "$build/cuda_memory_bench" \
   "$build/tests/gpu/shapeml_gpu_context_streams_tests" "$carry/bin/"
# GEMMs that share their input, separate, batched or merged (bench/gemm_grouping.cu): a plain
# CUDA program against cuBLASLt, built with the CUDA compiler this build found.
nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
"$nvcc" -O3 -arch=sm_90 bench/gemm_grouping.cu -lcublasLt -o "$carry/bin/gemm_grouping"
strip --strip-debug "$carry"/lib/* "$carry"/bin/*
# The MLP (examples/mlp.sml, generic in its dtype T and device Dv) built for (cuda 0): mlp_gpu.so, entry `mlp`.
"$build/shapemlc" build examples/mlp.sml -o "$carry/modules/mlp_gpu.so" --bind mlp:T=f32,Dv=cuda0,B=4,S=128,D=256,F=1024 --target x86-64
"$build/shapemlc" build examples/mlp.sml -o "$carry/modules/mlp_gpu_bf16.so" --bind mlp:T=bf16,Dv=cuda0,B=4,S=128,D=256,F=1024 --target x86-64
"$build/shapemlc" build tests/gpu/context_streams.sml -o "$carry/modules/context_streams.so" --bind slow:N=2048 --bind twice:N=2048 --target x86-64
# Given shape variables and constants that follow the device (tests/gpu/given_gpu.py).
"$build/shapemlc" build tests/lit/run/Inputs/given-heads-gpu.sml -o "$carry/modules/given.so" --bind B=2,S=3,H=4,Dh=3 --bind B=2,S=3,H=6,Dh=2 --target x86-64
"$build/shapemlc" build tests/lit/ok/constants-follow-device.sml --entry scaled -o "$carry/modules/consts.so" --bind B=2,S=3,Dh=4 --target x86-64
"$build/shapemlc" --emit=gpu-plan examples/mlp.sml --bind T=f32,Dv=cuda0,B=4,S=128,D=256,F=1024 > "$carry/modules/mlp_gpu.plan.txt"
# The transformer block's plan fused and unfused, for the kernel tests'
# bit-identity check of elementwise fusion (tests/cuda/fusion_test.cpp), on
# the planner's own launches (pattern fusion off: it leaves nothing to fuse).
# The block is generic in its dtype and device (spec §3.5): the same source, bound to f32 on (cuda 0).
cp examples/transformer_block.sml "$carry/modules/transformer_block_gpu.sml"
for f in on off; do
  "$build/shapemlc" --emit=gpu-plan --gpu-fuse $f --gpu-fuse-patterns off examples/transformer_block.sml --entry block \
    --bind T=f32,Dv=cuda0,B=4,S=128,D=256,H=4,Dh=64,F=704 > "$carry/modules/block.$([[ $f == on ]] && echo fused || echo unfused).plan.txt"
done
/usr/bin/python3 tests/gpu/golden_gpu.py build --shapemlc "$build/shapemlc" --out "$carry/modules"
# The transformer block (fp32 and --gpu-tf32 modules, and the CPU back end's
# results of the small sizes for the CPU/GPU agreement check).
# Generated programs: CPU results here, the GPU versions built ahead of time.
/usr/bin/python3 tests/gpu/generated_gpu.py build --shapemlc "$build/shapemlc" --sdk "$build/libshapeml.so" --out "$carry/generated" --count 40
/usr/bin/python3 bench/transformer_gpu.py build --shapemlc "$build/shapemlc" --runtime "$build/libshapeml.so" --out "$carry/transformer"
# StoryLM-0 (issue 13): its GPU module and the CPU run's losses.
/usr/bin/python3 tests/gpu/storylm0_gpu.py build "$build" --shapemlc "$build/shapemlc" --out "$carry/storylm0"
# Causal attention alone against PyTorch's SDPA back ends (bench/attention_gpu.py).
/usr/bin/python3 bench/attention_gpu.py build --shapemlc "$build/shapemlc" --out "$carry/attention"
# cuDNN's softmax against the plan's own kernels (docs/design/gpu-kernels.md).
/usr/bin/python3 bench/cudnn_softmax_gpu.py build --shapemlc "$build/shapemlc" --out "$carry/cudnn"
# The cost of observability (bench/obs_overhead.py, docs/design/observability.md):
# the instrumented runtime, plugin and bench, the same built with
# -DSHAPEML_INSTRUMENTATION=OFF, and the MLP and transformer block modules.
cmake -S . -B build/noinstr -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAPEML_INSTRUMENTATION=OFF -DSHAPEML_RUNTIME_ONLY=ON \
  -DSHAPEML_TESTS=OFF >/dev/null
cmake --build build/noinstr --target shapeml_runtime shapeml_cuda obs_overhead_bench
for v in on off; do
  b=$([[ $v == on ]] && echo "$build" || echo build/noinstr)
  mkdir -p "$carry/obs/$v/lib" "$carry/obs/$v/bin"
  cp -L "$b/libshapeml_runtime.so" "$carry/obs/$v/lib/libshapeml_runtime.so"
  cp "$carry/obs/$v/lib/libshapeml_runtime.so" "$carry/obs/$v/lib/libshapeml_runtime.so.0"
  cp "$b/libshapeml_cuda.so" "$carry/obs/$v/lib/"
  cp "$b/bench/obs_overhead_bench" "$carry/obs/$v/bin/"
  strip --strip-debug "$carry/obs/$v"/lib/* "$carry/obs/$v"/bin/*
done
/usr/bin/python3 bench/obs_overhead.py build --gpu --shapemlc "$build/shapemlc" --out "$carry/obs/modules"
# The worked example of the guide (sdk-examples/mlpkit) with its GPU model,
# built against an install of this build (find_package), run there by the
# runtime library alone.
rm -rf build/mlpkit-prefix build/mlpkit
cmake --install "$build" --prefix build/mlpkit-prefix >/dev/null
cmake -S sdk-examples/mlpkit -B build/mlpkit -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/mlpkit-prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/mlpkit >/dev/null
mkdir -p "$carry/mlpkit"
cp -P build/mlpkit/mlpkit_test build/mlpkit/libmlpkit.so* build/mlpkit/mlpkit/mlp_model.so build/mlpkit/mlpkit/mlp_gpu_model.so "$carry/mlpkit/"
cp "$carry/lib/libshapeml_runtime.so" "$carry/lib/libshapeml_runtime.so.0"
du -sh "$carry"
# The device tool carries at most 64 MiB with the working tree: name only the
# folders the chosen steps read (the test steps: lib bin modules generated
# storylm0 transformer), and leave the benchmark binaries of bin/ out when
# that is still too much.
du -sm "$carry"/* | sort -n | awk '{ printf "  %5d MiB  %s\n", $1, $2 }'
if (( $(du -sm "$carry" | cut -f1) > 56 )); then
  echo "gpu-stage: $carry is over what one device call carries with the working tree (64 MiB in all): carry a subset of its folders" >&2
fi
