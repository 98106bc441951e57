/* A hand-written stand-in for an ahead-of-time compiled shapeml module
 * (src/common/compiled_entry.h): specializations with the C signature
 * void f(void** buffers), a manifest, and the ABI version. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

static const char kManifest[] =
    "; written by hand for tests/runtime\n"
    "(shapeml-module (abi 1) (name test_module) (target \"x86-64-v3\")\n"
    "  (entry add (dims N)\n"
    "    (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host)))\n"
    "    (returns (tensor f32 (N) host))\n"
    "    (specialization (bind (N 4)) (symbol shapeml_add_4))\n"
    "    (specialization (bind (N 8)) (symbol shapeml_add_8)))\n"
    "  (entry rowsum (dims B D) (where (= (mod D 4) 0) (<= B 64))\n"
    "    (params (x (tensor f32 (B D) host)))\n"
    "    (returns (tensor f32 (B) host))\n"
    "    (specialization (bind (B 2) (D 8)) (symbol shapeml_rowsum_2_8))\n"
    "    (specialization (bind (B 3) (D 4)) (symbol shapeml_rowsum_3_4)))\n"
    "  (entry pairs (dims N)\n"
    "    (params (x (tensor i64 ((* 2 N)) host)) (flags (tensor bool ((+ N 1)) host)))\n"
    "    (returns (tensor i64 (N) host) (tensor i64 (1) host))\n"
    "    (specialization (bind (N 3)) (symbol shapeml_pairs_3)))\n"
    "  (entry on_gpu (dims N)\n"
    "    (params (x (tensor f32 (N) (cuda 0))))\n"
    "    (returns (tensor f32 (N) (cuda 0)))))\n";

EXPORT const char* shapeml_module_manifest(void) { return kManifest; }
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }

static void add_n(void** b, int n) {
  const float* x = (const float*)b[0];
  const float* y = (const float*)b[1];
  float* out = (float*)b[2];
  for (int i = 0; i < n; ++i) out[i] = x[i] + y[i];
}
EXPORT void shapeml_add_4(void** b) { add_n(b, 4); }
EXPORT void shapeml_add_8(void** b) { add_n(b, 8); }

static void rowsum(void** b, int rows, int cols) {
  const float* x = (const float*)b[0];
  float* out = (float*)b[1];
  for (int r = 0; r < rows; ++r) {
    float s = 0;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s;
  }
}
EXPORT void shapeml_rowsum_2_8(void** b) { rowsum(b, 2, 8); }
EXPORT void shapeml_rowsum_3_4(void** b) { rowsum(b, 3, 4); }

/* out0[i] = x[2i] + x[2i+1]; out1[0] = number of true flags. */
EXPORT void shapeml_pairs_3(void** b) {
  const int64_t* x = (const int64_t*)b[0];
  const uint8_t* flags = (const uint8_t*)b[1];
  int64_t* sums = (int64_t*)b[2];
  int64_t* count = (int64_t*)b[3];
  for (int i = 0; i < 3; ++i) sums[i] = x[2 * i] + x[2 * i + 1];
  count[0] = 0;
  for (int i = 0; i < 4; ++i) count[0] += flags[i];
}
