#include "src/agent/pod_identification.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/agent/replica_choice.h"
#include "test/support/machines.h"

namespace gputopo::agent {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTrusted[] = "gputopo-scheduler";
const std::chrono::system_clock::time_point kT0{seconds(1'700'000'000)};

// 4 PCIe GPUs (0-1 on NUMA 0, 2-3 on NUMA 1) with UUIDs GPU-a0..GPU-a3.
MachineTopology FourGpus() {
  MachineTopology m = gputopo::testing::PcieTwoNuma(4);
  for (int i = 0; i < 4; ++i) m.gpu(i).uuid = "GPU-a" + std::to_string(i);
  return m;
}

std::string Id(int gpu, int replica) {
  return "GPU-a" + std::to_string(gpu) + "::" + std::to_string(replica);
}

// Every replica of every GPU of FourGpus() with `replicas` replicas, minus `taken`.
std::vector<std::string> AllBut(int replicas, const std::vector<std::string>& taken = {}) {
  std::vector<std::string> out;
  for (const AdvertisedDevice& d : AdvertisedDevices(FourGpus(), replicas)) {
    if (std::find(taken.begin(), taken.end(), d.id) == taken.end()) out.push_back(d.id);
  }
  return out;
}

class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_.namespace_name = "default";
    pod_.name = std::move(name);
    pod_.uid = "uid-" + pod_.name;
    pod_.created = kT0;
    pod_.scheduler_name = kTrusted;
  }
  PodBuilder& Namespace(std::string ns) {
    pod_.namespace_name = std::move(ns);
    return *this;
  }
  PodBuilder& Uid(std::string uid) {
    pod_.uid = std::move(uid);
    return *this;
  }
  PodBuilder& Created(std::chrono::system_clock::time_point t) {
    pod_.created = t;
    return *this;
  }
  PodBuilder& Scheduler(std::string name) {
    pod_.scheduler_name = std::move(name);
    return *this;
  }
  PodBuilder& Assigned(std::string value) {
    pod_.assigned_gpus = std::move(value);
    return *this;
  }
  PodBuilder& Container(std::string name, int64_t request) {
    pod_.containers.push_back({std::move(name), request, false});
    return *this;
  }
  PodBuilder& Init(std::string name, int64_t request) {
    pod_.containers.push_back({std::move(name), request, true});
    return *this;
  }
  BoundPod Obj() const { return pod_; }

 private:
  BoundPod pod_;
};

PreferredRequest Request(std::vector<std::string> available, int size,
                         std::vector<std::string> must_include = {}) {
  return {std::move(available), std::move(must_include), size};
}

Identification Identify(const std::vector<BoundPod>& pods, const PreferredRequest& request,
                        const std::vector<AllocatedContainer>& allocated = {}) {
  return IdentifyAdmission(pods, allocated, request, FourGpus(), {kTrusted});
}

TEST(ParseAssignedGpusTest, UuidsIndicesAndErrors) {
  const MachineTopology m = FourGpus();
  EXPECT_THAT(ParseAssignedGpus("GPU-a2, GPU-a0", m).gpus, ElementsAre(2, 0));
  EXPECT_THAT(ParseAssignedGpus("3,1", m).gpus, ElementsAre(3, 1));
  EXPECT_THAT(ParseAssignedGpus("GPU-zz", m).error,
              HasSubstr("\"GPU-zz\", not a GPU of this node"));
  EXPECT_THAT(ParseAssignedGpus("7", m).error, HasSubstr("not a GPU of this node"));
  EXPECT_THAT(ParseAssignedGpus("GPU-a1::0", m).error, HasSubstr("not a GPU of this node"));
  EXPECT_THAT(ParseAssignedGpus("GPU-a1,1", m).error, HasSubstr("twice"));
  EXPECT_THAT(ParseAssignedGpus("", m).error, HasSubstr("empty"));
  EXPECT_THAT(ParseAssignedGpus(" , ", m).error, HasSubstr("empty"));
}

TEST(IdentifyAdmissionTest, SteersTheOnePodOntoItsAssignedGpus) {
  // Replica 0 of GPU 2 is held by someone; the lowest free replica of GPU 2 is 1.
  const Identification id = Identify({PodBuilder("p").Assigned("GPU-a2").Container("c", 1).Obj()},
                                     Request(AllBut(2, {Id(2, 0)}), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "p");
  EXPECT_EQ(id.pod_uid, "uid-p");
  EXPECT_EQ(id.container, "c");
  EXPECT_THAT(id.gpus, ElementsAre(2));
  EXPECT_THAT(id.device_ids, ElementsAre(Id(2, 1)));
}

TEST(IdentifyAdmissionTest, LowestReplicaFirstWhateverTheOfferedOrder) {
  const Identification id =
      Identify({PodBuilder("p").Assigned("GPU-a3,GPU-a1").Container("c", 2).Obj()},
               Request({Id(3, 2), Id(1, 1), Id(3, 1), Id(1, 2)}, 2));
  ASSERT_TRUE(id.steered()) << id.reason;
  // In the annotation's order, each GPU's lowest free replica.
  EXPECT_THAT(id.device_ids, ElementsAre(Id(3, 1), Id(1, 1)));
}

TEST(IdentifyAdmissionTest, IndexFormAnnotation) {
  MachineTopology no_uuids = gputopo::testing::PcieTwoNuma(4);
  const BoundPod pod = PodBuilder("p").Assigned("1").Container("c", 1).Obj();
  const Identification id =
      IdentifyAdmission({pod}, {}, Request({"0::0", "1::0", "1::1"}, 1), no_uuids, {kTrusted});
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_THAT(id.device_ids, ElementsAre("1::0"));
}

TEST(IdentifyAdmissionTest, WhoDoesNotQualify) {
  struct Case {
    const char* what;
    std::vector<BoundPod> pods;
    PreferredRequest request;
    std::vector<AllocatedContainer> allocated;
    IdentificationVerdict verdict;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"no pods",
       {},
       Request(AllBut(2), 1),
       {},
       IdentificationVerdict::kNoneQualify,
       "no pod of a trusted scheduler"},
      {"untrusted scheduler",
       {PodBuilder("p").Scheduler("default-scheduler").Assigned("GPU-a1").Container("c", 1).Obj()},
       Request(AllBut(2), 1),
       {},
       IdentificationVerdict::kNoneQualify,
       "no pod of a trusted scheduler"},
      {"no annotation",
       {PodBuilder("p").Container("c", 1).Obj()},
       Request(AllBut(2), 1),
       {},
       IdentificationVerdict::kNoneQualify,
       "no pod of a trusted scheduler"},
      {"a GPU this node lacks",
       {PodBuilder("p").Assigned("GPU-elsewhere").Container("c", 1).Obj()},
       Request(AllBut(2), 1),
       {},
       IdentificationVerdict::kNoneQualify,
       "default/p: assigned-gpus names \"GPU-elsewhere\", not a GPU of this node"},
      {"request differs",
       {PodBuilder("p").Assigned("GPU-a1,GPU-a2").Container("c", 2).Obj()},
       Request(AllBut(2), 1),
       {},
       IdentificationVerdict::kNoneQualify,
       "default/p: container c requests 2, not 1"},
      {"already allocated (PodResources)",
       {PodBuilder("p").Assigned("GPU-a1").Container("c", 1).Obj()},
       Request(AllBut(2), 1),
       {{"default", "p", "", "c"}},
       IdentificationVerdict::kNoneQualify,
       "no pod of a trusted scheduler"},
      {"already allocated (own record, same uid)",
       {PodBuilder("p").Assigned("GPU-a1").Container("c", 1).Obj()},
       Request(AllBut(2), 1),
       {{"default", "p", "uid-p", "c"}},
       IdentificationVerdict::kNoneQualify,
       "no pod of a trusted scheduler"},
      {"annotation too short for the request",
       {PodBuilder("p").Assigned("GPU-a1").Container("c", 2).Obj()},
       Request(AllBut(2), 2),
       {},
       IdentificationVerdict::kNoneQualify,
       "assigned-gpus names 1 GPUs, too few for container c"},
      {"assigned GPU full",
       {PodBuilder("p").Assigned("GPU-a1").Container("c", 1).Obj()},
       Request(AllBut(2, {Id(1, 0), Id(1, 1)}), 1),
       {},
       IdentificationVerdict::kNotEnoughReplicas,
       "not enough replicas: default/p: assigned GPU 1 has no free replica"},
      {"must-include elsewhere",
       {PodBuilder("p").Assigned("GPU-a1,GPU-a2").Container("c", 2).Obj()},
       Request(AllBut(2), 2, {Id(0, 0)}),
       {},
       IdentificationVerdict::kNoneQualify,
       "must-include device GPU-a0::0 is not on its assigned GPUs"},
  };
  for (const Case& c : cases) {
    const Identification id = Identify(c.pods, c.request, c.allocated);
    EXPECT_EQ(id.verdict, c.verdict) << c.what << ": " << id.reason;
    EXPECT_THAT(id.reason, HasSubstr(c.reason)) << c.what;
    EXPECT_TRUE(id.device_ids.empty()) << c.what;
  }
}

TEST(IdentifyAdmissionTest, ARecreatedPodIsNotTheOneAllocated) {
  // The own record names the predecessor's uid: the new pod of the same name still qualifies.
  const Identification id =
      Identify({PodBuilder("p").Uid("uid-new").Assigned("GPU-a1").Container("c", 1).Obj()},
               Request(AllBut(2), 1), {{"default", "p", "uid-old", "c"}});
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_uid, "uid-new");
}

