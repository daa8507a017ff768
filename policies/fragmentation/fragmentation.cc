#include "policies/fragmentation/fragmentation.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace gputopo::policies {

double FragmentMilli(const FreeView& view, const WorkloadClass& cls) {
  double total_free = 0.0;
  double unusable_free = 0.0;
  GpuMask usable = 0;
  for (int g = 0; g < view.gpu_count; ++g) {
    const int milli = view.free_milli[static_cast<size_t>(g)];
    total_free += milli;
    if (view.free_slots[static_cast<size_t>(g)] >= 1 && milli >= cls.milli) {
      usable |= topology::Bit(g);
    } else {
      unusable_free += milli;
    }
  }
  bool fits = view.node_free_slots >= cls.gpus;
  if (fits) {
    if (cls.gpus <= 1) {
      fits = usable != 0;
    } else {
      fits = false;
      for (GpuMask domain : view.domains) {
        if (topology::Count(usable & domain) >= cls.gpus) {
          fits = true;
          break;
        }
      }
    }
  }
  return fits ? unusable_free : total_free;
}

double ExpectedFragmentMilli(const FreeView& view, const std::vector<WorkloadClass>& workload) {
  double sum = 0.0;
  double weights = 0.0;
  for (const WorkloadClass& cls : workload) {
    sum += cls.weight * FragmentMilli(view, cls);
    weights += cls.weight;
  }
  return weights > 0.0 ? sum / weights : 0.0;
}

double FragmentationScore(double delta_milli) {
  return std::clamp(5.0 - 5.0 * delta_milli / kWholeGpuMilli, 0.0, kMaxComponentScore);
}

FreeView Fragmentation::Before(const PlacementContext& ctx) {
  FreeView view;
  view.gpu_count = ctx.node.gpu_count();
  view.free_slots = ctx.free_slots;
  view.free_milli = ctx.free_milli;
  view.node_free_slots = ctx.node_free_slots;
  const topology::TopologyShape& shape = ctx.shape;
  if (shape.has_nvlink()) {
    for (int i = 0; i < shape.island_count(); ++i) view.domains.push_back(shape.island(i));
  } else if (!shape.numa_ids().empty()) {
    GpuMask unknown = shape.all_gpus();
    for (int id : shape.numa_ids()) {
      view.domains.push_back(shape.numa_gpus(id));
      unknown &= ~shape.numa_gpus(id);
    }
    if (unknown != 0) view.domains.push_back(unknown);
  } else {
    view.domains.push_back(shape.all_gpus());
  }
  return view;
}

FreeView Fragmentation::After(const PlacementContext& ctx, FreeView view, GpuMask gpus) {
  for (GpuMask rest = gpus; rest != 0; rest &= rest - 1) {
    const auto g = static_cast<size_t>(std::countr_zero(rest));
    if (ctx.pod.exclusive) {
      view.free_slots[g] = 0;
      view.free_milli[g] = 0;
    } else {
      view.free_slots[g] = std::max(0, view.free_slots[g] - 1);
      view.free_milli[g] = std::max(0, view.free_milli[g] - ctx.share_milli);
    }
  }
  view.node_free_slots = std::max(0, view.node_free_slots - topology::Count(gpus));
  return view;
}

double Fragmentation::Delta(const PlacementContext& ctx, GpuMask gpus) const {
  const FreeView before = Before(ctx);
  const FreeView after = After(ctx, before, gpus);
  return ExpectedFragmentMilli(after, workload_) - ExpectedFragmentMilli(before, workload_);
}

double Fragmentation::Score(const PlacementContext& ctx, GpuMask gpus) const {
  return FragmentationScore(Delta(ctx, gpus));
}

std::string Fragmentation::Explain(const PlacementContext& ctx, GpuMask gpus) const {
  const double delta = Delta(ctx, gpus);
  char text[96];
  std::snprintf(text, sizeof(text), "expected stranded capacity %+.2f GPU (%.2f -> %.2f)",
                delta / kWholeGpuMilli,
                ExpectedFragmentMilli(Before(ctx), workload_) / kWholeGpuMilli,
                ExpectedFragmentMilli(After(ctx, Before(ctx), gpus), workload_) / kWholeGpuMilli);
  return text;
}

std::vector<WorkloadClass> Fragmentation::DefaultWorkload() {
  return {{1, 250, 0.15},  {1, 500, 0.15},  {1, 1000, 0.35},
          {2, 1000, 0.15}, {4, 1000, 0.10}, {8, 1000, 0.10}};
}

}  // namespace gputopo::policies
