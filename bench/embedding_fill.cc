// Fills dynamic embedding tables on real ps processes to many live rows
// through the normal lookup RPC path, and measures the memory a row takes
// on the ps against its raw size (issue 20: >= 20 million live rows, at most
// 1.5x key + value + slots). Run by bench/embedding_fill.py (`make bench`),
// never by ctest: it takes minutes and gigabytes.
//
//   build/bench-tools/embedding_fill --rows=20000000 --num_ps=2 --dim=16
//       --optimizer=adagrad --batch=65536 --json=out.json [--checkpoint=DIR]
//
// With --checkpoint, the filled table is then saved to DIR and restored
// from it (paged, docs/embeddings.md "Checkpoints"), reporting each one's
// time, rows/s and this process's (the coordinator's) peak RSS against the
// table's raw size.
// Prints progress (rows, rows/s, each ps's RSS) to stderr, and writes the
// figures as results.json entries to --json.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/dynamic_table.h"
#include "optimizer/optimizer.h"
#include "ps/client/variable_client.h"
#include "psflow/checkpoint.h"
#include "psflow/local_cluster.h"
#include "strategy/dynamic_embedding_internal.h"

namespace psflow::internal {
namespace {

// Thread-safety: a value type.
struct Flags {
  int64_t rows = 20'000'000;  // distinct keys looked up (live rows in total)
  int num_ps = 2;
  int64_t dim = 16;
  std::string optimizer = "adagrad";  // its slots are in every row
  int64_t batch = 65536;              // keys per lookup call, split over the ps tasks
  std::string json;                   // where the results.json entries go
  double progress_seconds = 10;
  std::string checkpoint;  // save to and restore from here (empty: no)
};

// --name=value flags; false (after a message) for anything else.
bool parse_flags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "unknown argument '%s'; flags are --name=value\n", arg.c_str());
      return false;
    }
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    try {
      if (name == "rows") {
        f.rows = std::stoll(value);
      } else if (name == "num_ps") {
        f.num_ps = std::stoi(value);
      } else if (name == "dim") {
        f.dim = std::stoll(value);
      } else if (name == "optimizer") {
        f.optimizer = value;
      } else if (name == "batch") {
        f.batch = std::stoll(value);
      } else if (name == "json") {
        f.json = value;
      } else if (name == "checkpoint") {
        f.checkpoint = value;
      } else if (name == "progress_seconds") {
        f.progress_seconds = std::stod(value);
      } else {
        std::fprintf(stderr, "unknown flag --%s\n", name.c_str());
        return false;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "bad value for --%s: '%s'\n", name.c_str(), value.c_str());
      return false;
    }
  }
  if (f.rows < 1 || f.num_ps < 1 || f.num_ps > 64 || f.batch < 1 || f.batch > (1 << 20)) {
    std::fprintf(stderr, "--rows and --batch (<= 1048576) must be >= 1, --num_ps in 1..64\n");
    return false;
  }
  return true;
}

// Resident set of a process, bytes (0 when unreadable).
int64_t rss_bytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// This process's peak RSS since the last reset_peak_rss(), bytes.
int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Linux: "5" resets the peak RSS (VmHWM) to the current RSS.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string s;
  std::getline(in, s);
  return s;
}

std::string json_entry(const std::string& name, double value, const std::string& unit,
                       const std::string& extra = "") {
  return absl::StrCat("{\"name\": \"", name, "\", \"value\": ", value, ", \"unit\": \"", unit,
                      "\", \"binary\": \"embedding_fill\"", extra, "}");
}

