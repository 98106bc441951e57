#include "lower/gpu/fuse_elementwise.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/fused_program.h"
#include "plan/layout.h"
#include "plan/verify.h"

namespace shapeml::lower::gpu {

using plan::GpuDType;
using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;
namespace F = plan::fused;

namespace {

using Shape = std::vector<int64_t>;

// `in` broadcasts to `out` (right-aligned; size-1 dims stretch; missing
// leading dims): the executor's rule for elementwise operands.
bool broadcasts(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != out[d + lead] && in[d] != 1) return false;
  return true;
}

// What an elementwise launch is as a program node.
struct Elem {
  int32_t kind = F::kLoad, op = -1;
  int64_t axis = -1;  // iota: its axis, normalized
};

// Facts about the plan the grouping needs: which launch writes each slot and
// which launches read it, through views.
struct Facts {
  std::vector<int> root;                  // per slot: the slot whose bytes it is
  std::vector<int> writer;                // per slot: the launch writing it (-1: none)
  std::vector<std::vector<int>> readers;  // per root slot: launches reading it (directly or through a view)
  std::vector<bool> viewed;               // per slot: some view aliases its bytes
  bool simple = true;                     // every slot written at most once, never through a view, never in place
};

Facts analyze(const GpuPlan& p) {
  Facts f;
  size_t n = p.slots.size();
  f.root.resize(n);
  f.writer.assign(n, -1);
  f.readers.resize(n);
  f.viewed.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    int r = static_cast<int>(i);
    while (p.slots[static_cast<size_t>(r)].kind == GpuSlot::Kind::View) r = p.slots[static_cast<size_t>(r)].alias;  // verified: alias < i
    f.root[i] = r;
    if (r != static_cast<int>(i)) f.viewed[static_cast<size_t>(r)] = true;
  }
  for (size_t j = 0; j < p.launches.size(); ++j) {
    const GpuLaunch& l = p.launches[j];
    for (int32_t s : l.inputs) f.readers[static_cast<size_t>(f.root[static_cast<size_t>(s)])].push_back(static_cast<int>(j));
    for (int32_t s : l.outputs) {
      if (p.slots[static_cast<size_t>(s)].kind == GpuSlot::Kind::View || f.writer[static_cast<size_t>(s)] >= 0) f.simple = false;
      f.writer[static_cast<size_t>(s)] = static_cast<int>(j);
      for (int32_t i : l.inputs)
        if (f.root[static_cast<size_t>(i)] == f.root[static_cast<size_t>(s)]) f.simple = false;
    }
  }
  return f;
}

// Launch l as a fusible elementwise node, or nullopt: a launch the executor
// would accept (the typing rules of plan/fused_program.h are the executor's), on
// device slots of a fusible dtype (not bf16), writing a temp or an output.
std::optional<Elem> elementwise(const GpuPlan& p, const GpuLaunch& l) {
  using K = plan::LaunchKind;
  static const K kKinds[] = {K::Unary, K::Binary, K::Compare, K::Select, K::Cast, K::Fill, K::Iota};
  if (std::find(std::begin(kKinds), std::end(kKinds), l.kind) == std::end(kKinds)) return std::nullopt;
  if (l.outputs.size() != 1) return std::nullopt;
  const GpuSlot& out = p.slots[static_cast<size_t>(l.outputs[0])];
  if (out.kind != GpuSlot::Kind::Temp && out.kind != GpuSlot::Kind::Output) return std::nullopt;
  std::vector<GpuDType> in_dt;
  for (int32_t s : l.inputs) {
    const GpuSlot& in = p.slots[static_cast<size_t>(s)];
    if (in.kind == GpuSlot::Kind::HostInput || in.kind == GpuSlot::Kind::HostOutput || in.dtype == GpuDType::BF16) return std::nullopt;
    if (!broadcasts(in.shape, out.shape)) return std::nullopt;
    in_dt.push_back(in.dtype);
  }
  if (out.dtype == GpuDType::BF16) return std::nullopt;
  Elem e;
  size_t want_in = 0;
  if (l.kind == plan::LaunchKind::Unary) e.kind = F::kUnary, want_in = 1;
  else if (l.kind == plan::LaunchKind::Binary) e.kind = F::kBinary, want_in = 2;
  else if (l.kind == plan::LaunchKind::Compare) e.kind = F::kCompare, want_in = 2;
  else if (l.kind == plan::LaunchKind::Select) e.kind = F::kSelect, want_in = 3;
  else if (l.kind == plan::LaunchKind::Cast) e.kind = F::kCast, want_in = 1;
  else if (l.kind == plan::LaunchKind::Fill) e.kind = F::kConst;
  else e.kind = F::kIota;
  if (l.inputs.size() != want_in) return std::nullopt;
  // Unary ops and casts take an operand of the output's shape (the executor
  // checks it; they do not broadcast).
  if ((e.kind == F::kUnary || e.kind == F::kCast) && p.slots[static_cast<size_t>(l.inputs[0])].shape != out.shape) return std::nullopt;
  if (e.kind == F::kUnary || e.kind == F::kBinary || e.kind == F::kCompare) {
    e.op = F::op_number(e.kind, l.op);
    if (e.op < 0) return std::nullopt;
  }
  if (e.kind == F::kIota) {
    if (l.ints.size() != 1) return std::nullopt;
    int64_t r = static_cast<int64_t>(out.shape.size());
    e.axis = l.ints[0] < 0 ? l.ints[0] + r : l.ints[0];
    if (e.axis < 0 || e.axis >= r) return std::nullopt;
  }
  // The launch alone as a program: loads of its inputs, then its node. The
  // program check is the typing rule the executor applies to the launch.
  std::vector<F::Node> nodes;
  for (size_t i = 0; i < in_dt.size(); ++i) {
    F::Node ld;
    ld.kind = F::kLoad;
    ld.dtype = in_dt[i];
    ld.a = static_cast<int64_t>(i);
    nodes.push_back(ld);
  }
  F::Node nd;
  nd.kind = e.kind;
  nd.op = e.op;
  nd.dtype = out.dtype;
  if (e.kind == F::kIota) nd.a = e.axis;
  if (e.kind == F::kConst) nd.a = F::double_bits(l.scalar);
  if (e.kind != F::kIota && e.kind != F::kConst) {
    nd.a = 0;
    if (in_dt.size() > 1) nd.b = 1;
    if (in_dt.size() > 2) nd.c = 2;
  }
  nodes.push_back(nd);
  if (!F::check(nodes, in_dt, out.dtype, out.shape.size()).empty()) return std::nullopt;
  return e;
}

