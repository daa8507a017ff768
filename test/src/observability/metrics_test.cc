#include "src/observability/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gputopo::observability {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MetricsTest, EmptyRegistryRendersNothing) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.Render(), "");
}

TEST(MetricsTest, UnlabelledCounterRendersZeroBeforeTheFirstIncrement) {
  MetricsRegistry registry;
  registry.RegisterCounter("gputopo_binds_total", "Binds done.");
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP gputopo_binds_total Binds done.",
                          "# TYPE gputopo_binds_total counter", "gputopo_binds_total 0"));
}

TEST(MetricsTest, CounterWithLabels) {
  MetricsRegistry registry;
  CounterFamily& requests =
      registry.RegisterCounter("requests_total", "Requests.", {"verb", "outcome"});
  EXPECT_EQ(registry.Render(), "");  // no children yet: the family is left out
  requests.WithLabels({"filter", "ok"}).Increment();
  requests.WithLabels({"filter", "ok"}).Increment(2);
  requests.WithLabels({"bind", "error"}).Increment(0.5);
  requests.WithLabels({"bind", "error"}).Increment(-3);  // ignored: counters never decrease
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP requests_total Requests.", "# TYPE requests_total counter",
                          "requests_total{outcome=\"error\",verb=\"bind\"} 0.5",
                          "requests_total{outcome=\"ok\",verb=\"filter\"} 3"));
}

TEST(MetricsTest, ChildrenAreStableAndSharedBetweenLookups) {
  MetricsRegistry registry;
  CounterFamily& family = registry.RegisterCounter("a_total", "A.", {"k"});
  Counter& first = family.WithLabels({"x"});
  for (int i = 0; i < 100; ++i) family.WithLabels({"v" + std::to_string(i)});
  const std::vector<std::string> values = {"x"};
  EXPECT_EQ(&family.WithLabels(values), &first);
  EXPECT_EQ(&family.WithLabels({"x"}), &first);
}

TEST(MetricsTest, GaugeSetIncDec) {
  MetricsRegistry registry;
  Gauge& gauge = registry.RegisterGauge("queue_depth", "Depth.").WithLabels({});
  gauge.Set(10);
  gauge.Increment();
  gauge.Increment(2.5);
  gauge.Decrement(4);
  EXPECT_DOUBLE_EQ(gauge.Value(), 9.5);
  gauge.Decrement(20);
  EXPECT_THAT(
      Lines(registry.Render()),
      ElementsAre("# HELP queue_depth Depth.", "# TYPE queue_depth gauge", "queue_depth -10.5"));
}

TEST(MetricsTest, SpecialValues) {
  MetricsRegistry registry;
  GaugeFamily& family = registry.RegisterGauge("g", "G.", {"v"});
  family.WithLabels({"a"}).Set(std::numeric_limits<double>::infinity());
  family.WithLabels({"b"}).Set(-std::numeric_limits<double>::infinity());
  family.WithLabels({"c"}).Set(std::nan(""));
  family.WithLabels({"d"}).Set(1e21);
  family.WithLabels({"e"}).Set(0.1);
  family.WithLabels({"f"}).Set(1e20);
  family.WithLabels({"g"}).Set(1e-5);
  family.WithLabels({"h"}).Set(1.5e-7);
  family.WithLabels({"i"}).Set(-0.0001);
  family.WithLabels({"j"}).Set(123456789);
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP g G.", "# TYPE g gauge", "g{v=\"a\"} +Inf", "g{v=\"b\"} -Inf",
                          "g{v=\"c\"} Nan", "g{v=\"d\"} 1e+21", "g{v=\"e\"} 0.1",
                          "g{v=\"f\"} 1e+20", "g{v=\"g\"} 1e-05", "g{v=\"h\"} 1.5e-07",
                          "g{v=\"i\"} -0.0001", "g{v=\"j\"} 123456789"));
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry registry;
  // Binary fractions, so that the sum is exact.
  const std::vector<double> bounds = {0.125, 0.5, 1};
  HistogramFamily& family =
      registry.RegisterHistogram("latency_seconds", "Latency.", {"verb"}, bounds);
  Histogram& filter = family.WithLabels({"filter"});
  filter.Observe(0.0625);  // <= 0.125
  filter.Observe(0.125);   // <= 0.125: bounds are inclusive
  filter.Observe(0.25);    // <= 0.5
  filter.Observe(2);       // +Inf
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP latency_seconds Latency.", "# TYPE latency_seconds histogram",
                          "latency_seconds_count{verb=\"filter\"} 4",
                          "latency_seconds_sum{verb=\"filter\"} 2.4375",
                          "latency_seconds_bucket{verb=\"filter\",le=\"0.125\"} 2",
                          "latency_seconds_bucket{verb=\"filter\",le=\"0.5\"} 3",
                          "latency_seconds_bucket{verb=\"filter\",le=\"1\"} 3",
                          "latency_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 4"));
  const prometheus::ClientMetric::Histogram snapshot = filter.Collect().histogram;
  EXPECT_EQ(snapshot.sample_count, 4u);
  EXPECT_EQ(snapshot.sample_sum, 2.4375);
}

