// For the benchmarks that run the real binary as a child process: a port for it to listen on,
// and its memory as the kernel reports it.
#ifndef GPUTOPO_BENCH_CHILD_PROCESS_H_
#define GPUTOPO_BENCH_CHILD_PROCESS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace gputopo::bench {

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM); -1 when unreadable.
inline long ProcStatusKib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// A loopback port nothing listens on now (the child binds it right after); -1 on failure.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace gputopo::bench

#endif  // GPUTOPO_BENCH_CHILD_PROCESS_H_
