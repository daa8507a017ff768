#include "policies/engine/placement_context.h"

namespace gputopo::policies {

PlacementContext MakePlacementContext(const PodRequirements& pod, const NodeState& node) {
  return MakePlacementContext(pod, node, node.GroupGpus(pod.group));
}

PlacementContext MakePlacementContext(const PodRequirements& pod, const NodeState& node,
                                      GpuMask group_gpus) {
  PlacementContext ctx{pod, node, node.shape()};
  ctx.share_milli = pod.ShareMilli(node.replicas());
  ctx.all = ctx.shape.all_gpus();
  ctx.empty = node.empty_gpus();
  ctx.group_gpus = pod.spread == SpreadMode::kNone ? 0 : group_gpus;
  for (int i = 0; i < ctx.shape.island_count(); ++i) {
    if ((ctx.shape.island(i) & ctx.group_gpus) != 0) ctx.group_islands |= ctx.shape.island(i);
  }
  for (int g = 0; g < node.gpu_count(); ++g) {
    ctx.free_slots[static_cast<size_t>(g)] = node.gpu_free_slots(g);
    ctx.free_milli[static_cast<size_t>(g)] = node.gpu_free_milli(g);
  }
  ctx.node_free_slots = node.free_slots();
  return ctx;
}

}  // namespace gputopo::policies
