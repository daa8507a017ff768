#include "src/agent/topology_discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/agent/nvml_library.h"
#include "test/src/agent/agent_test_support.h"
#include "test/support/fixtures.h"

namespace gputopo::agent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using testing::ExpectMatchesProfile;
using testing::FakeSysfs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Profile;
using ::testing::StartsWith;
using testing::UseMachine;

constexpr Link kNv(int n) { return Link{LinkType::kNvLink, n}; }
constexpr Link kUnknownLink{};

// Discovery through real dlopen of a fake NVML build serving `machine`.
Result<Discovery> DiscoverFake(const std::string& machine,
                               const char* library = GPUTOPO_FAKE_NVML) {
  UseMachine(machine);
  FakeSysfs sysfs(machine);
  Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(library);
  if (!nvml.ok()) return nvml.status();
  if (Status s = (*nvml)->Init(); !s.ok()) return s;
  return DiscoverWithNvml(**nvml, sysfs.root());
}

TEST(NvmlDiscoveryTest, Dgx1V100MatchesTheProfile) {
  Result<Discovery> got = DiscoverFake("dgx1-v100");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->source, "nvml");
  ExpectMatchesProfile(got->machine, Profile("dgx1-v100"));
  // NV1 and NV2 from the remote bus IDs of the six links of each GPU.
  EXPECT_EQ(got->machine.link(0, 1), kNv(1));
  EXPECT_EQ(got->machine.link(0, 3), kNv(2));
  EXPECT_EQ(got->machine.gpu(0).uuid, "GPU-d1-0000-4000-8000-000000000000");
  EXPECT_EQ(got->machine.gpu(7).pci_bus_id, "00000000:8A:00.0");
  EXPECT_TRUE(got->machine.gpu(7).healthy);
  EXPECT_THAT(got->notes, IsEmpty());
}

TEST(NvmlDiscoveryTest, HgxH100OnNvSwitchMatchesTheProfile) {
  // Every link ends at a switch: each pair gets min(18, 18) switch links, not the 18 * 4 or 0 a
  // count by remote bus ID gives.
  Result<Discovery> got = DiscoverFake("hgx-h100");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectMatchesProfile(got->machine, Profile("hgx-h100"));
  EXPECT_EQ(got->machine.link(0, 7), kNv(18));
  EXPECT_THAT(got->notes, IsEmpty());  // MIG disabled says nothing
}

TEST(NvmlDiscoveryTest, Dgx2V100OnNvSwitchMatchesTheProfile) {
  // 16 GPUs on two baseboards, 6 switch links each: NV6 between every pair, across boards too.
  Result<Discovery> got = DiscoverFake("dgx2-v100");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectMatchesProfile(got->machine, Profile("dgx2-v100"));
  EXPECT_EQ(got->machine.link(0, 15), kNv(6));
  EXPECT_EQ(got->machine.gpu(15).uuid, "GPU-d2-0000-4000-8000-000000000015");
  EXPECT_THAT(got->notes, IsEmpty());
}

TEST(NvmlDiscoveryTest, NvSwitchPairsTakeTheSmallerSwitchLinkCount) {
  Result<Discovery> got = DiscoverFake("hgx-h100-degraded");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (int b = 0; b < 8; ++b) {
    if (b == 3) continue;
    EXPECT_EQ(got->machine.link(3, b), kNv(16)) << "pair 3-" << b;
  }
  EXPECT_EQ(got->machine.link(0, 1), kNv(18));
  EXPECT_EQ(got->machine.link(4, 7), kNv(18));
}

TEST(NvmlDiscoveryTest, PcieTwoNumaMatchesTheProfile) {
  Result<Discovery> got = DiscoverFake("pcie-4gpu-2numa");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectMatchesProfile(got->machine, Profile("pcie-4gpu-2numa"));
  EXPECT_THAT(got->notes,
              ElementsAre("nvmlDeviceGetNvLinkState not supported on GPUs 0, 1, 2, 3: no NVLink, "
                          "links from PCIe"));
}

