#include "src/app/cli_checks.h"

#include <cmath>
#include <map>

namespace gputopo::app {

CLI::Validator ListenAddress() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const size_t colon = value.rfind(':');
        if (colon == std::string::npos) return "must be HOST:PORT, not " + value;
        const std::string port = value.substr(colon + 1);
        if (port.empty() || port.size() > 5 ||
            port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
          return "port must be 0..65535, not '" + port + "'";
        }
        return "";
      },
      "HOST:PORT");
}

CLI::Option* AddDurationFlag(CLI::App* cmd, const std::string& name, double& seconds,
                             const std::string& help) {
  const std::map<std::string, double> units = {
      {"ms", 0.001}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}};
  return cmd->add_option(name, seconds, help)
      ->transform(CLI::AsNumberWithUnit(units, CLI::AsNumberWithUnit::CASE_SENSITIVE, "UNIT"))
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
}

HostPort SplitListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  HostPort out;
  out.host = listen.substr(0, colon);
  out.port = std::stoi(listen.substr(colon + 1));
  if (out.host.empty()) out.host = "0.0.0.0";
  return out;
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000.0));
}

}  // namespace gputopo::app