TEST(IdentifyAdmissionTest, OldestFirstThenName) {
  const BoundPod older =
      PodBuilder("z-older").Created(kT0 - seconds(1)).Assigned("GPU-a3").Container("c", 1).Obj();
  const BoundPod a = PodBuilder("a").Assigned("GPU-a1").Container("c", 1).Obj();
  const BoundPod b = PodBuilder("b").Assigned("GPU-a2").Container("c", 1).Obj();
  Identification id = Identify({b, a, older}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "z-older");
  // Once it holds its devices, the two of the same second go by name.
  id =
      Identify({b, a, older}, Request(AllBut(2, {Id(3, 0)}), 1), {{"default", "z-older", "", "c"}});
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "a");
  EXPECT_THAT(id.device_ids, ElementsAre(Id(1, 0)));
}

// A Deployment's burst: pods of one creation second, which kubelet admits in the order its watch
// delivers them. p2 reached the node before p10 and is the one being admitted, although "p10"
// sorts first by name.
TEST(IdentifyAdmissionTest, SameSecondGoesByArrivalBeforeName) {
  BoundPod p10 = PodBuilder("p10").Assigned("GPU-a1").Container("c", 1).Obj();
  BoundPod p2 = PodBuilder("p2").Assigned("GPU-a2").Container("c", 1).Obj();
  p2.arrival = 7;
  p10.arrival = 8;
  Identification id = Identify({p10, p2}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "p2");
  EXPECT_THAT(id.device_ids, ElementsAre(Id(2, 0)));
  // An arrival known beats one unknown (a pod a live list found, not yet in the cache).
  p10.arrival = 0;
  id = Identify({p10, p2}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "p2");
  // The same arrival (both unknown): by name, as before.
  p2.arrival = 0;
  id = Identify({p10, p2}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "p10");
}