TEST(NvmlDiscoveryTest, FailingGpusAreListedUnhealthyWithTheirLinksUnknown) {
  Result<Discovery> got = DiscoverFake("pcie-4gpu-lost");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const MachineTopology& m = got->machine;
  ASSERT_EQ(m.gpu_count(), 4);
  EXPECT_TRUE(m.gpu(0).healthy);
  EXPECT_TRUE(m.gpu(1).healthy);
  EXPECT_FALSE(m.gpu(2).healthy);
  EXPECT_EQ(m.gpu(2).health_reason, "nvmlDeviceGetUUID: GPU is lost");
  EXPECT_FALSE(m.gpu(3).healthy);
  EXPECT_EQ(m.gpu(3).health_reason, "nvmlDeviceGetHandleByIndex_v2: Unknown Error");
  EXPECT_EQ(m.gpu(2).uuid, "");
  EXPECT_EQ(m.gpu(2).index, 2);
  EXPECT_EQ(m.link(0, 1), (Link{LinkType::kNode, 0}));
  for (int a = 0; a < 4; ++a) {
    EXPECT_EQ(m.link(a, 2), kUnknownLink) << a;
    EXPECT_EQ(m.link(a, 3), kUnknownLink) << a;
  }
  EXPECT_THAT(got->notes,
              Contains("GPU 2 is unhealthy (nvmlDeviceGetUUID: GPU is lost): its links are "
                       "unknown"));
  // And the document says so.
  const std::string doc = codec::FormatTopologyDocument(m);
  Result<MachineTopology> back = codec::ParseTopologyDocument(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->gpu(2).healthy);
  EXPECT_EQ(back->gpu(3).health_reason, "nvmlDeviceGetHandleByIndex_v2: Unknown Error");
}

TEST(NvmlDiscoveryTest, MigEnabledIsNotedAndTheGpuStillListed) {
  Result<Discovery> got = DiscoverFake("a100-mig");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->machine.gpu_count(), 2);
  EXPECT_EQ(got->machine.link(0, 1), kNv(12));
  EXPECT_TRUE(got->machine.gpu(1).healthy);
  EXPECT_EQ(got->machine.gpu(1).model, "NVIDIA A100-SXM4-80GB");
  EXPECT_THAT(got->notes, ElementsAre("GPU 1 has MIG enabled: MIG devices are not handled, the "
                                      "whole GPU is listed"));
}

