#include "policies/fragmentation/fragmentation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory_resource>
#include <optional>

namespace gputopo::policies {

namespace {

bool HostFits(int64_t cpu_free, int64_t memory_free, const WorkloadClass& cls) {
  return cpu_free >= cls.cpu_milli && memory_free >= cls.memory_bytes;
}

// Free CPU or memory less a request, staying unlimited where unlimited.
int64_t Less(int64_t free, int64_t request) {
  if (free == std::numeric_limits<int64_t>::max()) return free;
  return free - request;
}

int ClassMilli(const WorkloadClass& cls, int default_share) {
  return cls.milli > 0 ? cls.milli : default_share;
}

// Calls `take` with each locality domain of multi-GPU classes (FreeView::domains) in turn.
template <typename Take>
void ForEachDomain(const topology::TopologyShape& shape, Take take) {
  if (shape.has_nvlink()) {
    for (int i = 0; i < shape.island_count(); ++i) take(shape.island(i));
  } else if (!shape.numa_ids().empty()) {
    GpuMask unknown = shape.all_gpus();
    for (int id : shape.numa_ids()) {
      take(shape.numa_gpus(id));
      unknown &= ~shape.numa_gpus(id);
    }
    if (unknown != 0) take(unknown);
  } else {
    take(shape.all_gpus());
  }
}

}  // namespace

double FragmentMilli(const FreeView& view, const WorkloadClass& cls) {
  double total_free = 0.0;
  double unusable_free = 0.0;
  GpuMask usable = 0;
  for (int g = 0; g < view.gpu_count; ++g) {
    const int milli = view.free_milli[static_cast<size_t>(g)];
    total_free += milli;
    if (view.free_slots[static_cast<size_t>(g)] >= 1 &&
        milli >= ClassMilli(cls, view.default_share)) {
      usable |= topology::Bit(g);
    } else {
      unusable_free += milli;
    }
  }
  bool fits = view.node_free_slots >= cls.gpus && HostFits(view.cpu_free, view.memory_free, cls);
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
  return kMaxComponentScore / (1.0 + std::exp(delta_milli / (kWholeGpuMilli / 2.0)));
}

FreeView Fragmentation::Before(const PlacementContext& ctx) {
  FreeView view;
  view.gpu_count = ctx.node.gpu_count();
  view.free_slots = ctx.free_slots;
  view.free_milli = ctx.free_milli;
  view.node_free_slots = ctx.node_free_slots;
  view.default_share = kWholeGpuMilli / std::max(1, ctx.node.replicas());
  view.cpu_free = ctx.node.host().cpu_free_milli();
  view.memory_free = ctx.node.host().memory_free_bytes();
  ForEachDomain(ctx.shape, [&](GpuMask domain) { view.domains.push_back(domain); });
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
  view.cpu_free = Less(view.cpu_free, ctx.pod.cpu_milli);
  view.memory_free = Less(view.memory_free, ctx.pod.memory_bytes);
  return view;
}

namespace {

// The fragmentation of one node before the pod, kept per workload class, and what placing the
// pod on each GPU changes for each class, so that a candidate set is scored by adding up its
// GPUs' changes. Every free capacity is a whole number of milli, so the sums are exact in any
// order. The free capacity before the pod is ctx's (Fragmentation::Before's view); everything
// this allocates comes from `memory`.
class PreparedFragmentation final : public PreparedScore {
 public:
  PreparedFragmentation(const PlacementContext& ctx, const std::vector<WorkloadClass>& workload,
                        std::pmr::memory_resource& memory)
      : ctx_(ctx),
        workload_(workload),
        gpu_count_(ctx.node.gpu_count()),
        default_share_(kWholeGpuMilli / std::max(1, ctx.node.replicas())),
        cpu_free_(ctx.node.host().cpu_free_milli()),
        memory_free_(ctx.node.host().memory_free_bytes()),
        domains_(&memory),
        classes_(&memory),
        unusable_change_(&memory) {
    ForEachDomain(ctx.shape, [&](GpuMask domain) { domains_.push_back(domain); });
    const int gpus = gpu_count_;
    for (int g = 0; g < gpus; ++g) total_before_ += ctx.free_milli[Index(g)];
    // The GPUs after taking the pod, each on its own.
    std::array<int, 64> slots_after;  // [0, gpus) written below, and only those read
    std::array<int, 64> milli_after;
    for (int g = 0; g < gpus; ++g) {
      const size_t i = Index(g);
      if (ctx.pod.exclusive) {
        slots_after[i] = 0;
        milli_after[i] = 0;
      } else {
        slots_after[i] = std::max(0, ctx.free_slots[i] - 1);
        milli_after[i] = std::max(0, ctx.free_milli[i] - ctx.share_milli);
      }
      taken_[i] = ctx.free_milli[i] - milli_after[i];
    }
    double weights = 0.0;
    classes_.reserve(workload_.size());
    // Classes needing the same milli of a GPU see the same GPUs usable, before and after: each
    // distinct need is worked out once, into its own row of unusable_change_. (Looked for among
    // the rows so far only in a small mix, such as the built-in one: a learned mix of many
    // classes has mostly distinct needs, and looking would cost more than it saves.)
    const bool share_rows = workload_.size() <= kSharedNeedsUpTo;
    std::pmr::vector<int> needs(&memory);  // the milli of each row
    std::pmr::vector<ClassState> need_states(&memory);
    unusable_change_.resize(workload_.size() * static_cast<size_t>(gpus));
    for (size_t c = 0; c < workload_.size(); ++c) {
      const WorkloadClass& cls = workload_[c];
      const int need = ClassMilli(cls, default_share_);
      const auto found = share_rows ? std::find(needs.begin(), needs.end(), need) : needs.end();
      const auto row = static_cast<size_t>(found - needs.begin());
      if (found == needs.end()) {
        ClassState state;
        state.row = static_cast<uint32_t>(row);
        int* change = &unusable_change_[row * static_cast<size_t>(gpus)];
        for (int g = 0; g < gpus; ++g) {
          const size_t i = Index(g);
          const bool usable_before = ctx.free_slots[i] >= 1 && ctx.free_milli[i] >= need;
          const bool usable_after = slots_after[i] >= 1 && milli_after[i] >= need;
          if (usable_before) {
            state.usable |= topology::Bit(g);
          } else {
            state.unusable += ctx.free_milli[i];
          }
          if (usable_after) state.usable_after |= topology::Bit(g);
          change[i] =
              (usable_before ? 0 : -ctx.free_milli[i]) + (usable_after ? 0 : milli_after[i]);
        }
        needs.push_back(need);
        need_states.push_back(state);
      }
      ClassState state = need_states[row];
      state.host_fits_after = HostFits(Less(cpu_free_, ctx.pod.cpu_milli),
                                       Less(memory_free_, ctx.pod.memory_bytes), cls);
      classes_.push_back(state);
      // FragmentMilli(Before(ctx), cls), from what the loop above found: the same sums in the
      // same order, so the same double.
      const bool fits_before =
          HostFits(cpu_free_, memory_free_, cls) && Fits(state.usable, ctx.node_free_slots, cls);
      expected_before_ += cls.weight * (fits_before ? state.unusable : total_before_);
      weights += cls.weight;
    }
    weight_sum_ = weights;
    if (weights > 0.0) expected_before_ /= weights;
  }