TEST(MetricsTest, UnlabelledHistogramWithDefaultBuckets) {
  MetricsRegistry registry;
  Histogram& histogram = registry.RegisterHistogram("bind_seconds", "Bind.").WithLabels({});
  histogram.Observe(0.0003);  // <= 0.0005
  histogram.Observe(20);      // +Inf
  const std::vector<std::string> lines = Lines(registry.Render());
  ASSERT_EQ(lines.size(), 2 + 2 + kDefaultLatencyBuckets.size() + 1);
  EXPECT_EQ(lines[2], "bind_seconds_count 2");
  EXPECT_THAT(lines[3], testing::StartsWith("bind_seconds_sum 20.000"));
  EXPECT_EQ(lines[4], "bind_seconds_bucket{le=\"0.0001\"} 0");
  EXPECT_EQ(lines[5], "bind_seconds_bucket{le=\"0.00025\"} 0");
  EXPECT_EQ(lines[6], "bind_seconds_bucket{le=\"0.0005\"} 1");
  EXPECT_EQ(lines[19], "bind_seconds_bucket{le=\"10\"} 1");
  EXPECT_EQ(lines[20], "bind_seconds_bucket{le=\"+Inf\"} 2");
}

TEST(MetricsTest, HistogramWithoutBoundsHasOnlyInf) {
  MetricsRegistry registry;
  Histogram& h = registry.RegisterHistogram("h", "H.", {}, {}).WithLabels({});
  h.Observe(1);
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP h H.", "# TYPE h histogram", "h_count 1", "h_sum 1",
                          "h_bucket{le=\"+Inf\"} 1"));
}

TEST(MetricsTest, EscapesLabelValues) {
  MetricsRegistry registry;
  registry.RegisterGauge("g", "Help with \"quotes\".", {"path"}).WithLabels({"a\\b\"c\nd"}).Set(1);
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP g Help with \"quotes\".", "# TYPE g gauge",
                          "g{path=\"a\\\\b\\\"c\\nd\"} 1"));
}

TEST(MetricsTest, FamiliesSortedByNameAndChildrenByLabelValues) {
  MetricsRegistry registry;
  GaugeFamily& zeta = registry.RegisterGauge("zeta", "Z.", {"n"});
  registry.RegisterCounter("alpha_total", "A.");
  zeta.WithLabels({"b"}).Set(2);
  zeta.WithLabels({"a"}).Set(1);
  zeta.WithLabels({"c"}).Set(3);
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP alpha_total A.", "# TYPE alpha_total counter", "alpha_total 0",
                          "# HELP zeta Z.", "# TYPE zeta gauge", "zeta{n=\"a\"} 1",
                          "zeta{n=\"b\"} 2", "zeta{n=\"c\"} 3"));
}

TEST(MetricsTest, ReRegistrationReturnsTheSameFamilyWhenItMatches) {
  MetricsRegistry registry;
  CounterFamily& first = registry.RegisterCounter("c_total", "First help.", {"a"});
  first.WithLabels({"v"}).Increment();
  EXPECT_EQ(&registry.RegisterCounter("c_total", "Other help.", {"a"}), &first);
  const std::vector<double> bounds = {1, 2};
  const std::vector<double> with_inf = {1, 2, std::numeric_limits<double>::infinity()};
  HistogramFamily& h = registry.RegisterHistogram("h", "", {}, bounds);
  EXPECT_EQ(&registry.RegisterHistogram("h", "", {}, with_inf), &h);  // +Inf is implicit
  EXPECT_THAT(Lines(registry.Render()), testing::Contains("# HELP c_total First help."));
}

