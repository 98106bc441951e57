#include "plan/geometry.h"

#include <algorithm>

namespace shapeml::plan {

Shape dense_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? " " : "") + std::to_string(s[i]);
  return t + "]";
}

bool broadcast_strides(const Shape& in, const Shape& out, Shape& st) {
  if (in.size() > out.size()) return false;
  Shape dense = dense_strides(in);
  size_t lead = out.size() - in.size();
  st.assign(out.size(), 0);
  for (size_t d = lead; d < out.size(); ++d) {
    int64_t a = in[d - lead];
    if (a == out[d]) st[d] = a == 1 ? 0 : dense[d - lead];
    else if (a == 1) st[d] = 0;
    else return false;
  }
  return true;
}

void coalesce_dims(const Shape& shape, const std::vector<Shape>& strides, Shape& sh, std::vector<Shape>& st) {
  const size_t nops = strides.size();
  sh.clear();
  st.assign(nops, {});
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sh.empty();
    for (size_t k = 0; k < nops && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      sh.back() *= shape[d];
      for (size_t k = 0; k < nops; ++k) st[k].back() = strides[k][d];
    } else {
      sh.push_back(shape[d]);
      for (size_t k = 0; k < nops; ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (sh.empty()) {  // a single element
    sh.push_back(1);
    for (auto& v : st) v.push_back(0);
  }
}

size_t coalesced_rank(const Shape& shape, const std::vector<Shape>& strides) {
  Shape sh;
  std::vector<Shape> st;
  coalesce_dims(shape, strides, sh, st);
  return sh.size();
}

std::string matmul_geometry(const Shape& a, const Shape& b, bool trans_a, bool trans_b, MatmulGeometry& g) {
  const size_t ra = a.size(), rb = b.size();
  if (ra < 2 || rb < 2) return "matmul needs operands of rank >= 2";
  g.m = a[ra - (trans_a ? 1 : 2)], g.k = a[ra - (trans_a ? 2 : 1)];
  int64_t kb = b[rb - (trans_b ? 1 : 2)];
  g.n = b[rb - (trans_b ? 2 : 1)];
  if (kb != g.k) return "inner dimensions differ: " + shape_str(a) + " x " + shape_str(b);
  g.batch_a.assign(a.begin(), a.end() - 2);
  g.batch_b.assign(b.begin(), b.end() - 2);
  g.batch.assign(std::max(g.batch_a.size(), g.batch_b.size()), 1);
  for (size_t i = 0; i < g.batch.size(); ++i) {
    int64_t x = i < g.batch_a.size() ? g.batch_a[g.batch_a.size() - 1 - i] : 1;
    int64_t y = i < g.batch_b.size() ? g.batch_b[g.batch_b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return "batch dimensions do not broadcast: " + shape_str(a) + " x " + shape_str(b);
    g.batch[g.batch.size() - 1 - i] = x == 1 ? y : x;
  }
  // The broadcast batch can hold more matrices than either operand: its
  // extent (dimensions taken as at least 1) must fit in 64 bits.
  int64_t extent = 1;
  for (int64_t d : g.batch)
    if (__builtin_mul_overflow(extent, d > 0 ? d : 1, &extent)) return "the broadcast batch dimensions overflow 64 bits: " + shape_str(a) + " x " + shape_str(b);
  // B shared (one [K, N] matrix or all batch dims 1) and A not broadcast:
  // A is one [batch*M, K] matrix (the rows of a stored A^T are not).
  g.folded = numel(g.batch_b) == 1 && g.batch_a == g.batch && !trans_a;
  g.pieces = 1;
  if (!g.folded && numel(g.batch) > 0) {
    Shape sa, sb;
    broadcast_strides(g.batch_a, g.batch, sa);
    broadcast_strides(g.batch_b, g.batch, sb);
    coalesce_dims(g.batch, {sa, sb}, g.coalesced_batch, g.coalesced_strides);
    g.pieces = numel(g.batch) / g.coalesced_batch.back();
  }
  return "";
}

}  // namespace shapeml::plan
