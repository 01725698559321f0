#include "train/resume_check.h"

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "psflow/status_macros.h"
#include "train/run_record.h"

namespace psflow::internal {
namespace {

using json = nlohmann::json;

// The name of the newest checkpoint of trained steps in <run_dir>/checkpoints
// ("ckpt-<N>", N > 0), or empty.
std::string latest_trained_checkpoint(const std::string& run_dir) {
  std::error_code ec;
  int64_t latest = 0;
  for (std::filesystem::directory_iterator it(run_dir + "/checkpoints", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int64_t step = 0;
    if (name.rfind("ckpt-", 0) == 0 && absl::SimpleAtoi(name.substr(5), &step) && step > latest &&
        it->is_directory(ec)) {
      latest = step;
    }
  }
  return latest > 0 ? absl::StrCat("ckpt-", latest) : "";
}

std::string as_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "--batch-size 32", or "without --data-dir" for an empty value.
std::string given(const char* flag, const json& value) {
  const std::string text = as_text(value);
  return text.empty() ? absl::StrCat("without ", flag) : absl::StrCat("with ", flag, " ", text);
}

}  // namespace

absl::Status check_resume_options(const TrainOptions& options) {
  if (options.run_dir.empty()) return absl::OkStatus();
  const std::string checkpoint = latest_trained_checkpoint(options.run_dir);
  if (checkpoint.empty()) return absl::OkStatus();
  PSFLOW_ASSIGN_OR_RETURN(std::optional<TrainSummary> record, load_run_record(options.run_dir));
  if (!record.has_value()) return absl::OkStatus();  // Nothing says how it was trained.
  const json old = last_invocation_options(*record);
  const json now = json::parse(invocation_options_json(options, TrainSummary()));
  struct Fixed {
    const char* key;
    const char* flag;
    const char* why;
  };
  static constexpr Fixed kFixed[] = {
      {"model", "--model", "the checkpoints hold that model's variables"},
      {"batch_size", "--batch-size",
       "its steps count batches of that size, so another size would put the resume at the wrong "
       "epoch"},
      {"optimizer", "--optimizer", "the checkpoints hold that optimizer's slots"},
      {"data_dir", "--data-dir", "its steps were counted on that data"},
      {"seed", "--seed", "the seed chose its data order (and wide_deep's generated data)"},
  };
  for (const Fixed& f : kFixed) {
    if (!old.contains(f.key) || old[f.key] == now[f.key]) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "the run in ", options.run_dir, " (", checkpoint, ") was trained ",
        given(f.flag, old[f.key]), " (", f.why, "), and cannot resume ", given(f.flag, now[f.key]),
        "; resume ", given(f.flag, old[f.key]), ", or use another --run-dir for a new run"));
  }
  return absl::OkStatus();
}

}  // namespace psflow::internal