// A group: a root launch and the launches it absorbs, as one program.
struct Group {
  int root = -1;
  std::vector<int> members;  // launch indices, ascending; the root last
  std::vector<F::Node> nodes;
  std::vector<int32_t> inputs;  // external slots, in load order
  std::vector<int> leaves;      // fill/iota launches inlined as immediates / index expressions
  std::vector<std::string> names;  // per node that is not a load: its op, for `why`
};

class Fuser {
 public:
  explicit Fuser(const GpuPlan& p) : p_(p), f_(analyze(p)) {
    elem_.resize(p.launches.size());
    for (size_t j = 0; j < p.launches.size(); ++j) elem_[j] = elementwise(p, p.launches[j]);
  }

  GpuPlan run() {
    if (!f_.simple) return p_;  // not a plan the planner makes: leave it alone
    const size_t L = p_.launches.size();
    group_of_.assign(L, -1);
    // Roots from the last launch back: a root claims its producers first, so
    // a chain becomes one group rooted at its last launch.
    for (size_t jj = L; jj-- > 0;) {
      int j = static_cast<int>(jj);
      if (group_of_[jj] >= 0 || !elem_[jj]) continue;
      if (elem_[jj]->kind == F::kConst || elem_[jj]->kind == F::kIota) continue;  // nothing to absorb
      std::optional<Group> g = grow(j);
      if (!g) continue;
      for (int m : g->members) group_of_[static_cast<size_t>(m)] = static_cast<int>(groups_.size());
      groups_.push_back(std::move(*g));
    }
    if (groups_.empty()) return p_;
    GpuPlan out = rebuild();
    if (out.launches.size() == p_.launches.size()) return p_;  // every group reverted: nothing saved
    if (plan::verify_plan(out)) return p_;  // never hand on a plan the verifier refuses
    return out;
  }

 private:
  const GpuSlot& slot(int32_t s) const { return p_.slots[static_cast<size_t>(s)]; }

  // The launch writing s, when s is a temp of its own (no view shares its
  // bytes): the only kind of value a group may keep to itself.
  int private_writer(int32_t s) const {
    if (slot(s).kind != GpuSlot::Kind::Temp || f_.viewed[static_cast<size_t>(s)]) return -1;
    return f_.writer[static_cast<size_t>(s)];
  }

  bool is_leaf(int w) const {
    return w >= 0 && elem_[static_cast<size_t>(w)] && (elem_[static_cast<size_t>(w)]->kind == F::kConst || elem_[static_cast<size_t>(w)]->kind == F::kIota);
  }