TEST(IdentifyAdmissionTest, SameSecondSameNameIsAmbiguous) {
  const BoundPod x = PodBuilder("p").Namespace("x").Assigned("GPU-a1").Container("c", 1).Obj();
  const BoundPod y = PodBuilder("p").Namespace("y").Assigned("GPU-a2").Container("c", 1).Obj();
  const Identification id = Identify({x, y}, Request(AllBut(2), 1));
  EXPECT_EQ(id.verdict, IdentificationVerdict::kAmbiguous);
  EXPECT_THAT(id.reason, HasSubstr("x/p and y/p"));
}

TEST(IdentifyAdmissionTest, APodThatDoesNotFitLeavesTheOtherOne) {
  // "a" would come first, but its container asks 2; the request is for 1.
  const BoundPod a = PodBuilder("a").Assigned("GPU-a0,GPU-a1").Container("c", 2).Obj();
  const BoundPod b = PodBuilder("b").Assigned("GPU-a3").Container("c", 1).Obj();
  const Identification id = Identify({a, b}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.pod_name, "b");
}

TEST(IdentifyAdmissionTest, InitContainersFirstThenTheOthersInOrder) {
  // Spec order: app "one" (1), init "setup" (1), app "two" (1). kubelet: setup, one, two.
  const BoundPod pod = PodBuilder("p")
                           .Assigned("GPU-a2,GPU-a3")
                           .Container("one", 1)
                           .Init("setup", 1)
                           .Container("two", 1)
                           .Obj();
  Identification id = Identify({pod}, Request(AllBut(2), 1));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.container, "setup");
  EXPECT_THAT(id.device_ids, ElementsAre(Id(2, 0)));
  // kubelet offers the init container's device back as must-include for "one".
  id = Identify({pod}, Request(AllBut(2), 1, {Id(2, 0)}), {{"default", "p", "uid-p", "setup"}});
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.container, "one");
  EXPECT_THAT(id.device_ids, ElementsAre(Id(2, 0)));
  // "two" takes the next slice of the assignment.
  id = Identify({pod}, Request(AllBut(2, {Id(2, 0)}), 1),
                {{"default", "p", "uid-p", "setup"}, {"default", "p", "", "one"}});
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_EQ(id.container, "two");
  EXPECT_THAT(id.device_ids, ElementsAre(Id(3, 0)));
}

TEST(IdentifyAdmissionTest, MustIncludeIsHonouredOnItsGpu) {
  const BoundPod pod = PodBuilder("p").Assigned("GPU-a0,GPU-a1").Container("c", 2).Obj();
  const Identification id = Identify({pod}, Request(AllBut(3), 2, {Id(1, 2)}));
  ASSERT_TRUE(id.steered()) << id.reason;
  EXPECT_THAT(id.device_ids, ElementsAre(Id(0, 0), Id(1, 2)));
}

TEST(IdentifyAdmissionTest, ReasonsAreCut) {
  std::vector<BoundPod> pods;
  for (int i = 0; i < 6; ++i) {
    pods.push_back(PodBuilder("p" + std::to_string(i)).Assigned("GPU-x").Container("c", 1).Obj());
  }
  const Identification id = Identify(pods, Request(AllBut(2), 1));
  EXPECT_EQ(id.verdict, IdentificationVerdict::kNoneQualify);
  EXPECT_THAT(id.reason, HasSubstr("; and 2 more"));
}

}  // namespace
}  // namespace gputopo::agent