TEST(MetricsDeathTest, ProgrammingErrorsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto registering = [](auto how) {
    return [how] {
      MetricsRegistry registry;
      how(registry);
    };
  };
  EXPECT_DEATH(registering([](MetricsRegistry& r) { r.RegisterGauge("bad name", ""); })(),
               "invalid metric name");
  EXPECT_DEATH(registering([](MetricsRegistry& r) { r.RegisterCounter("requests", ""); })(),
               "must end in _total");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterGauge("g", "", {"ok", "__x"});
               })(),
               "invalid label name");
  EXPECT_DEATH(registering([](MetricsRegistry& r) { r.RegisterHistogram("h", "", {"le"}); })(),
               "invalid label name");
  EXPECT_DEATH(registering([](MetricsRegistry& r) { r.RegisterGauge("g", "two\nlines"); })(),
               "help text");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 const std::vector<double> decreasing = {1, 0.5};
                 r.RegisterHistogram("h", "", {}, decreasing);
               })(),
               "finite and increasing");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterCounter("c_total", "", {"a", "b"}).WithLabels({"only one"});
               })(),
               "wrong number of label values");
  // Another type, other labels or other buckets under a registered name.
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterCounter("c_total", "", {"a"});
                 r.RegisterGauge("c_total", "", {"a"});
               })(),
               "registered again");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterCounter("c_total", "", {"a"});
                 r.RegisterCounter("c_total", "", {"b"});
               })(),
               "registered again");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 const std::vector<double> one = {1, 2};
                 const std::vector<double> other = {1, 3};
                 r.RegisterHistogram("h", "", {}, one);
                 r.RegisterHistogram("h", "", {}, other);
               })(),
               "registered again");
  // A histogram's sample names are taken too, in both directions.
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterHistogram("h", "");
                 r.RegisterGauge("h_count", "");
               })(),
               "already used");
  EXPECT_DEATH(registering([](MetricsRegistry& r) {
                 r.RegisterGauge("x_sum", "");
                 r.RegisterHistogram("x", "");
               })(),
               "already used");
}

TEST(MetricsTest, CollectorsMergeWithRegisteredFamilies) {
  MetricsRegistry registry;
  registry.RegisterGauge("b_registered", "Registered.");
  registry.AddCollector([](MetricsWriter& writer) {
    writer.WriteGauge("c_free_slots", "Free GPU slots per node.", {{"node", "n2"}}, 3);
    writer.WriteGauge("c_free_slots", "ignored help", {{"node", "n1"}}, 8);
    writer.WriteCounter("a_events_total", "Events.", {}, 42);
  });
  EXPECT_THAT(
      Lines(registry.Render()),
      ElementsAre("# HELP a_events_total Events.", "# TYPE a_events_total counter",
                  "a_events_total 42", "# HELP b_registered Registered.",
                  "# TYPE b_registered gauge", "b_registered 0",
                  "# HELP c_free_slots Free GPU slots per node.", "# TYPE c_free_slots gauge",
                  "c_free_slots{node=\"n1\"} 8", "c_free_slots{node=\"n2\"} 3"));
}

TEST(MetricsTest, CollectorsSeeCurrentStateAtEveryRender) {
  MetricsRegistry registry;
  std::atomic<int> slots{1};
  registry.AddCollector(
      [&slots](MetricsWriter& writer) { writer.WriteGauge("slots", "Slots.", {}, slots.load()); });
  EXPECT_THAT(Lines(registry.Render()), testing::Contains("slots 1"));
  slots = 7;
  EXPECT_THAT(Lines(registry.Render()), testing::Contains("slots 7"));
}