  // Expected stranded capacity (milli) after placing the pod on `gpus`, minus before.
  double Delta(GpuMask gpus) const {
    if (weight_sum_ <= 0.0) return 0.0;
    int64_t taken = 0;
    for (GpuMask rest = gpus; rest != 0; rest &= rest - 1) {
      taken += taken_[Index(std::countr_zero(rest))];
    }
    const double total_after = total_before_ - static_cast<double>(taken);
    const int node_free_after = std::max(0, ctx_.node_free_slots - topology::Count(gpus));
    const auto stride = static_cast<size_t>(gpu_count_);
    double expected_after = 0.0;
    // The set's change of each row, summed once for the classes that share the row.
    std::array<int64_t, kRowsRemembered> row_change;
    uint64_t rows_summed = 0;  // bit r: row_change[r] holds row r's
    for (size_t c = 0; c < workload_.size(); ++c) {
      const WorkloadClass& cls = workload_[c];
      const ClassState& state = classes_[c];
      const GpuMask usable = (state.usable & ~gpus) | (state.usable_after & gpus);
      const bool fits = state.host_fits_after && Fits(usable, node_free_after, cls);
      if (!fits) {
        expected_after += cls.weight * total_after;
        continue;
      }
      const bool remembered = state.row < kRowsRemembered;
      int64_t unusable_change = 0;
      if (remembered && (rows_summed >> state.row & 1) != 0) {
        unusable_change = row_change[state.row];
      } else {
        const int* change = &unusable_change_[state.row * stride];
        for (GpuMask rest = gpus; rest != 0; rest &= rest - 1) {
          unusable_change += change[std::countr_zero(rest)];
        }
        if (remembered) {
          row_change[state.row] = unusable_change;
          rows_summed |= uint64_t{1} << state.row;
        }
      }
      expected_after += cls.weight * (state.unusable + static_cast<double>(unusable_change));
    }
    return expected_after / weight_sum_ - expected_before_;
  }