int run(const Flags& flags) {
  const int64_t total = flags.rows;
  const int num_ps = flags.num_ps;
  const int64_t batch = flags.batch;
  LocalClusterOptions options;
  options.num_ps = num_ps;
  options.num_workers = 0;
  options.include_chief = false;
  options.binary_path = PSFLOW_BINARY_PATH;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  std::vector<std::shared_ptr<VariableClient>> clients;
  std::vector<pid_t> pids;
  for (int i = 0; i < num_ps; ++i) {
    clients.push_back(make_grpc_variable_client(*(*cluster)->cluster_spec().task_address("ps", i),
                                                task_name("ps", i)));
    pids.push_back(*(*cluster)->pid("ps", i));
  }
  DynamicEmbeddingOptions o;
  o.dim = flags.dim;
  o.seed = 20;
  absl::StatusOr<OptimizerConfig::Kind> kind = optimizer_kind_from_name(flags.optimizer);
  if (!kind.ok()) {
    std::fprintf(stderr, "%s\n", kind.status().ToString().c_str());
    return 1;
  }
  o.optimizer.kind = *kind;
  const int slots = static_cast<int>(optimizer_slot_names(o.optimizer.kind).size());
  // Before the table: what the ps processes take empty.
  int64_t rss_empty = 0;
  for (pid_t p : pids) rss_empty += rss_bytes(p);
  absl::StatusOr<DynamicEmbedding> table = DynamicEmbeddingAccess::create("fill", o, clients);
  if (!table.ok()) {
    std::fprintf(stderr, "create: %s\n", table.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "filling %lld rows (dim %lld, %s, %d ps, %lld keys per call); ps RSS empty %.1f "
               "MiB, load %s\n",
               static_cast<long long>(total), static_cast<long long>(o.dim),
               flags.optimizer.c_str(), num_ps, static_cast<long long>(batch),
               static_cast<double>(rss_empty) / (1 << 20), load_average().c_str());
  const absl::Time start = absl::Now();
  absl::Time last = start;
  std::vector<int64_t> keys(static_cast<size_t>(batch));
  int64_t done = 0;
  // Distinct keys spread over the whole int64 range: i times an odd
  // constant is a bijection on 64-bit integers.
  constexpr uint64_t kSpread = 0x9E3779B97F4A7C15ULL;
  for (int64_t step = 0; done < total; ++step) {
    const int64_t n = std::min(batch, total - done);
    keys.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      keys[static_cast<size_t>(i)] =
          static_cast<int64_t>(static_cast<uint64_t>(done + i) * kSpread);
    }
    absl::StatusOr<Tensor> rows = table->lookup(Tensor::from_vector(keys, {n}), step);
    if (!rows.ok()) {
      std::fprintf(stderr, "lookup at %lld rows: %s\n", static_cast<long long>(done),
                   rows.status().ToString().c_str());
      return 1;
    }
    done += n;
    const absl::Time now = absl::Now();
    if (now - last >= absl::Seconds(flags.progress_seconds) || done == total) {
      last = now;
      std::string rss;
      for (pid_t p : pids) {
        absl::StrAppend(&rss, " ", static_cast<double>(rss_bytes(p)) / (1 << 20), " MiB");
      }
      std::fprintf(stderr, "%lld rows, %.0f rows/s, ps RSS%s\n", static_cast<long long>(done),
                   static_cast<double>(done) / absl::ToDoubleSeconds(now - start), rss.c_str());
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  absl::StatusOr<DynamicEmbeddingStats> stats = table->stats();
  if (!stats.ok()) {
    std::fprintf(stderr, "stats: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  int64_t rss_full = 0;
  for (pid_t p : pids) rss_full += rss_bytes(p);
  const double live = static_cast<double>(stats->rows);
  const double raw = 8.0 + 4.0 * static_cast<double>(o.dim) * (1 + slots) + 8.0;
  const double rss_per_row = static_cast<double>(rss_full - rss_empty) / live;
  const double table_per_row = static_cast<double>(stats->bytes - stats->sketch_bytes) / live;
  std::fprintf(stderr,
               "live rows %lld in %.1f s (%.0f rows/s); ps RSS %.1f MiB (%.1f MiB empty): %.1f "
               "bytes/row (%.2fx raw %.0f), table's own count %.1f bytes/row (%.2fx)\n",
               static_cast<long long>(stats->rows), seconds, live / seconds,
               static_cast<double>(rss_full) / (1 << 20),
               static_cast<double>(rss_empty) / (1 << 20), rss_per_row, rss_per_row / raw, raw,
               table_per_row, table_per_row / raw);
  const std::string prefix = absl::StrCat("embedding_fill/", o.dim, "/", num_ps, "ps/");
  const std::string raw_baseline = absl::StrCat(
      ", \"baseline_name\": \"raw key + value + slots + last seen\", "
      "\"baseline_value\": ",
      raw);
  std::vector<std::string> entries = {
      json_entry(prefix + "live_rows", live, "rows"),
      json_entry(prefix + "rows_per_s", live / seconds, "rows/s"),
      json_entry(prefix + "ps_rss_bytes", static_cast<double>(rss_full), "bytes"),
      json_entry(prefix + "rss_bytes_per_row", rss_per_row, "bytes",
                 absl::StrCat(raw_baseline, ", \"ratio\": ", rss_per_row / raw)),
      json_entry(prefix + "table_bytes_per_row", table_per_row, "bytes",
                 absl::StrCat(raw_baseline, ", \"ratio\": ", table_per_row / raw)),
  };
  if (!flags.checkpoint.empty()) {
    absl::StatusOr<Checkpoint> ckpt = Checkpoint::create({}, std::nullopt, {{"fill", *table}});
    if (!ckpt.ok()) {
      std::fprintf(stderr, "checkpoint: %s\n", ckpt.status().ToString().c_str());
      return 1;
    }
    const double table_raw = raw * live;
    const std::string raw_size = absl::StrCat(
        ", \"baseline_name\": \"the table's raw size (rows x raw row)\", \"baseline_value\": ",
        table_raw);
    struct Phase {
      const char* name;
      std::function<absl::Status()> run;
    };
    const Phase phases[] = {{"save", [&] { return ckpt->save(flags.checkpoint); }},
                            {"restore", [&] { return ckpt->restore(flags.checkpoint); }}};
    for (const Phase& phase : phases) {
      const int64_t rss_before = rss_bytes(::getpid());
      reset_peak_rss();
      const absl::Time t0 = absl::Now();
      absl::Status s = phase.run();
      const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
      const auto peak = static_cast<double>(peak_rss_bytes());
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", phase.name, s.ToString().c_str());
        return 1;
      }
      std::fprintf(stderr,
                   "%s of %lld rows: %.1f s (%.0f rows/s); coordinator peak RSS %.1f MiB (%.1f "
                   "MiB before), %.2fx the table's raw %.1f MiB\n",
                   phase.name, static_cast<long long>(stats->rows), secs, live / secs,
                   peak / (1 << 20), static_cast<double>(rss_before) / (1 << 20), peak / table_raw,
                   table_raw / (1 << 20));
      const std::string p = absl::StrCat(prefix, "checkpoint_", phase.name, "_");
      entries.push_back(json_entry(p + "seconds", secs, "s"));
      entries.push_back(json_entry(p + "rows_per_s", live / secs, "rows/s"));
      entries.push_back(json_entry(p + "coordinator_peak_rss_bytes", peak, "bytes",
                                   absl::StrCat(raw_size, ", \"ratio\": ", peak / table_raw)));
    }
    absl::StatusOr<DynamicEmbeddingStats> after = table->stats();
    if (!after.ok() || after->rows != stats->rows) {
      std::fprintf(
          stderr, "after the restore: %s rows, not %lld\n",
          after.ok() ? std::to_string(after->rows).c_str() : after.status().ToString().c_str(),
          static_cast<long long>(stats->rows));
      return 1;
    }
  }
  const std::string path = flags.json;
  if (!path.empty()) {
    std::ofstream out(path, std::ios::trunc);
    out << "[\n";
    for (size_t i = 0; i < entries.size(); ++i) {
      out << "  " << entries[i] << (i + 1 < entries.size() ? ",\n" : "\n");
    }
    out << "]\n";
  }
  (*cluster)->stop();
  return 0;
}

}  // namespace
}  // namespace psflow::internal

int main(int argc, char** argv) {
  psflow::internal::Flags flags;
  if (!psflow::internal::parse_flags(argc, argv, flags)) return 2;
  return psflow::internal::run(flags);
}
