// Shutting down the accepted sockets of the fake API server's port, found in /proc/self/fd.
#include "test/support/fake_api_server/accepted_sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <vector>

#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

void ShutDownAcceptedConnections(int port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  std::vector<int> fds;
  while (const dirent* entry = readdir(dir)) {
    std::optional<uint64_t> fd = ParseUint(entry->d_name);
    if (fd && static_cast<int>(*fd) != dirfd(dir)) fds.push_back(static_cast<int>(*fd));
  }
  closedir(dir);
  for (int fd : fds) {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port) {
      continue;
    }
    sockaddr_in peer{};
    length = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    shutdown(fd, SHUT_RDWR);
  }
}

}  // namespace gputopo::testing::fake_api