TEST(MetricsTest, CollectorsInvalidSamplesAreDropped) {
  MetricsRegistry registry;
  registry.RegisterHistogram("lat", "Latency.", {}, {});
  size_t dropped = 0;
  registry.AddCollector([&dropped](MetricsWriter& writer) {
    writer.WriteGauge("bad name", "", {}, 1);                 // invalid name
    writer.WriteGauge("g", "", {{"bad-label", "x"}}, 1);      // invalid label name
    writer.WriteGauge("g", "", {{"a", "x"}, {"a", "y"}}, 1);  // repeated label
    writer.WriteCounter("events", "", {}, 1);                 // no _total
    writer.WriteGauge("lat", "", {}, 1);                      // registered
    writer.WriteGauge("lat_count", "", {}, 1);                // a registered sample name
    writer.WriteGauge("g", "G.", {{"a", "x"}}, 1);            // kept
    writer.WriteCounter("g", "", {}, 1);                      // g is a gauge
    writer.WriteGauge("g", "G.", {{"a", "x"}}, 2);            // repeated: first kept
    writer.WriteGauge("g", "G.", {{"a", "quote\"d"}}, 3);     // escaped
    writer.WriteGauge("h", "two\nlines", {}, 1);              // a newline in the help
    dropped = writer.dropped();
  });
  EXPECT_THAT(Lines(registry.Render()),
              ElementsAre("# HELP g G.", "# TYPE g gauge", "g{a=\"quote\\\"d\"} 3", "g{a=\"x\"} 1",
                          "# HELP lat Latency.", "# TYPE lat histogram", "lat_count 0", "lat_sum 0",
                          "lat_bucket{le=\"+Inf\"} 0"));
  EXPECT_EQ(dropped, 8u);
}

TEST(MetricsTest, CollectorMayRegisterFamilies) {
  MetricsRegistry registry;
  registry.AddCollector([&registry](MetricsWriter& writer) {
    registry.RegisterGauge("late", "Late.");
    writer.WriteGauge("collected", "C.", {}, 1);
  });
  EXPECT_THAT(Lines(registry.Render()), testing::Contains("late 0"));
}

TEST(MetricsTest, ConcurrentUpdatesGiveExactTotals) {
  MetricsRegistry registry;
  CounterFamily& counters = registry.RegisterCounter("ops_total", "Ops.", {"thread_group"});
  Gauge& gauge = registry.RegisterGauge("inflight", "In flight.").WithLabels({});
  const std::vector<double> bounds = {0.5, 1.5};
  HistogramFamily& histograms = registry.RegisterHistogram("obs", "Obs.", {}, bounds);
  constexpr int kThreads = 8;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share a child, half create theirs concurrently.
      Counter& shared = counters.WithLabels({"shared"});
      Counter& own = counters.WithLabels({t % 2 == 0 ? "even" : "odd"});
      Histogram& histogram = histograms.WithLabels({});
      for (int i = 0; i < kIterations; ++i) {
        shared.Increment();
        own.Increment(0.5);
        gauge.Increment();
        gauge.Decrement();
        histogram.Observe(i % 2);  // 0 -> le 0.5, 1 -> le 1.5; sums are exact in binary
        if (i % 5000 == 0) (void)registry.Render();  // scrapes race with the updates
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counters.WithLabels({"shared"}).Value(), kThreads * kIterations);
  EXPECT_EQ(counters.WithLabels({"even"}).Value(), kThreads / 2 * kIterations * 0.5);
  EXPECT_EQ(gauge.Value(), 0);
  const prometheus::ClientMetric::Histogram snapshot =
      histograms.WithLabels({}).Collect().histogram;
  ASSERT_EQ(snapshot.bucket.size(), 3u);
  EXPECT_EQ(snapshot.bucket[0].cumulative_count, kThreads * kIterations / 2);
  EXPECT_EQ(snapshot.bucket[1].cumulative_count, kThreads * kIterations);
  EXPECT_EQ(snapshot.bucket[2].cumulative_count, kThreads * kIterations);
  EXPECT_EQ(snapshot.sample_sum, kThreads * kIterations / 2);
  EXPECT_THAT(Lines(registry.Render()),
              testing::Contains("ops_total{thread_group=\"shared\"} 160000"));
}

TEST(MetricsTest, ConcurrentRegistrationReturnsOneFamily) {
  MetricsRegistry registry;
  std::vector<CounterFamily*> seen(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] { seen[t] = &registry.RegisterCounter("r_total", "R.", {"x"}); });
  }
  for (std::thread& thread : threads) thread.join();
  for (CounterFamily* family : seen) EXPECT_EQ(family, seen[0]);
  EXPECT_THAT(seen, testing::Not(IsEmpty()));
}

}  // namespace
}  // namespace gputopo::observability
