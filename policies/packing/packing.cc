#include "policies/packing/packing.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>

#include "policies/engine/placement_context.h"
#include "policies/state/node_state.h"

namespace gputopo::policies {

double PackingScore(int64_t cpu_left_milli, int64_t gpu_left_milli, double cpu_reference_milli,
                    double gpu_reference_milli) {
  const double gpu = static_cast<double>(gpu_left_milli) / gpu_reference_milli;
  const double left =
      cpu_left_milli < 0
          ? gpu
          : 0.5 * static_cast<double>(cpu_left_milli) / cpu_reference_milli + 0.5 * gpu;
  return std::clamp(kMaxComponentScore * (1.0 - left), 0.0, kMaxComponentScore);
}

namespace {

class PreparedPacking final : public PreparedScore {
 public:
  PreparedPacking(const PlacementContext& ctx, double cpu_reference, double gpu_reference)
      : ctx_(ctx), cpu_reference_(cpu_reference), gpu_reference_(gpu_reference) {
    for (int g = 0; g < ctx.node.gpu_count(); ++g) {
      gpu_free_ += ctx.free_milli[static_cast<size_t>(g)];
    }
    const int64_t cpu_free = ctx.node.host().cpu_free_milli();
    cpu_left_ = cpu_free == std::numeric_limits<int64_t>::max()
                    ? -1
                    : std::max<int64_t>(0, cpu_free - ctx.pod.cpu_milli);
  }

  double Score(GpuMask gpus) const override {
    return PackingScore(cpu_left_, GpuLeft(gpus), cpu_reference_, gpu_reference_);
  }

  std::string Explain(GpuMask gpus) const override {
    char text[96];
    if (cpu_left_ < 0) {
      std::snprintf(text, sizeof(text), "%.2f GPU free after placement", GpuLeft(gpus) / 1000.0);
    } else {
      std::snprintf(text, sizeof(text), "%.2f GPU and %.1f CPU free after placement",
                    GpuLeft(gpus) / 1000.0, static_cast<double>(cpu_left_) / 1000.0);
    }
    return text;
  }

 private:
  int64_t GpuLeft(GpuMask gpus) const {
    int64_t left = gpu_free_;
    for (GpuMask rest = gpus; rest != 0; rest &= rest - 1) {
      const auto g = static_cast<size_t>(std::countr_zero(rest));
      left -=
          ctx_.pod.exclusive ? ctx_.free_milli[g] : std::min(ctx_.free_milli[g], ctx_.share_milli);
    }
    return std::max<int64_t>(0, left);
  }

  const PlacementContext& ctx_;
  double cpu_reference_;
  double gpu_reference_;
  int64_t gpu_free_ = 0;
  int64_t cpu_left_ = -1;
};

}  // namespace

PreparedScorePtr Packing::PrepareIn(const PlacementContext& ctx,
                                    std::pmr::memory_resource& memory) const {
  return MakePreparedScore<PreparedPacking>(memory, ctx, cpu_reference_milli_,
                                            gpu_reference_milli_);
}

}  // namespace gputopo::policies
