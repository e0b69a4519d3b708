#include "faults.h"

#include <time.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "errors.h"
#include "init.h"

namespace fk {

std::atomic<bool> g_faults_armed{false};

namespace {

// One rule: at `site`, with `probability` per call, inject `kind` (with `err`).
enum class RuleKind : int { kErrno = 0, kLose, kStorm, kDeaf, kTruncate, kHang };

struct Rule {
  FaultSite site;
  RuleKind kind;
  int err;
  double probability;
  std::atomic<uint64_t> count{0};
};

struct Config {
  std::vector<std::unique_ptr<Rule>> rules;
  uint32_t storm_ms = 50;
  uint32_t deaf_ms = 2000;
  uint32_t hang_ms = 2000;
  int64_t from_ns = 0;  // nothing is injected before this time (CLOCK_MONOTONIC)
};

std::mutex g_mu;  // the random generator and the configuration
std::mt19937_64 g_rng;
std::shared_ptr<Config> g_config;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

bool IsReceive(FaultSite site) {
  return site == FaultSite::kNetlinkRecv || site == FaultSite::kPacketRecv;
}

// configureFaults({seed, stormMs, deafMs, hangMs, delayMs, rules: [{site, kind, err,
// probability}]}) arms the faults (from delayMs on); configureFaults(null) disarms them.
Napi::Value ConfigureFaults(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info[0].IsNull() || info[0].IsUndefined()) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_faults_armed.store(false);
    g_config.reset();
    return env.Undefined();
  }
  if (!info[0].IsObject()) ThrowType(env, "configureFaults(spec | null)");
  Napi::Object spec = info[0].As<Napi::Object>();
  auto config = std::make_shared<Config>();
  auto num = [&](const char* key, double def) {
    Napi::Value v = spec.Get(key);
    return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : def;
  };
  config->storm_ms = static_cast<uint32_t>(num("stormMs", 50));
  config->deaf_ms = static_cast<uint32_t>(num("deafMs", 2000));
  config->hang_ms = static_cast<uint32_t>(num("hangMs", 2000));
  config->from_ns = NowNs() + static_cast<int64_t>(num("delayMs", 0)) * 1000000;
  Napi::Value rules = spec.Get("rules");
  if (!rules.IsArray()) ThrowType(env, "configureFaults: rules must be an array");
  Napi::Array list = rules.As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Object r = list.Get(i).As<Napi::Object>();
    auto rule = std::make_unique<Rule>();
    int site = r.Get("site").ToNumber().Int32Value();
    int kind = r.Get("kind").ToNumber().Int32Value();
    if (site < 0 || site > 3 || kind < 0 || kind > 5) ThrowType(env, "configureFaults: bad rule");
    rule->site = static_cast<FaultSite>(site);
    rule->kind = static_cast<RuleKind>(kind);
    rule->err = r.Get("err").ToNumber().Int32Value();
    rule->probability = r.Get("probability").ToNumber().DoubleValue();
    config->rules.push_back(std::move(rule));
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_rng.seed(static_cast<uint64_t>(num("seed", 1)));
  g_config = config;
  g_faults_armed.store(!config->rules.empty());
  return env.Undefined();
}

// faultCounts(): how often each rule of the armed configuration fired, in rule order.
Napi::Value FaultCounts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Config> config;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    config = g_config;
  }
  Napi::Array out = Napi::Array::New(env);
  if (!config) return out;
  for (size_t i = 0; i < config->rules.size(); i++) {
    out.Set(static_cast<uint32_t>(i),
            Napi::Number::New(env, static_cast<double>(config->rules[i]->count.load())));
  }
  return out;
}

}  // namespace

Fault NextFault(FaultSite site, FaultState* state) {
  std::lock_guard<std::mutex> lock(g_mu);
  Fault f;
  if (!g_config) return f;
  const Config& c = *g_config;
  int64_t now = NowNs();
  if (now < c.from_ns) return f;
  if (IsReceive(site) && state != nullptr) {
    if (state->pending_err != 0) {
      Fault pending{Fault::kErrno, state->pending_err, 0, 1.0};
      state->pending_err = 0;
      return pending;
    }
    if (now < state->deaf_until_ns) return Fault{Fault::kDiscard, 0, 0, 1.0};
    if (now < state->empty_until_ns) return Fault{Fault::kEmpty, 0, 0, 1.0};
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (const auto& r : c.rules) {
    if (r->site != site || uniform(g_rng) >= r->probability) continue;
    r->count.fetch_add(1);
    switch (r->kind) {
      case RuleKind::kErrno:
        return Fault{Fault::kErrno, r->err, 0, 1.0};
      case RuleKind::kLose:
        return Fault{Fault::kLose, r->err, 0, 1.0};
      case RuleKind::kStorm:
        if (state != nullptr) state->empty_until_ns = now + int64_t{c.storm_ms} * 1000000;
        return Fault{Fault::kEmpty, 0, 0, 1.0};
      case RuleKind::kDeaf:
        if (state != nullptr) state->deaf_until_ns = now + int64_t{c.deaf_ms} * 1000000;
        return Fault{Fault::kDiscard, 0, 0, 1.0};
      case RuleKind::kTruncate:
        return Fault{Fault::kTruncate, 0, 0, uniform(g_rng)};
      case RuleKind::kHang:
        return Fault{Fault::kHang, 0, c.hang_ms, 1.0};
    }
  }
  return f;
}

void FaultSleep(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void InitFaults(Napi::Env env, Napi::Object exports) {
  exports.Set("configureFaults", Napi::Function::New(env, ConfigureFaults, "configureFaults"));
  exports.Set("faultCounts", Napi::Function::New(env, FaultCounts, "faultCounts"));
}

}  // namespace fk