TEST(NvmlDiscoveryTest, MissingEntryPointsDegradeWithNotes) {
  // The library without the NVLink entry points, nvmlDeviceGetPciInfo_v3, nvmlDeviceGetMigMode and
  // nvmlErrorString: the DGX-1 then shows its PCIe paths, no bus IDs and no NUMA nodes.
  Result<Discovery> got = DiscoverFake("dgx1-v100", GPUTOPO_FAKE_NVML_MINIMAL);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const MachineTopology& m = got->machine;
  ASSERT_EQ(m.gpu_count(), 8);
  EXPECT_EQ(m.gpu(0).uuid, "GPU-d1-0000-4000-8000-000000000000");
  EXPECT_EQ(m.gpu(0).model, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(m.gpu(0).pci_bus_id, "");
  EXPECT_EQ(m.gpu(0).numa_node, -1);
  EXPECT_EQ(m.link(0, 1), (Link{LinkType::kPix, 0}));
  EXPECT_EQ(m.link(0, 2), (Link{LinkType::kPhb, 0}));
  EXPECT_EQ(m.link(0, 4), (Link{LinkType::kSys, 0}));
  for (int a = 0; a < 8; ++a) {
    EXPECT_TRUE(m.gpu(a).healthy);
    for (int b = a + 1; b < 8; ++b) EXPECT_FALSE(m.link(a, b).IsNvLink()) << a << "-" << b;
  }
  EXPECT_THAT(got->notes,
              ElementsAre("nvmlDeviceGetPciInfo_v3 missing: no PCI bus IDs, so no NUMA nodes and "
                          "no NVLinks between GPUs",
                          "nvmlDeviceGetNvLinkState missing: links from PCIe only"));
}

TEST(NvmlDiscoveryTest, NoSysfsLeavesNumaUnknownWithANote) {
  UseMachine("a100-mig");
  Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(GPUTOPO_FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  ASSERT_TRUE((*nvml)->Init().ok());
  Result<Discovery> got = DiscoverWithNvml(**nvml, "/nonexistent");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->machine.gpu(0).numa_node, -1);
  EXPECT_EQ(got->machine.gpu(0).pci_bus_id, "00000000:07:00.0");
  EXPECT_THAT(got->notes,
              Contains("no numa_node in /nonexistent/bus/pci/devices on GPUs 0, 1: NUMA node "
                       "unknown"));
}

TEST(NvmlDiscoveryTest, InitFailureIsAnError) {
  UseMachine("driver-not-loaded");
  Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(GPUTOPO_FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  const Status s = (*nvml)->Init();
  EXPECT_EQ(s.message(), "nvmlInit_v2: Driver Not Loaded");
}

TEST(NvmlLibraryTest, OpenFailsWithDlerror) {
  Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_THAT(nvml.status().message(), StartsWith("dlopen /nonexistent/libnvidia-ml.so.1: "));
  EXPECT_THAT(nvml.status().message(), HasSubstr("No such file"));
}

TEST(NvmlLibraryTest, ReturnNamesWithoutNvmlErrorString) {
  EXPECT_EQ(NvmlReturnName(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_EQ(NvmlReturnName(NVML_ERROR_NOT_SUPPORTED), "not supported");
  EXPECT_EQ(NvmlReturnName(static_cast<nvmlReturn_t>(12345)), "NVML error 12345");
}

// ---------------------------------------------------------------------------------------------
// The nvidia-smi fallback.

// Serves outputs by command line ("nvidia-smi topo -m"); anything else is "not found on PATH".
class FakeRunner : public CommandRunner {
 public:
  void Serve(const std::string& command, std::string output) { outputs_[command] = output; }
  Result<std::string> Run(const std::vector<std::string>& argv) override {
    std::string command;
    for (const std::string& arg : argv) command += (command.empty() ? "" : " ") + arg;
    calls_.push_back(command);
    auto it = outputs_.find(command);
    if (it == outputs_.end()) return NotFound("not found on PATH");
    return it->second;
  }
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, std::string> outputs_;
  std::vector<std::string> calls_;
};

constexpr char kQuery[] =
    "nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv";

std::string Capture(const std::string& name) {
  return gputopo::testing::ReadFile(gputopo::testing::SharedDir() / "topology/nvidia-smi" / name);
}

TEST(NvidiaSmiFallbackTest, UsedWhenNvmlCannotInitialise) {
  UseMachine("driver-not-loaded");
  FakeRunner runner;
  runner.Serve(kQuery,
               "index, uuid, name, memory.total [MiB], pci.bus_id\n"
               "0, GPU-aaaa, NVIDIA L40S, 46068 MiB, 00000000:17:00.0\n"
               "1, GPU-bbbb, NVIDIA L40S, 46068 MiB, 00000000:31:00.0\n"
               "2, GPU-cccc, NVIDIA L40S, 46068 MiB, 00000000:B1:00.0\n"
               "3, GPU-dddd, NVIDIA L40S, 46068 MiB, 00000000:CA:00.0\n");
  runner.Serve("nvidia-smi topo -m", Capture("pcie_4x_L40S_2numa_NODE_SYS.txt"));
  DiscoveryOptions options;
  options.nvml_library = GPUTOPO_FAKE_NVML;
  options.sysfs_root = "/nonexistent";
  options.replicas = 4;
  Result<Discovery> got = DiscoverTopology(options, runner);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->source, "nvidia-smi");
  ExpectMatchesProfile(got->machine, Profile("pcie-4gpu-2numa"));
  EXPECT_EQ(got->machine.gpu(2).uuid, "GPU-cccc");
  EXPECT_EQ(got->machine.gpu(2).pci_bus_id, "00000000:B1:00.0");
  EXPECT_EQ(got->machine.gpu(2).cpu_affinity, "96-191,288-383");
  EXPECT_EQ(got->machine.replicas_per_gpu(), 4);
  ASSERT_FALSE(got->notes.empty());
  EXPECT_EQ(got->notes[0], "NVML not used (nvmlInit_v2: Driver Not Loaded): read from nvidia-smi");
}

TEST(NvidiaSmiFallbackTest, HgxH100CaptureMatchesTheProfile) {
  FakeRunner runner;
  std::string query = "index, uuid, name, memory.total [MiB], pci.bus_id\n";
  for (int i = 0; i < 8; ++i) {
    query += std::to_string(i) + ", GPU-" + std::to_string(i) +
             ", NVIDIA H100 80GB HBM3, 81559 MiB, 00000000:1" + std::to_string(i) + ":00.0\n";
  }
  runner.Serve(kQuery, query);
  runner.Serve("nvidia-smi topo -m", Capture("hgx_h100_8x_nvswitch_NV18.txt"));
  Result<Discovery> got = DiscoverWithNvidiaSmi(runner, "nvidia-smi", "/nonexistent");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectMatchesProfile(got->machine, Profile("hgx-h100"));
}

TEST(NvidiaSmiFallbackTest, TopoFailureLeavesLinksUnknown) {
  FakeRunner runner;
  runner.Serve(kQuery,
               "index, uuid, name, memory.total [MiB], pci.bus_id\n0, GPU-a, X, 1 MiB, "
               "00000000:01:00.0\n1, GPU-b, X, 1 MiB, 00000000:02:00.0\n");
  Result<Discovery> got = DiscoverWithNvidiaSmi(runner, "nvidia-smi", "/nonexistent");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->machine.gpu_count(), 2);
  EXPECT_EQ(got->machine.link(0, 1), kUnknownLink);
  EXPECT_THAT(got->notes, ElementsAre("nvidia-smi topo -m: not found on PATH: links unknown"));
}

TEST(NvidiaSmiFallbackTest, NeitherWorksSaysWhatWasTried) {
  FakeRunner runner;
  DiscoveryOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  Result<Discovery> got = DiscoverTopology(options, runner);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              StartsWith("no GPU found: NVML: dlopen /nonexistent/libnvidia-ml.so.1: "));
  EXPECT_THAT(got.status().message(), HasSubstr("; nvidia-smi: not found on PATH"));
  EXPECT_EQ(got.status().message().find('\n'), std::string::npos);
  EXPECT_THAT(runner.calls(), ElementsAre(kQuery));
}

TEST(NvidiaSmiFallbackTest, NvmlPreferredWhenItWorks) {
  UseMachine("pcie-4gpu-2numa");
  FakeRunner runner;
  DiscoveryOptions options;
  options.nvml_library = GPUTOPO_FAKE_NVML;
  Result<Discovery> got = DiscoverTopology(options, runner);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->source, "nvml");
  EXPECT_THAT(runner.calls(), IsEmpty());
}

