#include "topology/shape_symmetry.h"

#include <numeric>

#include "topology/topology_shape.h"

namespace gputopo::topology {
namespace {

// Backtracking over the relabelings: GPU `next` gets an image consistent with every GPU before
// it (links, NUMA partition, twin-class order). Steps are bounded so that a large, very
// regular machine cannot stall Analyze; what was found by then is kept.
class RelabelingSearch {
 public:
  RelabelingSearch(const TopologyShape& shape, const std::vector<int>& twin_class,
                   std::vector<std::vector<uint8_t>>& out)
      : shape_(shape),
        n_(shape.gpu_count()),
        twin_class_(twin_class),
        image_(static_cast<size_t>(n_)),
        used_(static_cast<size_t>(n_), false),
        out_(out) {}

  void Run() { Extend(0); }

 private:
  static constexpr int kMaxSteps = 200000;

  bool Consistent(int g, int to) const {
    const int numa = shape_.numa_of(g);
    if ((numa < 0) != (shape_.numa_of(to) < 0)) return false;
    for (int a = 0; a < g; ++a) {
      const int image = image_[static_cast<size_t>(a)];
      if (!(shape_.link(a, g) == shape_.link(image, to))) return false;
      const bool same_numa = numa >= 0 && shape_.numa_of(a) == numa;
      const bool same_numa_after =
          shape_.numa_of(to) >= 0 && shape_.numa_of(image) == shape_.numa_of(to);
      if (same_numa != same_numa_after) return false;
      // Inside a twin class the order is kept (the permutations inside classes do the rest).
      if (twin_class_[static_cast<size_t>(a)] == twin_class_[static_cast<size_t>(g)] &&
          image > to) {
        return false;
      }
    }
    return true;
  }

  void Extend(int g) {
    if (out_.size() >= ShapeSymmetry::kMaxRelabelings || ++steps_ > kMaxSteps) return;
    if (g == n_) {
      out_.emplace_back(image_.begin(), image_.end());
      return;
    }
    for (int to = 0; to < n_; ++to) {
      if (used_[static_cast<size_t>(to)] || !Consistent(g, to)) continue;
      used_[static_cast<size_t>(to)] = true;
      image_[static_cast<size_t>(g)] = to;
      Extend(g + 1);
      used_[static_cast<size_t>(to)] = false;
    }
  }

  const TopologyShape& shape_;
  int n_;
  const std::vector<int>& twin_class_;
  std::vector<int> image_;
  std::vector<bool> used_;
  std::vector<std::vector<uint8_t>>& out_;
  int steps_ = 0;
};

}  // namespace

ShapeSymmetry FindShapeSymmetry(const TopologyShape& shape) {
  const int n = shape.gpu_count();
  ShapeSymmetry symmetry;
  // Twins: the same NUMA node and the same link to every third GPU. The relation is an
  // equivalence (the links are symmetric), so each GPU joins the class of its lowest twin.
  auto twins = [&](int i, int j) {
    if (shape.numa_of(i) != shape.numa_of(j)) return false;
    for (int k = 0; k < n; ++k) {
      if (k != i && k != j && !(shape.link(i, k) == shape.link(j, k))) return false;
    }
    return true;
  };
  symmetry.twin_class.assign(static_cast<size_t>(n), -1);
  for (int g = 0; g < n; ++g) {
    for (int earlier = 0; earlier < g; ++earlier) {
      if (twins(earlier, g)) {
        symmetry.twin_class[static_cast<size_t>(g)] =
            symmetry.twin_class[static_cast<size_t>(earlier)];
        break;
      }
    }
    if (symmetry.twin_class[static_cast<size_t>(g)] < 0) {
      symmetry.twin_class[static_cast<size_t>(g)] = symmetry.twin_classes++;
    }
  }
  // The identity first: the search visits images in increasing order, so it finds it first.
  RelabelingSearch(shape, symmetry.twin_class, symmetry.relabelings).Run();
  if (symmetry.relabelings.empty()) {  // cannot happen (the identity is consistent); be safe
    std::vector<uint8_t> identity(static_cast<size_t>(n));
    std::iota(identity.begin(), identity.end(), uint8_t{0});
    symmetry.relabelings.push_back(std::move(identity));
  }
  return symmetry;
}

}  // namespace gputopo::topology
