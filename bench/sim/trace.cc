#include "bench/sim/trace.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace gputopo::bench {
namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

template <typename T>
bool ParseNumber(const std::string& text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Result<std::vector<std::vector<std::string>>> ReadRows(const std::string& path, size_t min_fields) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> fields = SplitCsv(line);
    if (fields.size() < min_fields) return InvalidArgument(path + ": short row: " + line);
    rows.push_back(std::move(fields));
  }
  return rows;
}

}  // namespace

Result<std::vector<TraceNode>> LoadAlibabaNodes(const std::string& path) {
  auto rows = ReadRows(path, 5);
  if (!rows.ok()) return rows.status();
  std::vector<TraceNode> nodes;
  for (const auto& f : *rows) {
    TraceNode n;
    n.name = f[0];
    if (!ParseNumber(f[1], n.cpu_milli) || !ParseNumber(f[2], n.memory_mib) ||
        !ParseNumber(f[3], n.gpus)) {
      return InvalidArgument(path + ": bad node row " + f[0]);
    }
    n.model = f[4];
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<TracePod>> LoadAlibabaPods(const std::string& path) {
  auto rows = ReadRows(path, 5);
  if (!rows.ok()) return rows.status();
  std::vector<TracePod> pods;
  for (const auto& f : *rows) {
    TracePod p;
    p.name = f[0];
    if (!ParseNumber(f[1], p.cpu_milli) || !ParseNumber(f[2], p.memory_mib) ||
        !ParseNumber(f[3], p.gpus) || (!f[4].empty() && !ParseNumber(f[4], p.gpu_milli))) {
      return InvalidArgument(path + ": bad pod row " + f[0]);
    }
    if (p.gpus > 1) p.gpu_milli = 1000;  // multi-GPU pods take whole GPUs
    if (f.size() > 5 && !f[5].empty()) {
      std::istringstream spec(f[5]);
      std::string model;
      while (std::getline(spec, model, '|')) p.gpu_spec.push_back(model);
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

Result<std::vector<PhillyJob>> LoadPhillyJobs(const std::string& path) {
  auto rows = ReadRows(path, 6);
  if (!rows.ok()) return rows.status();
  std::vector<PhillyJob> jobs;
  for (const auto& f : *rows) {
    PhillyJob job;
    if (!ParseNumber(f[5], job.duration_s)) return InvalidArgument(path + ": bad duration");
    std::istringstream shape(f[3]);
    std::string part;
    while (std::getline(shape, part, '+')) {
      int gpus = 0;
      if (!ParseNumber(part, gpus) || gpus < 1)
        return InvalidArgument(path + ": bad shape " + f[3]);
      job.pods.push_back(gpus);
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace gputopo::bench
