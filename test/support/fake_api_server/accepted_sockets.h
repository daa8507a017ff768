// Closing the fake API server's accepted connections on Stop(), which httplib does not do.
//
// Linux only (reads /proc/self/fd); thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_ACCEPTED_SOCKETS_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_ACCEPTED_SOCKETS_H_

namespace gputopo::testing::fake_api {

// Shuts down (SHUT_RDWR) this process's sockets whose local address is 127.0.0.1:`port` and that
// have a peer: the connections the server accepted. httplib keeps an idle keep-alive connection
// open until its keep-alive timeout even after Server::stop(), which would make Stop() wait that
// long. The listening socket (no peer) and client sockets (other local port) are left alone.
void ShutDownAcceptedConnections(int port);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_ACCEPTED_SOCKETS_H_
