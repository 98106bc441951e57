#!/usr/bin/env bash
# Installs the Debian 12 packages shapeml needs to build and test.
# Idempotent: packages already present are skipped by apt-get.
# Usage: scripts/install-deps.sh [--with-test-tools]
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config
  libz3-dev z3 python3-z3            # shape obligations (library), independent re-check (CLI), program generator
  clang-19 libclang-rt-19-dev        # libFuzzer + sanitizer runtimes
  llvm-19-dev llvm-19-tools          # LLVM, lit, FileCheck
  libmlir-19-dev mlir-19-tools       # CPU code generation
  liblld-19-dev                      # LLD as a library: AOT .so linked in process, no system C compiler needed
  libgtest-dev libgmock-dev libbenchmark-dev libcmocka-dev
  libcli11-dev                       # shapemlc's per-subcommand command line (header-only)
  zlib1g-dev                         # deflate entries of .npz checkpoints
  abigail-tools                      # ABI snapshot check (abidw/abidiff)
  coq                                # mechanized metatheory in proofs/
  doxygen                            # every public symbol documented (CTest `doxygen`, warnings as errors)
  python3-numpy python3-torch libopenblas0-pthread  # golden values (independent reference)
  dpkg-dev lintian file make         # Debian packages (dpkg-shlibdeps), their lint, the package test, the pkg-config example build
  cargo rustc                        # the Rust binding's tests (Debian 12: rustc 1.63, std only, offline)
  golang-go                          # the Go binding's tests (Debian 12: Go 1.19, cgo)
  python3-pip python3-setuptools python3-wheel python3-venv  # the Python wheel, built offline and installed into a fresh venv
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
