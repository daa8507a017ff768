#include "topology/shape_interner.h"

#include "topology/link_type.h"

namespace gputopo::topology {

std::string ShapeFingerprint(const MachineTopology& machine) {
  const int n = machine.gpu_count();
  std::string fp = "gpus=" + std::to_string(n) + ";numa=";
  for (int g = 0; g < n; ++g) fp += std::to_string(machine.gpu(g).numa_node) + ",";
  fp += ";links=";
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) fp += FormatLink(machine.link(a, b)) + ",";
  }
  return fp;
}

Result<std::shared_ptr<const TopologyShape>> ShapeInterner::Intern(const MachineTopology& machine) {
  if (machine.gpu_count() > kMaxGpusPerNode || machine.gpu_count() < 1) {
    return TopologyShape::Analyze(machine).status();  // the validation message
  }
  const std::string key = ShapeFingerprint(machine);
  {
    MutexLock lock(mutex_);
    auto it = shapes_.find(key);
    if (it != shapes_.end()) {
      if (auto shape = it->second.lock()) return shape;
    }
  }
  // Analyse outside the lock: it can take milliseconds for large machines.
  Result<std::shared_ptr<const TopologyShape>> analysed = TopologyShape::Analyze(machine);
  if (!analysed.ok()) return analysed;
  MutexLock lock(mutex_);
  auto& slot = shapes_[key];
  if (auto existing = slot.lock()) return existing;  // another thread won the race
  slot = *analysed;
  // Drop entries whose shapes died, so the map does not grow without bound.
  if (shapes_.size() > 64 && shapes_.size() % 64 == 0) {
    std::erase_if(shapes_, [](const auto& entry) { return entry.second.expired(); });
  }
  return analysed;
}

size_t ShapeInterner::size() const {
  MutexLock lock(mutex_);
  size_t alive = 0;
  for (const auto& [key, weak] : shapes_) alive += weak.expired() ? 0 : 1;
  return alive;
}

}  // namespace gputopo::topology
