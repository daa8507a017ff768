#include "evaluation/symmetric_states.h"

#include <algorithm>
#include <cstring>

namespace gputopo::evaluation {

using policies::GpuMask;
using policies::NodeEvaluation;
using policies::NodeState;

namespace {

void Append(std::pmr::string& out, uint64_t value) {
  char bytes[sizeof(value)];
  std::memcpy(bytes, &value, sizeof(value));
  out.append(bytes, sizeof(value));
}

}  // namespace

bool SymmetricStates::Canonicalize(const NodeState& node, GpuMask group_gpus,
                                   Canonical& out) const {
  const topology::ShapeSymmetry& symmetry = node.shape().symmetry();
  const int n = node.gpu_count();
  if (symmetry.trivial() || n > 64 || static_cast<int>(symmetry.twin_class.size()) != n) {
    return false;
  }
  // Each GPU's state as one number; equal numbers evaluate alike.
  std::array<uint64_t, 64> state;  // [0, n) written below
  for (int g = 0; g < n; ++g) {
    const policies::GpuOccupancy& gpu = node.gpu(g);
    if (gpu.slots_used < 0 || gpu.slots_used > 0xFFFF || gpu.milli_used < 0 ||
        gpu.milli_used > 0xFFFFFF) {
      return false;  // absurd counts: not worth a key of their own
    }
    state[static_cast<size_t>(g)] =
        static_cast<uint64_t>(static_cast<uint32_t>(gpu.slots_used)) |
        static_cast<uint64_t>(static_cast<uint32_t>(gpu.milli_used)) << 16 |
        static_cast<uint64_t>(gpu.exclusive) << 40 |
        static_cast<uint64_t>(topology::Has(node.unhealthy_gpus(), g)) << 41 |
        static_cast<uint64_t>(topology::Has(group_gpus, g)) << 42;
  }
  // Under each relabeling r, GPU g's state sits at r[g]; the slots of each twin class are then
  // ordered by state (ties by position). The smallest sequence wins.
  // Every class one GPU, numbered in GPU order (shape_symmetry.h): the order is the positions'.
  const bool singleton_twins = symmetry.twin_classes == n;
  // Only [0, n) of these is ever written or read.
  std::array<uint64_t, 64> best;
  std::array<uint8_t, 64> best_at;
  bool have = false;
  std::array<uint64_t, 64> placed;
  std::array<uint8_t, 64> source;  // position -> the node's GPU
  std::array<uint8_t, 64> order;
  std::array<uint64_t, 64> sequence;
  for (const std::vector<uint8_t>& relabeling : symmetry.relabelings) {
    for (int g = 0; g < n; ++g) {
      placed[relabeling[static_cast<size_t>(g)]] = state[static_cast<size_t>(g)];
      source[relabeling[static_cast<size_t>(g)]] = static_cast<uint8_t>(g);
    }
    for (int p = 0; p < n; ++p) order[static_cast<size_t>(p)] = static_cast<uint8_t>(p);
    if (!singleton_twins) {
      // A stable insertion sort: a few GPUs, and no buffer to allocate (std::stable_sort's).
      auto before = [&](uint8_t a, uint8_t b) {
        const int ca = symmetry.twin_class[a];
        const int cb = symmetry.twin_class[b];
        if (ca != cb) return ca < cb;
        return placed[a] < placed[b];
      };
      for (int k = 1; k < n; ++k) {
        const uint8_t moving = order[static_cast<size_t>(k)];
        int j = k;
        for (; j > 0 && before(moving, order[static_cast<size_t>(j - 1)]); --j) {
          order[static_cast<size_t>(j)] = order[static_cast<size_t>(j - 1)];
        }
        order[static_cast<size_t>(j)] = moving;
      }
    }
    for (int k = 0; k < n; ++k)
      sequence[static_cast<size_t>(k)] = placed[order[static_cast<size_t>(k)]];
    if (!have || std::lexicographical_compare(sequence.begin(), sequence.begin() + n, best.begin(),
                                              best.begin() + n)) {
      have = true;
      std::copy_n(sequence.begin(), n, best.begin());
      for (int k = 0; k < n; ++k)
        best_at[static_cast<size_t>(k)] = source[order[static_cast<size_t>(k)]];
    }
  }
  out.key.clear();
  // What the evaluation reads of the node besides its GPUs (NodeState::signature's prefix, with
  // the unhealthy GPUs in the sequence instead of as a mask).
  Append(out.key, reinterpret_cast<std::uintptr_t>(&node.shape()));
  Append(out.key, static_cast<uint64_t>(node.replicas()));
  Append(out.key, static_cast<uint64_t>(node.total_slots()));
  Append(out.key, static_cast<uint64_t>(node.unplaced_slots()));
  Append(out.key, node.observed_workload() == nullptr ? 0 : node.observed_workload()->version);
  Append(out.key, static_cast<uint64_t>(node.host().cpu_free_milli()));
  Append(out.key, static_cast<uint64_t>(node.host().memory_free_bytes()));
  for (int k = 0; k < n; ++k) Append(out.key, best[static_cast<size_t>(k)]);
  out.gpu_at = best_at;
  return true;
}

NodeEvaluation SymmetricStates::Evaluate(const NodeState& node, GpuMask group_gpus) {
  Canonical& canonical = canonical_;  // its key's buffer is reused from node to node
  // A search of at most as many sets as GPUs (one GPU, or all but one) costs about what keying
  // and rescoring would: those are searched.
  const bool worth_sharing = pod_.gpus >= 2 && pod_.gpus < node.gpu_count() - 1;
  if (!worth_sharing || !Canonicalize(node, group_gpus, canonical)) {
    ++searched_;
    return policies::EvaluateNode(pod_, node, preset_, group_gpus);
  }
  const int n = node.gpu_count();
  // (One hash; the key is copied only into a new entry, and its buffer stays canonical_'s.)
  auto [it, inserted] = searched_states_.try_emplace(canonical.key);
  if (!inserted && it->second.shareable) {
    GpuMask gpus = 0;
    for (int k = 0; k < n; ++k) {
      if (topology::Has(it->second.slots, k)) {
        gpus |= topology::Bit(canonical.gpu_at[static_cast<size_t>(k)]);
      }
    }
    ++relabeled_;
    return policies::EvaluatePlacement(pod_, node, preset_, group_gpus, gpus,
                                       it->second.candidates);
  }
  ++searched_;
  bool unique = false;
  NodeEvaluation e = policies::EvaluateNode(pod_, node, preset_, group_gpus, &unique);
  if (inserted) {
    Searched& entry = it->second;
    entry.shareable = e.fits() && unique;
    entry.candidates = e.candidates;
    for (int k = 0; k < n; ++k) {
      if (topology::Has(e.gpus, canonical.gpu_at[static_cast<size_t>(k)])) {
        entry.slots |= topology::Bit(k);
      }
    }
  }
  return e;
}

}  // namespace gputopo::evaluation
