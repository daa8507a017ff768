// Loading the workload traces in ../shared/data (CSV).
#ifndef GPUTOPO_BENCH_SIM_TRACE_H_
#define GPUTOPO_BENCH_SIM_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::bench {

// openb_node_list_gpu_node.csv: sn,cpu_milli,memory_mib,gpu,model
struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;
};

// openb_pod_list_*.csv: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]
struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;                       // num_gpu
  int gpu_milli = 0;                  // share of each GPU; 1000 for whole GPUs
  std::vector<std::string> gpu_spec;  // allowed GPU models; empty: any
};

Result<std::vector<TraceNode>> LoadAlibabaNodes(const std::string& path);
Result<std::vector<TracePod>> LoadAlibabaPods(const std::string& path);

// philly_jobs_rfold_derived.csv: a job's per-node GPU split ("shape", e.g. "4+4": two pods of
// 4 GPUs) and its duration (seconds).
struct PhillyJob {
  std::vector<int> pods;  // GPUs of each pod
  double duration_s = 0;
};
Result<std::vector<PhillyJob>> LoadPhillyJobs(const std::string& path);

}  // namespace gputopo::bench

#endif  // GPUTOPO_BENCH_SIM_TRACE_H_
