// The PodResources client against the fake kubelet: what it reports, and its errors as values.
#include "src/agent/pod_resources_client.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "test/support/fake_kubelet.h"

namespace gputopo::agent {
namespace {

using ::gputopo::testing::FakeKubelet;

constexpr char kResource[] = "nvidia.com/gpu";

class PodResourcesClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kubelet_.Start()); }

  FakeKubelet kubelet_;
};

TEST_F(PodResourcesClientTest, ListsDeviceIdsPerPodAndContainerForOneResource) {
  FakeKubelet::Pod a;
  a.namespace_name = "ml";
  a.name = "a";
  a.containers = {{"setup", 1, true}, {"main", 2, false}, {"log", 0, false}};
  ASSERT_TRUE(kubelet_
                  .AllocateDirectly(a, kResource,
                                    {{"setup", {"GPU-1::0"}}, {"main", {"GPU-1::0", "GPU-2::4"}}})
                  .ok());
  FakeKubelet::Pod other;
  other.name = "nic";
  other.containers = {{"c", 1, false}};
  ASSERT_TRUE(kubelet_.AllocateDirectly(other, "example.com/nic", {{"c", {"nic0"}}}).ok());

  PodResourcesClient client(kubelet_.pod_resources_socket());
  Result<std::vector<PodDeviceIds>> listed = client.List(kResource);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  // kubelet reports one ContainerDevices per device; they come back gathered per container.
  // Init containers and containers without the resource are not there; neither is the pod
  // holding only another resource.
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0],
            (PodDeviceIds{"ml", "a", {ContainerDeviceIds{"main", {"GPU-1::0", "GPU-2::4"}}}}));
}

TEST_F(PodResourcesClientTest, AllocatableDeviceIds) {
  kubelet_.AddStockPlugin(kResource, {{"GPU-1::0", true, 0}, {"GPU-1::1", false, 0}});
  PodResourcesClient client(kubelet_.pod_resources_socket());
  Result<std::vector<std::string>> ids = client.AllocatableDeviceIds(kResource);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<std::string>{"GPU-1::0", "GPU-1::1"}));
  Result<std::vector<std::string>> none = client.AllocatableDeviceIds("example.com/nic");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(PodResourcesClientTest, AMissingSocketIsUnavailableWithTheReason) {
  PodResourcesClient client(kubelet_.kubelet_dir() + "/pod-resources/nope.sock");
  Result<std::vector<PodDeviceIds>> listed = client.List(kResource);
  EXPECT_EQ(listed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(listed.status().message().find("no PodResources socket at"), std::string::npos)
      << listed.status().message();
}

TEST_F(PodResourcesClientTest, AFileThatIsNotASocketIsUnavailable) {
  const std::string path = kubelet_.kubelet_dir() + "/pod-resources/plain";
  std::ofstream(path) << "x";
  PodResourcesClient client(path);
  EXPECT_EQ(client.List(kResource).status().code(), StatusCode::kUnavailable);
}

TEST_F(PodResourcesClientTest, KubeletStoppedIsUnavailableAndARestartIsFollowed) {
  PodResourcesClient client(kubelet_.pod_resources_socket());
  ASSERT_TRUE(client.List(kResource).ok());
  kubelet_.Stop();
  EXPECT_EQ(client.List(kResource).status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(kubelet_.Start());
  FakeKubelet::Pod pod;
  pod.name = "p";
  pod.containers = {{"c", 1, false}};
  ASSERT_TRUE(kubelet_.AllocateDirectly(pod, kResource, {{"c", {"GPU-0"}}}).ok());
  // The channel reconnects on its own; a call may still meet the old connection's failure.
  Result<std::vector<PodDeviceIds>> listed = client.List(kResource);
  for (int attempt = 0; attempt < 100 && !listed.ok(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    listed = client.List(kResource);
  }
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 1u);
}

TEST_F(PodResourcesClientTest, AnUnreadableAnswerIsAnError) {
  ASSERT_TRUE(kubelet_.SetPodResourcesUnreadable(true));
  PodResourcesClient client(kubelet_.pod_resources_socket());
  Result<std::vector<PodDeviceIds>> listed = client.List(kResource);
  EXPECT_EQ(listed.status().code(), StatusCode::kInternal) << listed.status().ToString();
  EXPECT_NE(listed.status().message().find("unreadable answer"), std::string::npos)
      << listed.status().message();
  EXPECT_EQ(client.AllocatableDeviceIds(kResource).status().code(), StatusCode::kInternal);
  ASSERT_TRUE(kubelet_.SetPodResourcesUnreadable(false));
  PodResourcesClient again(kubelet_.pod_resources_socket());
  EXPECT_TRUE(again.List(kResource).ok());
}

TEST_F(PodResourcesClientTest, AnAnswerTooLargeIsAnError) {
  FakeKubelet::Pod pod;
  pod.name = "p";
  pod.containers = {{"c", 1, false}};
  std::vector<std::string> many(200, "GPU-0123456789abcdef0123456789abcdef::1");
  ASSERT_TRUE(kubelet_.AllocateDirectly(pod, kResource, {{"c", many}}).ok());
  PodResourcesClient::Options options;
  options.max_message_bytes = 1024;
  PodResourcesClient client(kubelet_.pod_resources_socket(), options);
  EXPECT_EQ(client.List(kResource).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gputopo::agent