  // The group rooted at j: producers absorbed while legal and within the
  // caps, to a fixed point (a producer whose value two members read joins
  // once both are members). nullopt when it would replace nothing.
  std::optional<Group> grow(int j) {
    const Shape& out_shape = slot(p_.launches[static_cast<size_t>(j)].outputs[0]).shape;
    std::vector<int> members{j};
    std::vector<bool> refused(p_.launches.size(), false);
    Group best;
    if (!build(members, best)) return std::nullopt;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t mi = 0; mi < members.size() && !changed; ++mi) {
        for (int32_t s : p_.launches[static_cast<size_t>(members[mi])].inputs) {
          int w = private_writer(s);
          if (w < 0 || is_leaf(w) || !elem_[static_cast<size_t>(w)] || refused[static_cast<size_t>(w)] || group_of_[static_cast<size_t>(w)] >= 0) continue;
          if (std::find(members.begin(), members.end(), w) != members.end()) continue;
          if (w >= j) continue;  // written after the root: not a plan the planner makes
          const std::vector<int>& rd = f_.readers[static_cast<size_t>(s)];
          bool all_inside = std::all_of(rd.begin(), rd.end(), [&](int r) { return std::find(members.begin(), members.end(), r) != members.end(); });
          if (!all_inside) continue;  // read later outside the group: it must stay a buffer (maybe another root's)
          if (!broadcasts(slot(s).shape, out_shape)) continue;
          std::vector<int> next = members;
          next.push_back(w);
          std::sort(next.begin(), next.end());
          Group g;
          if (!build(next, g)) {
            refused[static_cast<size_t>(w)] = true;  // over the caps: stays a buffer
            continue;
          }
          members = std::move(next);
          best = std::move(g);
          changed = true;
          break;
        }
      }
    }
    if (best.members.size() < 2 && best.leaves.empty()) return std::nullopt;
    return best;
  }

  // The program of `members` (ascending, the root last); false over the caps.
  bool build(const std::vector<int>& members, Group& g) {
    g = Group{};
    g.root = members.back();
    g.members = members;
    const Shape& out_shape = slot(p_.launches[static_cast<size_t>(g.root)].outputs[0]).shape;
    std::map<int32_t, int64_t> value;  // slot -> node
    std::vector<int64_t> axes;
    auto add = [&](F::Node n) {
      g.nodes.push_back(n);
      return static_cast<int64_t>(g.nodes.size() - 1);
    };
    for (int m : members) {
      const GpuLaunch& l = p_.launches[static_cast<size_t>(m)];
      std::vector<int64_t> args;
      for (int32_t s : l.inputs) {
        if (auto it = value.find(s); it != value.end()) {
          args.push_back(it->second);
          continue;
        }
        int w = private_writer(s);
        F::Node n;
        n.dtype = slot(s).dtype;
        if (is_leaf(w) && w < m) {
          const GpuLaunch& lf = p_.launches[static_cast<size_t>(w)];
          const Elem& e = *elem_[static_cast<size_t>(w)];
          if (e.kind == F::kConst) {
            n.kind = F::kConst;
            n.a = F::double_bits(lf.scalar);
            g.names.push_back("fill");
          } else {
            // The leaf's index along its axis, in the output's coordinates: the
            // same dim right-aligned; a size-1 axis (broadcast) is always 0.
            const Shape& ls = slot(s).shape;
            if (ls[static_cast<size_t>(e.axis)] == 1) {
              n.kind = F::kConst;
              n.a = F::double_bits(0.0);
            } else {
              n.kind = F::kIota;
              n.a = e.axis + static_cast<int64_t>(out_shape.size() - ls.size());
              if (std::find(axes.begin(), axes.end(), n.a) == axes.end()) axes.push_back(n.a);
            }
            g.names.push_back("iota");
          }
          g.leaves.push_back(w);
        } else {
          n.kind = F::kLoad;
          n.a = static_cast<int64_t>(g.inputs.size());
          g.inputs.push_back(s);
        }
        int64_t id = add(n);
        value[s] = id;
        args.push_back(id);
      }
      const Elem& e = *elem_[static_cast<size_t>(m)];
      F::Node n;
      n.kind = e.kind;
      n.op = e.op;
      n.dtype = slot(l.outputs[0]).dtype;
      if (args.size() > 0) n.a = args[0];
      if (args.size() > 1) n.b = args[1];
      if (args.size() > 2) n.c = args[2];
      g.names.push_back(l.op.empty() ? std::string(plan::launch_kind_name(l.kind)) : l.op);
      value[l.outputs[0]] = add(n);
    }
    return g.nodes.size() <= static_cast<size_t>(F::kMaxNodes) && g.inputs.size() <= static_cast<size_t>(F::kMaxInputs) &&
           axes.size() <= static_cast<size_t>(F::kMaxIotaAxes);
  }

  // The plan with every group's root replaced by its fused launch, the other
  // members and now-unread inlined leaves dropped, the dead temps removed and
  // the workspace laid out again.
  GpuPlan rebuild() {
    const size_t L = p_.launches.size();
    std::vector<bool> drop(L, false);
    for (const Group& g : groups_)
      for (int m : g.members)
        if (m != g.root) drop[static_cast<size_t>(m)] = true;
    // A leaf whose value no remaining launch reads is dead: its readers were
    // all fused (and inlined it).
    std::vector<bool> dead_leaf(L, false);
    for (const Group& g : groups_)
      for (int w : g.leaves) {
        int32_t s = p_.launches[static_cast<size_t>(w)].outputs[0];
        const std::vector<int>& rd = f_.readers[static_cast<size_t>(s)];
        dead_leaf[static_cast<size_t>(w)] = std::none_of(rd.begin(), rd.end(), [&](int r) { return !drop[static_cast<size_t>(r)] && group_of_[static_cast<size_t>(r)] < 0; });
      }
    // A lone launch whose inlined leaves all stay (read elsewhere too) would
    // trade its specialized kernel for the interpreter and save no launch:
    // leave it unfused. Its leaves stay live either way, so no other group's
    // accounting changes.
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      Group& g = groups_[gi];
      if (g.members.size() != 1 || std::any_of(g.leaves.begin(), g.leaves.end(), [&](int w) { return dead_leaf[static_cast<size_t>(w)]; })) continue;
      group_of_[static_cast<size_t>(g.root)] = -1;
      g.members.clear();
    }
    // Each dead leaf is dropped and credited (in `why`) to the first group that inlined it.
    std::vector<int> credit(groups_.size(), 0);
    std::vector<int> order;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (!groups_[gi].members.empty()) order.push_back(static_cast<int>(gi));
    std::sort(order.begin(), order.end(), [&](int a, int b) { return groups_[static_cast<size_t>(a)].root < groups_[static_cast<size_t>(b)].root; });
    for (int gi : order)
      for (int w : groups_[static_cast<size_t>(gi)].leaves)
        if (dead_leaf[static_cast<size_t>(w)] && !drop[static_cast<size_t>(w)]) {
          drop[static_cast<size_t>(w)] = true;
          ++credit[static_cast<size_t>(gi)];
        }
    // Slots no launch writes or reads any more: the absorbed values and dead leaves'.
    std::vector<bool> dead_slot(p_.slots.size(), false);
    for (size_t j = 0; j < L; ++j)
      if (drop[j]) dead_slot[static_cast<size_t>(p_.launches[j].outputs[0])] = true;
    std::vector<int32_t> renum(p_.slots.size(), -1);
    GpuPlan out = p_;
    out.slots.clear();
    for (size_t i = 0; i < p_.slots.size(); ++i) {
      if (dead_slot[i]) continue;
      renum[i] = static_cast<int32_t>(out.slots.size());
      GpuSlot s = p_.slots[i];
      if (s.kind == GpuSlot::Kind::View) s.alias = renum[static_cast<size_t>(s.alias)];  // a view's alias is never dead (viewed values are kept)
      out.slots.push_back(std::move(s));
    }
    out.launches.clear();
    for (size_t j = 0; j < L; ++j) {
      if (drop[j]) continue;
      GpuLaunch l;
      int gi = group_of_[j];
      if (gi >= 0) {
        const Group& g = groups_[static_cast<size_t>(gi)];
        const GpuLaunch& root = p_.launches[j];
        l.kind = plan::LaunchKind::Fused;
        l.library = "shapeml";
        l.inputs = g.inputs;
        l.outputs = root.outputs;
        l.ints = F::encode(g.nodes);
        std::string ops;
        for (const std::string& n : g.names) ops += (ops.empty() ? "" : " ") + n;
        size_t replaced = g.members.size() + static_cast<size_t>(credit[static_cast<size_t>(gi)]);
        l.why = "fused: " + ops + " (" + std::to_string(replaced) + " launch" + (replaced == 1 ? "" : "es") + " -> 1)";
        if (!root.why.empty()) l.why += "; " + root.why;
      } else {
        l = p_.launches[j];
      }
      for (int32_t& s : l.inputs) s = renum[static_cast<size_t>(s)];
      for (int32_t& s : l.outputs) s = renum[static_cast<size_t>(s)];
      out.launches.push_back(std::move(l));
    }
    plan::layout_workspace(out);
    return out;
  }

  const GpuPlan& p_;
  Facts f_;
  std::vector<std::optional<Elem>> elem_;
  std::vector<int> group_of_;  // per launch: the group it is a member of (-1: none)
  std::vector<Group> groups_;
};

}  // namespace

plan::GpuPlan fuse_elementwise(const plan::GpuPlan& plan) {
  if (plan::verify_plan(plan)) return plan;
  return Fuser(plan).run();
}

}  // namespace shapeml::lower::gpu
