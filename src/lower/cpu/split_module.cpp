#include "lower/cpu/split_module.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace shapeml::lower::cpu {

namespace {

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

// A local constant: copied into every partition that uses it.
bool copied_everywhere(const llvm::GlobalVariable& v) { return v.hasLocalLinkage() && v.isConstant() && v.hasInitializer(); }

}  // namespace

std::vector<llvm::SmallString<0>> split_module_for_codegen(llvm::Module& m, unsigned max_parts, const std::string& prefix) {
  if (max_parts < 2 || !m.alias_empty() || !m.ifunc_empty()) return {};
  for (const llvm::GlobalVariable& v : m.globals())
    if (v.hasAppendingLinkage()) return {};

  // Groups of functions joined by direct calls (noinline callees excepted).
  std::vector<llvm::Function*> fns;
  std::map<const llvm::Function*, size_t> index;
  for (llvm::Function& f : m)
    if (!f.isDeclaration()) index[&f] = fns.size(), fns.push_back(&f);
  UnionFind groups(fns.size());
  for (size_t i = 0; i < fns.size(); ++i)
    for (llvm::BasicBlock& bb : *fns[i])
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
          if (llvm::Function* callee = call->getCalledFunction())
            if (auto it = index.find(callee); it != index.end() && !callee->hasFnAttribute(llvm::Attribute::NoInline))
              groups.join(i, it->second);
  std::map<size_t, uint64_t> group_size;
  for (size_t i = 0; i < fns.size(); ++i) group_size[groups.find(i)] += fns[i]->getInstructionCount() + 1;
  if (group_size.size() < 2) return {};

  // Largest group first onto the least loaded partition.
  const unsigned parts = std::min<unsigned>(max_parts, static_cast<unsigned>(group_size.size()));
  std::vector<std::pair<uint64_t, size_t>> by_size;
  for (const auto& [g, size] : group_size) by_size.push_back({size, g});
  std::sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<uint64_t> load(parts, 0);
  std::map<size_t, unsigned> part_of_group;
  for (const auto& [size, g] : by_size) {
    unsigned p = static_cast<unsigned>(std::min_element(load.begin(), load.end()) - load.begin());
    part_of_group[g] = p;
    load[p] += size;
  }
  std::map<const llvm::GlobalValue*, unsigned> owner;
  for (size_t i = 0; i < fns.size(); ++i) owner[fns[i]] = part_of_group[groups.find(i)];

  // Every other global lives with its first user (partition 0 if none).
  std::function<void(const llvm::Value*, std::set<unsigned>&)> user_parts = [&](const llvm::Value* v, std::set<unsigned>& out) {
    for (const llvm::User* u : v->users()) {
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(u)) {
        out.insert(owner.at(inst->getFunction()));
      } else if (auto* gv = llvm::dyn_cast<llvm::GlobalVariable>(u)) {
        if (copied_everywhere(*gv))
          for (unsigned p = 0; p < parts; ++p) out.insert(p);
        else
          user_parts(gv, out);  // its owner is decided by its own users
      } else if (auto* c = llvm::dyn_cast<llvm::Constant>(u)) {
        user_parts(c, out);
      }
    }
  };
  for (llvm::GlobalVariable& v : m.globals()) {
    if (v.isDeclaration() || copied_everywhere(v)) continue;
    std::set<unsigned> users;
    user_parts(&v, users);
    owner[&v] = users.empty() ? 0 : *users.begin();
  }

  // A local symbol used outside its partition becomes external, uniquely named.
  auto externalize = [&](llvm::GlobalValue& gv) {
    if (!gv.hasName() || !llvm::StringRef(gv.getName()).starts_with(prefix)) gv.setName(prefix + "." + (gv.hasName() ? gv.getName().str() : "anon"));
    gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
    gv.setVisibility(llvm::GlobalValue::DefaultVisibility);
    gv.setDSOLocal(false);
  };
  std::vector<llvm::GlobalValue*> shared;
  for (llvm::GlobalValue& gv : m.global_values()) {
    auto it = owner.find(&gv);
    if (it == owner.end() || !gv.hasLocalLinkage()) continue;
    std::set<unsigned> users;
    user_parts(&gv, users);
    if (users.size() > 1 || (users.size() == 1 && *users.begin() != it->second)) shared.push_back(&gv);
  }
  for (llvm::GlobalValue* gv : shared) externalize(*gv);

  std::vector<llvm::SmallString<0>> out(parts);
  for (unsigned p = 0; p < parts; ++p) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part = llvm::CloneModule(m, map, [&](const llvm::GlobalValue* gv) {
      if (auto* v = llvm::dyn_cast<llvm::GlobalVariable>(gv); v && copied_everywhere(*v)) return true;
      auto it = owner.find(gv);
      return it != owner.end() && it->second == p;
    });
    // What another partition defines may be anywhere in the address space.
    for (llvm::GlobalValue& gv : part->global_values())
      if (gv.isDeclaration() && !gv.hasLocalLinkage()) gv.setDSOLocal(false);
    llvm::raw_svector_ostream os(out[p]);
    llvm::WriteBitcodeToFile(*part, os);
  }
  return out;
}

}  // namespace shapeml::lower::cpu
