#include "bench/keep_alive_connection.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace gputopo::bench {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// A reply body larger than any the benchmarks ask for (a prioritize reply of 5000 nodes is about
// 200 KiB); Beast's default for responses is 8 MiB.
constexpr std::uint64_t kBodyLimit = std::uint64_t{256} << 20;
// Beast reads at most what the buffer's free capacity holds (at least 512 bytes, at most 64 KiB
// a read). The parser takes the body out of the buffer as it arrives, so the buffer never grows:
// without room reserved, a 40 KiB reply took 83 reads. Go's transport reads into a buffer that
// doubles as the reply grows.
constexpr std::size_t kReadCapacity = std::size_t{64} << 10;

}  // namespace

struct KeepAliveConnection::Impl {
  explicit Impl(int port)
      : endpoint(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(port)) {}
  asio::io_context io;
  tcp::endpoint endpoint;
  tcp::socket socket{io};
  boost::beast::flat_buffer buffer;  // bytes read past the last reply stay here
};

KeepAliveConnection::KeepAliveConnection(int port) : impl_(std::make_unique<Impl>(port)) {}

KeepAliveConnection::~KeepAliveConnection() = default;

std::optional<HttpReply> KeepAliveConnection::Post(std::string_view target, std::string_view body) {
  return Exchange(true, target, body);
}

std::optional<HttpReply> KeepAliveConnection::Get(std::string_view target) {
  return Exchange(false, target, {});
}

std::optional<HttpReply> KeepAliveConnection::Exchange(bool post, std::string_view target,
                                                       std::string_view body) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    boost::system::error_code ec;
    Impl& c = *impl_;
    if (!c.socket.is_open()) {
      c.buffer.clear();
      c.buffer.reserve(kReadCapacity);
      c.socket.connect(c.endpoint, ec);
      if (ec) {
        c.socket.close(ec);
        continue;
      }
      c.socket.set_option(tcp::no_delay(true), ec);
    }
    http::request<http::span_body<const char>> request(
        post ? http::verb::post : http::verb::get,
        boost::beast::string_view(target.data(), target.size()), 11);
    request.set(http::field::host, "127.0.0.1");
    if (post) request.set(http::field::content_type, "application/json");
    request.body() = boost::beast::span<const char>(body.data(), body.size());
    request.prepare_payload();
    http::write(c.socket, request, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    if (!ec) http::read(c.socket, c.buffer, parser, ec);
    if (ec) {
      c.socket.close(ec);
      continue;
    }
    http::response<http::string_body>& response = parser.get();
    HttpReply reply;
    reply.status = static_cast<int>(response.result_int());
    if (auto timing = response.find("Server-Timing"); timing != response.end()) {
      reply.server_timing = std::string(timing->value());
    }
    if (!response.keep_alive()) c.socket.close(ec);
    reply.body = std::move(response.body());
    return reply;
  }
  return std::nullopt;
}

}  // namespace gputopo::bench
