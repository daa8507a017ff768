#include "src/observability/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gputopo::observability {
namespace {

[[noreturn]] void Die(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "metrics: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

// prometheus-cpp 1.0 writes HELP text as it is, so a backslash or a newline in it would break the
// exposition (Prometheus's parser takes `\\` and `\n` there as escapes and nothing else).
bool IsPlainHelp(std::string_view help) {
  return help.find_first_of("\\\n") == std::string_view::npos;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

prometheus::Labels LabelsOf(const std::vector<std::string>& names,
                            std::span<const std::string_view> values, std::string_view family) {
  if (values.size() != names.size()) Die("wrong number of label values for", family);
  prometheus::Labels labels;
  for (size_t i = 0; i < names.size(); ++i) labels.emplace(names[i], std::string(values[i]));
  return labels;
}

// Samples in label order, so that a render is the same whatever order children were made in.
void SortSamples(prometheus::MetricFamily& family) {
  for (prometheus::ClientMetric& m : family.metric) std::sort(m.label.begin(), m.label.end());
  std::stable_sort(family.metric.begin(), family.metric.end(),
                   [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
                     return a.label < b.label;
                   });
}

}  // namespace

template <typename Child>
Child& MetricFamily<Child>::WithLabels(std::span<const std::string_view> values) {
  const prometheus::Labels labels = LabelsOf(label_names_, values, family_.GetName());
  if constexpr (std::is_same_v<Child, Histogram>) {
    return family_.Add(labels, prometheus::Histogram::BucketBoundaries(bounds_));
  } else {
    return family_.Add(labels);
  }
}

template <typename Child>
Child& MetricFamily<Child>::WithLabels(const std::vector<std::string>& values) {
  std::vector<std::string_view> views(values.begin(), values.end());
  return WithLabels(std::span<const std::string_view>(views));
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

template <typename Child>
MetricFamily<Child>& MetricsRegistry::Register(prometheus::MetricType type, std::string_view name,
                                               std::string_view help,
                                               std::vector<std::string> label_names,
                                               std::vector<double> bounds) {
  if (!prometheus::CheckMetricName(std::string(name))) Die("invalid metric name", name);
  if (!IsPlainHelp(help)) Die("help text with a backslash or a newline", name);
  if (type == prometheus::MetricType::Counter && !EndsWith(name, "_total")) {
    Die("a counter's name must end in _total", name);
  }
  for (const std::string& label : label_names) {
    if (!prometheus::CheckLabelName(label) ||
        (type == prometheus::MetricType::Histogram && label == "le")) {
      Die("invalid label name", label);
    }
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      Die("bucket bounds must be finite and increasing", name);
    }
  }
  MutexLock lock(mutex_);
  if (auto it = registered_.find(name); it != registered_.end()) {
    if (it->second.type != type) Die("registered again with another type", name);
    auto& existing = *static_cast<MetricFamily<Child>*>(it->second.family.get());
    if (existing.label_names_ != label_names || existing.bounds_ != bounds) {
      Die("registered again with other labels or buckets", name);
    }
    return existing;
  }
  std::vector<std::string> samples = {std::string(name)};
  if (type == prometheus::MetricType::Histogram) {
    samples = {std::string(name) + "_bucket", std::string(name) + "_sum",
               std::string(name) + "_count", std::string(name)};
  }
  for (const std::string& sample : samples) {
    if (taken_.contains(sample)) Die("name already used by another family", sample);
  }
  prometheus::Family<Child>* family = nullptr;
  if constexpr (std::is_same_v<Child, Counter>) {
    family = &prometheus::BuildCounter()
                  .Name(std::string(name))
                  .Help(std::string(help))
                  .Register(registry_);
  } else if constexpr (std::is_same_v<Child, Gauge>) {
    family = &prometheus::BuildGauge()
                  .Name(std::string(name))
                  .Help(std::string(help))
                  .Register(registry_);
  } else {
    family = &prometheus::BuildHistogram()
                  .Name(std::string(name))
                  .Help(std::string(help))
                  .Register(registry_);
  }
  auto wrapper = std::shared_ptr<MetricFamily<Child>>(
      new MetricFamily<Child>(*family, std::move(label_names), std::move(bounds)));
  if (wrapper->label_names().empty()) (void)wrapper->WithLabels({});  // renders 0 at once
  for (const std::string& sample : samples) taken_.emplace(sample, type);
  registered_.emplace(std::string(name), Registered{type, wrapper});
  return *wrapper;
}

CounterFamily& MetricsRegistry::RegisterCounter(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names) {
  return Register<Counter>(prometheus::MetricType::Counter, name, help, std::move(label_names), {});
}

GaugeFamily& MetricsRegistry::RegisterGauge(std::string_view name, std::string_view help,
                                            std::vector<std::string> label_names) {
  return Register<Gauge>(prometheus::MetricType::Gauge, name, help, std::move(label_names), {});
}

HistogramFamily& MetricsRegistry::RegisterHistogram(std::string_view name, std::string_view help,
                                                    std::vector<std::string> label_names,
                                                    std::span<const double> bounds) {
  std::vector<double> kept(bounds.begin(), bounds.end());
  if (!kept.empty() && std::isinf(kept.back()) && kept.back() > 0) kept.pop_back();
  return Register<Histogram>(prometheus::MetricType::Histogram, name, help, std::move(label_names),
                             std::move(kept));
}

void MetricsRegistry::AddCollector(Collector collector) {
  MutexLock lock(mutex_);
  collectors_.push_back(std::move(collector));
}

void MetricsWriter::Write(prometheus::MetricType type, std::string_view name, std::string_view help,
                          std::span<const Label> labels, double value) {
  bool valid = prometheus::CheckMetricName(std::string(name)) && !taken_.contains(name) &&
               IsPlainHelp(help) &&
               (type != prometheus::MetricType::Counter || EndsWith(name, "_total"));
  for (size_t i = 0; i < labels.size(); ++i) {
    valid = valid && prometheus::CheckLabelName(std::string(labels[i].name));
    for (size_t j = 0; j < i; ++j) valid = valid && labels[j].name != labels[i].name;
  }
  auto it = families_.find(name);
  if (valid && it != families_.end() && it->second.type != type) valid = false;
  if (!valid) {
    ++dropped_;
    return;
  }
  if (it == families_.end()) {
    prometheus::MetricFamily family;
    family.name = std::string(name);
    family.help = std::string(help);
    family.type = type;
    it = families_.emplace(std::string(name), std::move(family)).first;
  }
  prometheus::ClientMetric sample;
  for (const Label& label : labels) {
    sample.label.push_back({std::string(label.name), std::string(label.value)});
  }
  std::sort(sample.label.begin(), sample.label.end());
  for (const prometheus::ClientMetric& earlier : it->second.metric) {
    if (earlier.label == sample.label) return;  // a repeated label set keeps its first value
  }
  if (type == prometheus::MetricType::Counter) {
    sample.counter.value = value;
  } else {
    sample.gauge.value = value;
  }
  it->second.metric.push_back(std::move(sample));
}

void MetricsWriter::WriteGauge(std::string_view name, std::string_view help,
                               std::span<const Label> labels, double value) {
  Write(prometheus::MetricType::Gauge, name, help, labels, value);
}

void MetricsWriter::WriteCounter(std::string_view name, std::string_view help,
                                 std::span<const Label> labels, double value) {
  Write(prometheus::MetricType::Counter, name, help, labels, value);
}

std::string MetricsRegistry::Render() const {
  std::vector<Collector> collectors;
  std::map<std::string, prometheus::MetricType, std::less<>> taken;
  {
    MutexLock lock(mutex_);
    collectors = collectors_;
    taken = taken_;
  }
  MetricsWriter writer(taken);
  for (const Collector& collector : collectors) collector(writer);
  std::vector<prometheus::MetricFamily> families = registry_.Collect();
  for (auto& [name, family] : writer.families_) families.push_back(std::move(family));
  std::erase_if(families, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  for (prometheus::MetricFamily& family : families) SortSamples(family);
  std::sort(families.begin(), families.end(),
            [](const prometheus::MetricFamily& a, const prometheus::MetricFamily& b) {
              return a.name < b.name;
            });
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace gputopo::observability
