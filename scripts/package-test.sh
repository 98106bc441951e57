#!/usr/bin/env bash
# The SDK as people get it (issue 12), from a built tree:
#   1. build the Debian packages with CPack (no rebuild: the tree is built);
#   2. lintian on each, failing on errors (overrides in packaging/deb/ say why);
#   3. each package's Depends covers every library its binaries need
#      (resolved with ldd, owner from dpkg -S), and libshapeml-runtime0
#      needs no LLVM, MLIR or Z3;
#   4. unpack them all with dpkg -x into a fresh root (no dpkg database, no
#      root needed) and check the files the packages promise;
#   5. build the worked example (sdk-examples/mlpkit) against the unpacked
#      files ONLY -- with CMake find_package(shapeml) and with pkg-config --
#      and run its tests; then a runtime-only consumer (the guide's call.c)
#      from libshapeml-runtime0 and libshapeml-runtime-dev alone.
# Usage: scripts/package-test.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: package-test.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$build/package-test}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "package-test: FAILED: $*"; exit 1; }

echo "== 1. cpack"
(cd "$build" && cpack -G DEB -B "$work/debs" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
debs=("$work"/debs/*.deb)
for d in "${debs[@]}"; do
  printf '%-45s %8s bytes  Depends: %s\n' "$(basename "$d")" "$(stat -c %s "$d")" "$(dpkg-deb -f "$d" Depends)"
done
for p in libshapeml-runtime0 libshapeml0 libshapeml-dev shapeml-tools shapeml-doc; do
  ls "$work"/debs/${p}_*.deb >/dev/null 2>&1 || fail "no $p package"
done

echo "== 2. lintian"
if command -v lintian >/dev/null; then
  lintian --fail-on error --tag-display-limit 0 "${debs[@]}" 2>&1 | grep -v "running with root privileges" || true
  lintian --fail-on error "${debs[@]}" >/dev/null 2>&1 || fail "lintian reports errors"
  echo "lintian: no errors"
else
  echo "lintian: not installed (scripts/install-deps.sh installs it); skipped"
fi

echo "== 3. Depends from the binaries"
for d in "${debs[@]}"; do
  pkg=$(dpkg-deb -f "$d" Package)
  depends=$(dpkg-deb -f "$d" Depends)
  x="$work/x/$pkg"
  mkdir -p "$x"
  dpkg -x "$d" "$x"
  while IFS= read -r f; do
    file -b "$f" | grep -q ELF || continue
    # Every library the binary needs directly (NEEDED), resolved as the
    # loader does (ldd follows RUNPATHs); its owner must be in Depends.
    resolved=$(LD_LIBRARY_PATH="$x/usr/lib/x86_64-linux-gnu" ldd "$f")
    while IFS= read -r name; do
      lib=$(awk -v n="$name" '$1 == n && $3 ~ /^\// {print $3}' <<<"$resolved")
      [[ -n $lib ]] || fail "$pkg: $(basename "$f") needs $name, which the loader does not find"
      real=$(readlink -f "$lib")
      # (usrmerge: dpkg may know /usr/lib/x.so as /lib/x.so)
      owner=$( (dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null) | head -1 | cut -d: -f1) || true
      case "$real" in
        "$work"/*) continue ;;                       # another of our packages (dev tree)
        /usr/local/cuda*) echo "  $pkg: $(basename "$lib") from the CUDA toolkit (declared by hand)"; continue ;;
      esac
      [[ -n $owner ]] || fail "$pkg: $(basename "$f") needs $real, which no package owns"
      [[ $owner == libc6 || $depends == *"$owner"* ]] || fail "$pkg: $(basename "$f") needs $real from $owner, not in Depends: $depends"
    done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^ld-linux')
  done < <(find "$x" -type f)
done
for lib in "$work"/x/libshapeml-runtime0/usr/lib/*/libshapeml_runtime.so.0; do
  if ldd "$lib" | grep -Ei "llvm|mlir|z3"; then fail "libshapeml_runtime.so.0 loads LLVM, MLIR or Z3"; fi
done
dpkg-deb -f "$work"/debs/libshapeml-runtime0_*.deb Depends | grep -Eiq "llvm|mlir|z3" && fail "libshapeml-runtime0 depends on LLVM, MLIR or Z3"
dpkg-deb -f "$work"/debs/libshapeml-runtime-dev_*.deb Depends | grep -Eiq "llvm|mlir|z3|libshapeml0" &&
  fail "libshapeml-runtime-dev depends on the compiler library, LLVM, MLIR or Z3"
echo "Depends: complete; libshapeml-runtime0 and libshapeml-runtime-dev need no LLVM, MLIR or Z3"

echo "== 4. dpkg -x into a fresh root"
root="$work/root"
mkdir -p "$root"
for d in "${debs[@]}"; do dpkg -x "$d" "$root"; done
libdir=$(cd "$root/usr/lib" && ls -d */ | grep -- '-linux-gnu/$' | head -1)
libdir="$root/usr/lib/${libdir%/}"
for f in usr/include/shapeml.h usr/include/shapeml_dlpack.h usr/include/shapeml_memory.h usr/bin/shapemlc; do
  [[ -e $root/$f ]] || fail "missing /$f"
done
for f in libshapeml.so.0 libshapeml_runtime.so.0 libshapeml.so libshapeml_runtime.so \
         cmake/shapeml/shapemlConfig.cmake cmake/shapeml/shapemlConfigVersion.cmake \
         pkgconfig/shapeml.pc pkgconfig/shapeml-runtime.pc; do
  [[ -e $libdir/$f ]] || fail "missing $libdir/$f"
done
[[ $(readlink "$libdir/libshapeml.so.0") == libshapeml.so.0.* ]] || fail "libshapeml.so.0 is not the SONAME link"
[[ $(readelf -d "$libdir/libshapeml_runtime.so.0" | grep SONAME) == *"libshapeml_runtime.so.0"* ]] || fail "runtime SONAME"
"$root/usr/bin/shapemlc" --version
# shapeml-doc: the documentation where Debian users look for it.
doc=$root/usr/share/doc/shapeml-doc
for f in guide/README.md guide/examples/call.c spec/language.md errors.md design/abi-policy.md examples/transformer_block.sml \
         README.md copyright; do
  [[ -e $doc/$f ]] || fail "missing /usr/share/doc/shapeml-doc/$f"
done
if command -v doxygen >/dev/null; then
  grep -q shapeml_entry_call "$doc/html/shapeml_8h.html" || fail "the C ABI HTML (shapeml-doc/html) lacks shapeml_entry_call"
fi
[[ $(dpkg-deb -f "$work"/debs/shapeml-doc_*.deb Architecture) == all ]] || fail "shapeml-doc is not Architecture: all"
# Each package its own synopsis, and no package listed twice in a Depends.
for d in "$work"/debs/*.deb; do
  [[ $(dpkg-deb -f "$d" Description | sed -n 1p) == *" - "* ]] || fail "$(basename "$d"): the synopsis is not the package's own"
  dups=$(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed -E 's/^ *//; s/ .*//; /^$/d' | sort | uniq -d)
  [[ -z $dups ]] || fail "$(basename "$d"): Depends lists $dups twice"
done
# The libraries' packages rely on the ldconfig trigger: no maintainer scripts
# (packaging/deb/drop-ldconfig-scripts.cmake), so a removed one leaves no `rc`.
for p in libshapeml-runtime0 libshapeml0; do
  ctl=$work/ctl-$p
  dpkg-deb -e "$work"/debs/${p}_*.deb "$ctl"
  [[ ! -e $ctl/postinst && ! -e $ctl/postrm ]] || fail "$p still has CPack's ldconfig postinst/postrm"
  grep -q "activate-noawait ldconfig" "$ctl/triggers" || fail "$p has no ldconfig trigger"
done
find "$root" -type f | sed "s|^$root||" | sort > "$work/files.txt"
echo "$(wc -l < "$work/files.txt") files unpacked"

echo "== 5a. mlpkit with CMake find_package(shapeml 0.3), installed files only"
# A copy of the example outside the repository, so nothing of the source
# tree (include/, build/) can be picked up by accident.
cp -r "$here/sdk-examples/mlpkit" "$work/mlpkit-src"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$work/mlpkit-src" -B "$work/mlpkit-cmake" "${gen[@]}" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/mlpkit-cmake.log" 2>&1 || { cat "$work/mlpkit-cmake.log"; fail "configure mlpkit"; }
grep -q "$root/usr" "$work/mlpkit-cmake/CMakeCache.txt" || fail "mlpkit did not find the unpacked shapeml"
cmake --build "$work/mlpkit-cmake" >>"$work/mlpkit-cmake.log" 2>&1 || { cat "$work/mlpkit-cmake.log"; fail "build mlpkit"; }
if grep -q -- "$here/include\|$build/libshapeml\|$build/shapemlc" "$work/mlpkit-cmake/build.ninja" 2>/dev/null; then
  fail "mlpkit saw the source or build tree"
fi
(cd "$work/mlpkit-cmake" && ctest --output-on-failure -V) | tee "$work/mlpkit-cmake-test.log" | grep -E "^[0-9]+: |tests passed|FAIL" ||
  fail "mlpkit tests (CMake)"
grep -q "100% tests passed" "$work/mlpkit-cmake-test.log" || fail "mlpkit tests (CMake)"
# With libshapeml-cuda0 unpacked, the runtime finds the plugin in its
# private directory (then, without a GPU, reports why CUDA is unavailable).
if ls "$work"/debs/libshapeml-cuda0_*.deb >/dev/null 2>&1; then
  grep -Eq "GPU: (skipped \(the CUDA plugin .*/shapeml/libshapeml_cuda.so|max abs error)" "$work/mlpkit-cmake-test.log" ||
    fail "the runtime did not find the unpacked CUDA plugin"
fi

echo "== 5b. find_package(shapeml COMPONENTS ...): a missing component names its package"
mkdir -p "$work/comp"
cat > "$work/comp/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(comp C)  # a language: find_package then searches the multiarch lib/<triplet>/cmake
find_package(shapeml CONFIG REQUIRED COMPONENTS ${WANT})
message(STATUS "shapeml components found: ${WANT}")
EOF
# comp WANTED EXPECTED: configure a consumer asking for WANTED; its output must contain EXPECTED.
comp() {
  local out
  out=$(cmake -S "$work/comp" -B "$work/comp/build-${1//;/-}" -DWANT="$1" -DCMAKE_PREFIX_PATH="$root/usr" \
        -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF 2>&1 || true)
  [[ $out == *"$2"* ]] || { echo "$out"; fail "find_package(shapeml COMPONENTS $1): expected \"$2\""; }
}
comp "sdk;tools" "shapeml components found"
comp nosuch "unknown component nosuch"
if ls "$work"/debs/libshapeml-cuda0_*.deb >/dev/null 2>&1; then
  comp cuda "shapeml components found"
else
  comp cuda "component cuda is not installed: install libshapeml-cuda0"
fi
echo "components: found when installed, a missing one named with its package"

echo "== 5c. mlpkit with pkg-config (make), installed files only"
PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs shapeml-runtime
PKG_CONFIG_PATH="$libdir/pkgconfig" make -s -C "$work/mlpkit-src" O="$work/mlpkit-make" SHAPEMLC="$root/usr/bin/shapemlc" \
  check LD_LIBRARY_PATH="$libdir" | tail -3 | tee "$work/mlpkit-make.log"
grep -q "mlpkit: PASS" "$work/mlpkit-make.log" || fail "mlpkit tests (pkg-config)"
echo "== 5d. a runtime-only consumer: libshapeml-runtime0 and libshapeml-runtime-dev alone"
rtroot="$work/root-runtime"
mkdir -p "$rtroot"
for d in "$work"/debs/libshapeml-runtime0_*.deb "$work"/debs/libshapeml-runtime-dev_*.deb; do dpkg -x "$d" "$rtroot"; done
rtlib=$(cd "$rtroot/usr/lib" && ls -d */ | grep -- '-linux-gnu/$' | head -1)
rtlib="$rtroot/usr/lib/${rtlib%/}"
[[ ! -e $rtlib/libshapeml.so.0 && ! -e $rtroot/usr/bin/shapemlc ]] || fail "the runtime-only root holds the compiler"
mkdir -p "$work/rt-consumer"
cp "$here/docs/guide/examples/call.c" "$work/rt-consumer/"
printf '%s\n' 'cmake_minimum_required(VERSION 3.16)' 'project(rt_consumer C)' 'find_package(shapeml 0.3 CONFIG REQUIRED)' \
  'add_executable(call call.c)' 'target_link_libraries(call PRIVATE shapeml::runtime)' > "$work/rt-consumer/CMakeLists.txt"
cmake -S "$work/rt-consumer" -B "$work/rt-consumer/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$rtroot/usr" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/rt-consumer.log" 2>&1 || { cat "$work/rt-consumer.log"; fail "configure the runtime-only consumer"; }
cmake --build "$work/rt-consumer/build" >>"$work/rt-consumer.log" 2>&1 || { cat "$work/rt-consumer.log"; fail "build the runtime-only consumer"; }
# The module comes from the full root's shapemlc (a build machine); the
# consumer runs with the runtime-only root.
"$root/usr/bin/shapemlc" build "$here/docs/guide/examples/affine.sml" -o "$work/rt-consumer/libaffine.so" --bind affine:B=2,D=3,F=4 \
  --target x86-64 >/dev/null
LD_LIBRARY_PATH="$rtlib" "$work/rt-consumer/build/call" "$work/rt-consumer/libaffine.so" | tee "$work/rt-consumer-run.log"
grep -q "^y = \[" "$work/rt-consumer-run.log" || fail "the runtime-only consumer did not call the module"
# shellcheck disable=SC2046
cc "$work/rt-consumer/call.c" $(PKG_CONFIG_PATH="$rtlib/pkgconfig" pkg-config --cflags --libs shapeml-runtime) -o "$work/rt-consumer/call-pc" ||
  fail "pkg-config shapeml-runtime from the runtime-only root"
out=$(cmake -S "$work/comp" -B "$work/comp/build-rt" -DWANT=sdk -DCMAKE_PREFIX_PATH="$rtroot/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF 2>&1 || true)
[[ $out == *"component sdk is not installed: install libshapeml0"* ]] || { echo "$out"; fail "runtime-only root: COMPONENTS sdk"; }
echo "runtime-only consumer: built with CMake and with pkg-config, called the module; COMPONENTS sdk names libshapeml0"
echo "package-test: PASS"
