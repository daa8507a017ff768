// SymmetricStates: one search for all nodes whose GPU states are one another's relabeled by a
// symmetry of their machine (topology::ShapeSymmetry), within one PodEvaluator.
//
// A node's *canonical state* lists its GPUs' states (slots and milli used, exclusive, healthy,
// holding the pod's group) in an order that is the same for every node of such a class: each
// listed relabeling, then each twin class sorted by state, keeping the smallest. The first node
// of a class is searched (policies::EvaluateNode); when its choice was unique by a margin
// (policies::EvaluateNode's `unique_best`), every later node of the class takes the relabeled
// choice, scored on that node itself (policies::EvaluatePlacement), without a search. Answers
// are therefore exactly EvaluateNode's. Pods whose search tries no more sets than the node has
// GPUs (one GPU, or all but one) are searched on every node: keying and rescoring would cost as
// much.
//
// Thread safety: not thread-safe; one per PodEvaluator.
#ifndef GPUTOPO_EVALUATION_SYMMETRIC_STATES_H_
#define GPUTOPO_EVALUATION_SYMMETRIC_STATES_H_

#include <array>
#include <cstdint>
#include <memory_resource>
#include <string>
#include <unordered_map>

#include "policies/engine/evaluation.h"

namespace gputopo::evaluation {

class SymmetricStates {
 public:
  // `pod` and `preset` must outlive this.
  SymmetricStates(const policies::PodRequirements& pod, const policies::Preset& preset)
      : pod_(pod), preset_(preset) {}

  // EvaluateNode(pod, node, preset, group_gpus). Precondition: node.has_topology().
  policies::NodeEvaluation Evaluate(const policies::NodeState& node, policies::GpuMask group_gpus);

  uint64_t searched() const { return searched_; }    // nodes searched
  uint64_t relabeled() const { return relabeled_; }  // nodes answered from another's search

 private:
  struct Canonical {
    std::pmr::string key;              // on the heap: a buffer reused from node to node
    std::array<uint8_t, 64> gpu_at{};  // canonical slot -> the node's GPU
  };
  // False when the machine has no symmetry worth keying on.
  bool Canonicalize(const policies::NodeState& node, policies::GpuMask group_gpus,
                    Canonical& out) const;
  struct Searched {
    bool shareable = false;       // it fits, and its choice was unique by a margin
    policies::GpuMask slots = 0;  // the choice, in canonical slots
    uint64_t candidates = 0;
  };

  const policies::PodRequirements& pod_;
  const policies::Preset& preset_;
  Canonical canonical_;  // Evaluate's scratch
  // The map's entries and their keys come from one arena, freed with this: a cold cycle's
  // searches insert thousands of them on two threads at once, and malloc's one arena lock
  // (app::TuneAllocator) made those threads wait on each other (bench/HISTORY.md, 2026-12-07).
  std::pmr::monotonic_buffer_resource arena_;
  std::pmr::unordered_map<std::pmr::string, Searched> searched_states_{&arena_};
  uint64_t searched_ = 0;
  uint64_t relabeled_ = 0;
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_SYMMETRIC_STATES_H_