  double Score(GpuMask gpus) const override { return FragmentationScore(Delta(gpus)); }
  // One bound for every set (the score falls as Delta grows): DeltaLowerBound's score, worked
  // out on the first call (an evaluation that bounds no set does not pay for it).
  double Bound(GpuMask /*gpus*/) const override {
    if (!bound_) bound_ = FragmentationScore(DeltaLowerBound());
    return *bound_;
  }

  std::string Explain(GpuMask gpus) const override {
    const double delta = Delta(gpus);
    char text[96];
    std::snprintf(text, sizeof(text), "expected stranded capacity %+.2f GPU (%.2f -> %.2f)",
                  delta / kWholeGpuMilli, expected_before_ / kWholeGpuMilli,
                  (expected_before_ + delta) / kWholeGpuMilli);
    return text;
  }

 private:
  struct ClassState {
    GpuMask usable = 0;           // GPUs a pod of the class could use
    GpuMask usable_after = 0;     // GPUs it could still use after the pod took them
    double unusable = 0.0;        // free milli on the others
    bool host_fits_after = true;  // the node keeps the class's CPU and memory free after the pod
    uint32_t row = 0;             // of unusable_change_: the class's need (milli of a GPU)
  };
  // At most Delta(gpus) for every set of ctx.pod.gpus GPUs: each class's stranded capacity
  // after the pod at least the smaller of what it is when the class still fits (the set's
  // changes at least the pod.gpus smallest of its row) and when it does not (the set takes at
  // most the pod.gpus largest shares). Summed as Delta sums, term by term no larger, so the
  // rounded sum is no larger either.
  double DeltaLowerBound() const {
    if (weight_sum_ <= 0.0) return 0.0;
    const int n = std::clamp(ctx_.pod.gpus, 0, gpu_count_);
    std::array<int, 64> values;
    auto sum_of_first_n = [&](auto order) {
      std::partial_sort(values.begin(), values.begin() + n, values.begin() + gpu_count_, order);
      int64_t sum = 0;
      for (int i = 0; i < n; ++i) sum += values[Index(i)];
      return sum;
    };
    std::copy_n(taken_.begin(), gpu_count_, values.begin());
    const double total_after_least =
        total_before_ - static_cast<double>(sum_of_first_n(std::greater<>()));
    // The smallest sum of n changes of each row, found once per row (rows are numbered in the
    // order their first class comes).
    std::array<int64_t, kMaxRowsBounded> least_change{};
    size_t rows_done = 0;
    double expected_after = 0.0;
    for (size_t c = 0; c < workload_.size(); ++c) {
      const ClassState& state = classes_[c];
      double least = total_after_least;
      if (state.host_fits_after) {
        if (state.row >= kMaxRowsBounded) return -std::numeric_limits<double>::infinity();
        for (; rows_done <= state.row; ++rows_done) {
          std::copy_n(&unusable_change_[rows_done * static_cast<size_t>(gpu_count_)], gpu_count_,
                      values.begin());
          least_change[rows_done] = sum_of_first_n(std::less<>());
        }
        least = std::min(least, state.unusable + static_cast<double>(least_change[state.row]));
      }
      expected_after += workload_[c].weight * least;
    }
    return expected_after / weight_sum_ - expected_before_;
  }
  // A mix with more distinct needs than this is not bounded (every set is scored).
  static constexpr size_t kMaxRowsBounded = 16;

