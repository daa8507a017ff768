// The demo: schedules the pending pods of the embedded demo cluster through gputopo's real HTTP
// endpoints, as kube-scheduler would (filter, then prioritize when more than one node is left,
// then bind to the best score), and tells where each pod went and why.
//
// Thread safety: not thread-safe; one replay at a time.
#ifndef GPUTOPO_SRC_APP_DEMO_H_
#define GPUTOPO_SRC_APP_DEMO_H_

#include <ostream>
#include <string>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::app {

// The embedded demo cluster (src/app/demo/cluster.json).
std::string DemoClusterJson();

struct DemoPlacement {
  std::string pod;    // namespace/name
  std::string group;  // spread group, from /debug
  std::string node;   // empty when it stayed pending
  std::vector<std::string> gpus;
  std::string placement;
  double score = 0;  // the weighted score of the chosen GPUs, 0..10
  std::string why;   // component scores, or why it stayed pending
};

// Replays `pods` (raw Pod JSON) against the server at host:port with candidate nodes
// `node_names`, writing a report to `out`.
Result<std::vector<DemoPlacement>> ReplayPods(const std::string& host, int port,
                                              const std::vector<std::string>& pods,
                                              const std::vector<std::string>& node_names,
                                              std::ostream& out);

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_DEMO_H_
