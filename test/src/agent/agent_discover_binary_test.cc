// `gputopo agent discover` run as a program, with the fake NVML as its library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/codec/topology_document.h"
#include "test/src/agent/agent_test_support.h"
#include "test/support/fixtures.h"

namespace gputopo::agent {
namespace {

using testing::ExpectMatchesProfile;
using testing::FakeSysfs;
using ::testing::HasSubstr;
using testing::Profile;
using ::testing::StartsWith;
using testing::UseMachine;

struct Ran {
  int exit_code = -1;
  std::string output;
};

// Runs `command` through the shell, returning its exit status and standard output.
Ran RunShell(const std::string& command) {
  Ran ran;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return ran;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) ran.output.append(buffer, got);
  const int status = pclose(pipe);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

TEST(AgentDiscoverBinaryTest, PrintsTheDocumentOfTheFakeMachine) {
  UseMachine("dgx1-v100");  // the environment the child inherits
  FakeSysfs sysfs("dgx1-v100");
  const Ran ran =
      RunShell(std::string(GPUTOPO_BINARY) + " agent discover --nvml-library " + GPUTOPO_FAKE_NVML +
               " --sysfs-root " + sysfs.root() + " --replicas 2 2>/dev/null");
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  Result<MachineTopology> doc = codec::ParseTopologyDocument(ran.output);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString() << "\n" << ran.output;
  ExpectMatchesProfile(*doc, Profile("dgx1-v100"));
  EXPECT_EQ(doc->replicas_per_gpu(), 2);
  EXPECT_EQ(doc->gpu(0).pci_bus_id, "00000000:06:00.0");
  EXPECT_NE(ran.output.find('\n'), ran.output.size() - 1) << "pretty JSON, several lines";
}

TEST(AgentDiscoverBinaryTest, NeitherNvmlNorNvidiaSmiExitsOneWithOneLine) {
  const Ran ran = RunShell(std::string(GPUTOPO_BINARY) +
                           " agent discover --nvml-library /nonexistent/libnvidia-ml.so.1"
                           " --nvidia-smi /nonexistent/nvidia-smi 2>&1 >/dev/null");
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_THAT(ran.output, StartsWith("gputopo: agent discover: no GPU found: NVML: dlopen "
                                     "/nonexistent/libnvidia-ml.so.1: "));
  EXPECT_THAT(ran.output,
              HasSubstr("; nvidia-smi: /nonexistent/nvidia-smi: No such file or directory\n"));
  EXPECT_EQ(ran.output.find('\n'), ran.output.size() - 1) << ran.output;
}

TEST(AgentDiscoverBinaryTest, FallsBackToNvidiaSmi) {
  // NVML's driver is not loaded; a stand-in nvidia-smi prints the L40S capture.
  UseMachine("driver-not-loaded");
  FakeSysfs sysfs("pcie-4gpu-2numa");
  const std::filesystem::path script = std::filesystem::path(sysfs.root()) / "nvidia-smi";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "case \"$1\" in\n"
                        << "  --query-gpu=index,uuid,name,memory.total,pci.bus_id)\n"
                        << "    echo 'index, uuid, name, memory.total [MiB], pci.bus_id'\n"
                        << "    for i in 0 1 2 3; do\n"
                        << "      echo \"$i, GPU-$i, NVIDIA L40S, 46068 MiB, 00000000:0$i:00.0\"\n"
                        << "    done ;;\n"
                        << "  topo) cat '"
                        << (gputopo::testing::SharedDir() /
                            "topology/nvidia-smi/pcie_4x_L40S_2numa_NODE_SYS.txt")
                               .string()
                        << "' ;;\n"
                        << "  *) exit 2 ;;\n"
                        << "esac\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const Ran ran = RunShell(std::string(GPUTOPO_BINARY) + " agent discover --nvml-library " +
                           GPUTOPO_FAKE_NVML + " --nvidia-smi " + script.string() + " 2>/dev/null");
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  Result<MachineTopology> doc = codec::ParseTopologyDocument(ran.output);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString() << "\n" << ran.output;
  ExpectMatchesProfile(*doc, Profile("pcie-4gpu-2numa"));
  EXPECT_EQ(doc->gpu(3).uuid, "GPU-3");
  EXPECT_THAT(ran.output, HasSubstr("NVML not used (nvmlInit_v2: Driver Not Loaded)"));
}

TEST(AgentDiscoverBinaryTest, NoNvidiaSmiOnPath) {
  const Ran ran = RunShell("PATH=/nonexistent " + std::string(GPUTOPO_BINARY) +
                           " agent discover --nvml-library /nonexistent/libnvidia-ml.so.1"
                           " 2>&1 >/dev/null");
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_THAT(ran.output, StartsWith("gputopo: agent discover: no GPU found: NVML: dlopen "));
  EXPECT_THAT(ran.output, HasSubstr("; nvidia-smi: not found on PATH\n"));
}

TEST(AgentDiscoverBinaryTest, AgentNeedsASubcommand) {
  const Ran ran = RunShell(std::string(GPUTOPO_BINARY) + " agent 2>&1");
  EXPECT_NE(ran.exit_code, 0);
}

}  // namespace
}  // namespace gputopo::agent
