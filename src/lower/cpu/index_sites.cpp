#include "lower/cpu/index_sites.h"

#include "syntax/ops.h"

namespace shapeml::lower::cpu {

using syntax::OpKind;

namespace {
void collect_sites(const ir::Module& m, const ir::Function& f, std::vector<IndexSite>& out, int depth) {
  if (depth > 64) return;  // the emitter reports "calls nested too deeply"
  for (const ir::Binding& b : f.body) {
    if (b.op == OpKind::Call) {
      if (const ir::Function* c = m.find(b.attrs.callee)) collect_sites(m, *c, out, depth + 1);
      continue;
    }
    if (!syntax::op_reads_indices(b.op) || b.operands.size() != 2) continue;
    IndexSite s;
    s.op = std::string(syntax::op_name(b.op));
    if (m.source) {
      auto lc = m.source->line_col(b.span.begin);
      s.location = m.source->name() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col);
    } else {
      s.location = "<unknown>";
    }
    const ir::Value& idx = f.values[b.operands[1]];
    s.rank = idx.type.rank();
    s.operand = !idx.name.empty() && idx.name[0] != '%' ? idx.name : "";
    out.push_back(std::move(s));
  }
}
}  // namespace

std::vector<IndexSite> index_sites(const ir::Module& m, const std::string& entry) {
  std::vector<IndexSite> out;
  if (const ir::Function* f = m.find(entry)) collect_sites(m, *f, out, 0);
  return out;
}

}  // namespace shapeml::lower::cpu
