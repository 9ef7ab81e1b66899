// Prometheus text and the dashboard's JSON from one router_stats (gateway/openai/metrics_export): pure.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/openai/metrics_export.hpp"

using namespace lf;
using namespace lf::gateway;

namespace {

actors::router_stats sample_stats() {
  actors::router_stats rs;
  rs.workers = 1;
  rs.accepted = 5;
  rs.completed = 3;
  actors::worker_load l;
  l.wid = actors::worker_id{1};
  l.name = "node-a/1";
  l.running = 2;
  l.total_blocks = 100;
  l.free_blocks = 75;
  l.adapters = {"kjv"};
  l.servable = {"kjv", "pirate"};
  l.preemptions = 4;
  l.spec_proposed = 40;
  l.spec_accepted = 10;
  l.spec_rows = 8;
  l.spec_emitted = 18;
  l.spec_draft_tokens = 12;
  l.spec_draft_ms = 1500;
  l.loads_by_adapter = {{"kjv", 2, 250.0, 4096}, {"pirate", 1, 80.0, 4096}};
  rs.loads.push_back(l);
  actors::worker_metrics m;
  m.wid = actors::worker_id{1};
  m.name = "node-a/1";
  m.m.finished["eos"] = 2;
  m.m.finished["length"] = 1;
  m.m.generation_tokens = 30;
  m.m.ttft_seconds.observe(0.003);
  m.m.ttft_seconds.observe(0.3);
  m.m.ttft_seconds.observe(500);
  rs.metrics.push_back(m);
  actors::worker_metrics none;
  none.name = "-";
  none.m.errors["overloaded"] = 2;
  rs.metrics.push_back(none);
  return rs;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

} // namespace

TEST_CASE("histograms count per bucket and merge") {
  histogram h({1.0, 2.0});
  h.observe(0.5);
  h.observe(1.0);  // upper bounds are inclusive (Prometheus's le)
  h.observe(1.5);
  h.observe(9.0);
  CHECK(h.counts == std::vector<std::uint64_t>{2, 1, 1});
  CHECK(h.count == 4);
  CHECK(h.sum == Approx(12.0));
  histogram g({1.0, 2.0});
  g.observe(3.0);
  h.merge(g);
  CHECK(h.counts == std::vector<std::uint64_t>{2, 1, 2});
  CHECK_THROWS_AS(h.merge(histogram({5.0})), std::invalid_argument);
}

TEST_CASE("Prometheus text: typed metrics, per-worker labels, cumulative buckets") {
  const auto text = render_prometheus(sample_stats(), {});
  CHECK(has_line(text, "# TYPE lorafleet:requests_accepted_total counter"));
  CHECK(has_line(text, "lorafleet:requests_accepted_total 5"));
  CHECK(has_line(text, R"(lorafleet:request_success_total{worker="node-a/1",worker_id="1",finished_reason="eos"} 2)"));
  CHECK(has_line(text, R"(lorafleet:request_errors_total{worker="-",worker_id="0",code="overloaded"} 2)"));
  CHECK(has_line(text, R"(lorafleet:kv_blocks_used{worker="node-a/1",worker_id="1"} 25)"));
  CHECK(has_line(text, R"(lorafleet:kv_cache_usage_perc{worker="node-a/1",worker_id="1"} 0.25)"));
  CHECK(has_line(text, R"(lorafleet:num_preemptions_total{worker="node-a/1",worker_id="1"} 4)"));
  CHECK(has_line(text, R"(lorafleet:spec_decode_num_draft_tokens_total{worker="node-a/1",worker_id="1"} 40)"));
  CHECK(has_line(text, R"(lorafleet:spec_decode_num_accepted_tokens_total{worker="node-a/1",worker_id="1"} 10)"));
  CHECK(has_line(text, R"(lorafleet:spec_decode_draft_acceptance_rate{worker="node-a/1",worker_id="1"} 0.25)"));
  CHECK(has_line(text, R"(lorafleet:spec_decode_num_draft_model_tokens_total{worker="node-a/1",worker_id="1"} 12)"));
  CHECK(has_line(text, R"(lorafleet:spec_decode_draft_model_seconds_total{worker="node-a/1",worker_id="1"} 1.5)"));
  CHECK(has_line(text, R"(lorafleet:adapter_resident{worker="node-a/1",worker_id="1",adapter="kjv"} 1)"));
  CHECK(has_line(text, R"(lorafleet:adapter_loads_by_name_total{worker="node-a/1",worker_id="1",adapter="pirate"} 1)"));
  CHECK(has_line(text, R"(lorafleet:adapter_last_load_seconds{worker="node-a/1",worker_id="1",adapter="kjv"} 0.25)"));
  CHECK(has_line(text, "# TYPE lorafleet:time_to_first_token_seconds histogram"));
  CHECK(has_line(text, R"(lorafleet:time_to_first_token_seconds_bucket{worker="node-a/1",worker_id="1",le="0.005"} 1)"));
  CHECK(has_line(text, R"(lorafleet:time_to_first_token_seconds_bucket{worker="node-a/1",worker_id="1",le="0.5"} 2)"));
  CHECK(has_line(text, R"(lorafleet:time_to_first_token_seconds_bucket{worker="node-a/1",worker_id="1",le="80"} 2)"));
  CHECK(has_line(text, R"(lorafleet:time_to_first_token_seconds_bucket{worker="node-a/1",worker_id="1",le="+Inf"} 3)"));
  CHECK(has_line(text, R"(lorafleet:time_to_first_token_seconds_count{worker="node-a/1",worker_id="1"} 3)"));
}

TEST_CASE("Prometheus text: vLLM's model-server gauges over the router's queue and every worker") {
  auto rs = sample_stats();
  rs.queued = 3;
  rs.loads[0].waiting = 4;
  rs.loads[0].running_adapters = {"kjv@1"};
  rs.loads[0].max_adapters = 8;
  auto second = rs.loads[0];
  second.wid = actors::worker_id{2};
  second.name = "node-b/1";
  second.waiting = 1;
  second.running = 5;
  second.free_blocks = 100;
  second.running_adapters = {"kjv@1", "pirate@2"};
  second.waiting_adapters = {"styles/x@1"};
  rs.loads.push_back(second);
  http_side h;
  h.model = "gpt2";
  h.time_ms = 1764300000500;
  const auto text = render_prometheus(rs, h);
  CHECK(has_line(text, "# TYPE vllm:num_requests_waiting gauge"));
  CHECK(has_line(text, R"(vllm:num_requests_waiting{model_name="gpt2"} 8)"));  // 3 queued + 4 + 1
  CHECK(has_line(text, R"(vllm:num_requests_running{model_name="gpt2"} 7)"));
  CHECK(has_line(text, R"(vllm:kv_cache_usage_perc{model_name="gpt2"} 0.125)"));  // 25 of 200 blocks
  CHECK(has_line(text, R"(vllm:lora_requests_info{running_lora_adapters="kjv@1,pirate@2",)"
                       R"(waiting_lora_adapters="styles/x@1",max_lora="16"} 1764300000.5)"));
}

TEST_CASE("label values are escaped") {
  auto rs = sample_stats();
  rs.loads[0].name = "a\"b\\c\nd";
  const auto text = render_prometheus(rs, {});
  CHECK(text.find(R"(worker="a\"b\\c\nd")") != std::string::npos);
}

TEST_CASE("the dashboard JSON carries the same numbers") {
  auto j = nlohmann::json::parse(render_stats_json(sample_stats(), {"m", 1.5, 42, 3, 1, {}}));
  CHECK(j["model"] == "m");
  CHECK(j["router"]["accepted"] == 5);
  CHECK(j["router"]["generation_tokens"] == 30);
  REQUIRE(j["workers"].size() == 1);
  CHECK(j["workers"][0]["node"] == "node-a");
  CHECK(j["workers"][0]["kv_used"] == 25);
  CHECK(j["workers"][0]["state"] == "serving");
  CHECK(j["latency"]["ttft_seconds"]["count"] == 3);
  CHECK(j["latency"]["ttft_seconds"]["counts"].size() == j["latency"]["ttft_seconds"]["bounds"].size() + 1);
  CHECK(j["http"]["live"] == 3);
  CHECK(servable_adapters(sample_stats()) == std::vector<std::string>{"kjv", "pirate"});
}

TEST_CASE("per-key rate-limit counters: labelled by the key's name, on /metrics and in the JSON") {
  http_side h;
  h.keys["alice"] = key_rate_counts{5, 2, 210};
  h.keys["team \"x\""] = key_rate_counts{1, 0, 42};
  const auto text = render_prometheus(sample_stats(), h);
  CHECK(has_line(text, "# TYPE lorafleet:key_requests_admitted_total counter"));
  CHECK(has_line(text, R"(lorafleet:key_requests_admitted_total{key="alice"} 5)"));
  CHECK(has_line(text, R"(lorafleet:key_requests_rate_limited_total{key="alice"} 2)"));
  CHECK(has_line(text, R"(lorafleet:key_tokens_charged_total{key="alice"} 210)"));
  CHECK(has_line(text, R"(lorafleet:key_tokens_charged_total{key="team \"x\""} 42)"));  // escaped
  CHECK(has_line(text, R"(lorafleet:key_requests_rate_limited_total{key="team \"x\""} 0)"));
  // No limited key charged yet: no per-key series at all (no HELP line without samples).
  const auto none = render_prometheus(sample_stats(), {});
  CHECK(none.find("lorafleet:key_") == std::string::npos);

  auto j = nlohmann::json::parse(render_stats_json(sample_stats(), h));
  CHECK(j["keys"]["alice"]["admitted"] == 5);
  CHECK(j["keys"]["alice"]["rate_limited"] == 2);
  CHECK(j["keys"]["alice"]["tokens"] == 210);
  CHECK(j["keys"]["team \"x\""]["tokens"] == 42);
  CHECK(nlohmann::json::parse(render_stats_json(sample_stats(), {}))["keys"].empty());
}