TEST(ParseNvidiaSmiGpuQueryTest, ReadsRows) {
  Result<std::vector<GpuInfo>> got = ParseNvidiaSmiGpuQuery(
      "index, uuid, name, memory.total [MiB], pci.bus_id\r\n"
      "1, GPU-b, NVIDIA A100-SXM4-80GB, 81920 MiB, 00000000:0F:00.0\r\n"
      "0, GPU-a, Weird, Name, 4 MiB, 00000000:07:00.0\r\n"
      "\n");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].index, 0);
  EXPECT_EQ((*got)[0].model, "Weird,Name");
  EXPECT_EQ((*got)[0].memory_mib, 4);
  EXPECT_EQ((*got)[1].uuid, "GPU-b");
  EXPECT_EQ((*got)[1].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ((*got)[1].memory_mib, 81920);
  EXPECT_EQ((*got)[1].pci_bus_id, "00000000:0F:00.0");
}

TEST(ParseNvidiaSmiGpuQueryTest, RejectsWhatItCannotRead) {
  EXPECT_FALSE(ParseNvidiaSmiGpuQuery("").ok());
  EXPECT_FALSE(ParseNvidiaSmiGpuQuery("index, uuid, name, memory.total [MiB], pci.bus_id\n").ok());
  EXPECT_FALSE(ParseNvidiaSmiGpuQuery("NVIDIA-SMI has failed because it couldn't communicate with "
                                      "the NVIDIA driver.\n")
                   .ok());
  // Indices must be 0..n-1.
  EXPECT_FALSE(ParseNvidiaSmiGpuQuery("index, uuid, name, memory.total [MiB], pci.bus_id\n"
                                      "1, GPU-a, X, 1 MiB, 00000000:01:00.0\n")
                   .ok());
  EXPECT_FALSE(ParseNvidiaSmiGpuQuery("index, uuid, name, memory.total [MiB], pci.bus_id\n"
                                      "x, GPU-a, X, 1 MiB, 00000000:01:00.0\n")
                   .ok());
}

TEST(ReadNumaNodeTest, ReadsSysfs) {
  FakeSysfs sysfs("pcie-4gpu-2numa");
  EXPECT_EQ(ReadNumaNode(sysfs.root(), "00000000:B1:00.0"), 1);
  EXPECT_EQ(ReadNumaNode(sysfs.root(), "0000:17:00.0"), 0);
  EXPECT_EQ(ReadNumaNode(sysfs.root(), "00000000:99:00.0"), -1);  // no such device
  EXPECT_EQ(ReadNumaNode(sysfs.root(), "garbage"), -1);
}

}  // namespace
}  // namespace gputopo::agent