  static constexpr size_t kSharedNeedsUpTo = 8;    // classes
  static constexpr uint32_t kRowsRemembered = 64;  // by Delta, for the classes sharing a row
  static size_t Index(int g) { return static_cast<size_t>(g); }
  bool Fits(GpuMask usable, int node_free_slots, const WorkloadClass& cls) const {
    if (node_free_slots < cls.gpus) return false;
    if (cls.gpus <= 1) return usable != 0;
    for (GpuMask domain : domains_) {
      if (topology::Count(usable & domain) >= cls.gpus) return true;
    }
    return false;
  }

  const PlacementContext& ctx_;
  const std::vector<WorkloadClass>& workload_;
  const int gpu_count_;
  const int default_share_;  // the share of a class with milli 0: 1000 / replicas
  const int64_t cpu_free_;   // besides the GPUs; unlimited where unknown
  const int64_t memory_free_;
  std::pmr::vector<GpuMask> domains_;  // locality domains for multi-GPU classes
  double total_before_ = 0.0;
  std::array<int, 64> taken_{};  // milli the pod takes of each GPU
  std::pmr::vector<ClassState> classes_;
  // [row * gpu_count + gpu]: how the unusable milli of the classes of one need (ClassState::row)
  // changes when the pod takes the GPU.
  std::pmr::vector<int> unusable_change_;
  double expected_before_ = 0.0;
  double weight_sum_ = 0.0;
  mutable std::optional<double> bound_;  // Bound()'s; the scorer belongs to one thread
};

}  // namespace

const std::vector<WorkloadClass>& Fragmentation::WorkloadFor(const PlacementContext& ctx) const {
  const std::shared_ptr<const ObservedWorkload>& observed = ctx.node.observed_workload();
  if (pinned_ || observed == nullptr || observed->classes.empty()) return workload_;
  return observed->classes;
}

PreparedScorePtr Fragmentation::PrepareIn(const PlacementContext& ctx,
                                          std::pmr::memory_resource& memory) const {
  return MakePreparedScore<PreparedFragmentation>(memory, ctx, WorkloadFor(ctx), memory);
}

bool Fragmentation::ReadsHostResources() const {
  if (!pinned_) return true;  // a learned mix may ask for CPU and memory
  return std::any_of(workload_.begin(), workload_.end(), [](const WorkloadClass& cls) {
    return cls.cpu_milli > 0 || cls.memory_bytes > 0;
  });
}

double Fragmentation::Score(const PlacementContext& ctx, GpuMask gpus) const {
  return Prepare(ctx)->Score(gpus);
}

std::vector<WorkloadClass> Fragmentation::DefaultWorkload() {
  return {{1, 250, 0.15},  {1, 500, 0.15},  {1, 1000, 0.35},
          {2, 1000, 0.15}, {4, 1000, 0.10}, {8, 1000, 0.10}};
}

}  // namespace gputopo::policies
