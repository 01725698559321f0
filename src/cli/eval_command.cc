// `psflow eval`: the sidecar evaluator of a training run.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/commands.h"
#include "cli/signals.h"
#include "cli/tls_flags.h"
#include "train/evaluator.h"

namespace psflow::internal {
namespace {

struct EvalFlags {
  std::string run_dir;
  bool once = false;
  double timeout_seconds = 24 * 3600;
  TlsFlags tls;
};

constexpr CommandHelp kEvalHelp = {
    "eval", "Evaluate a training run's checkpoints as they appear (sidecar evaluator)",
    R"(Runs beside `psflow train --run-dir DIR`: evaluates each new checkpoint of
DIR/checkpoints on the test set, reading the checkpoint files only (it never
talks to the parameter servers), appends the metrics to DIR/eval/metrics.jsonl
(test loss and accuracy, and test AUC for wide_deep and dlrm) and TensorBoard events to
DIR/eval, and exits once training has finished. Any model and strategy: it
rebuilds the model and its test set from DIR/config.json, which psflow train
writes when training starts (a run without one is named, with the reason).

Stopping: on the first SIGTERM or SIGINT it finishes the checkpoint it is
evaluating (if any), evaluates no other and exits within 10 s with status
128+signal (143 for SIGTERM, 130 for SIGINT); a second signal exits at once. A
rerun goes on with the checkpoints not evaluated yet.

--tls-dir, --tls-ca/--tls-cert/--tls-key and --insecure are accepted (and
checked) like those of `psflow train`, so that one deployment passes them to
every task; the evaluator opens no connection.)"};

void add_eval_flags(CLI::App& app, EvalFlags& flags) {
  app.add_option("--run-dir", flags.run_dir, "The training run directory")->required();
  app.add_flag("--once", flags.once, "Evaluate the checkpoints present now, then exit");
  app.add_option("--timeout", flags.timeout_seconds,
                 "Seconds to keep watching for training to finish")
      ->capture_default_str();
  add_tls_flags(app, flags.tls);
}

int run_eval(const EvalFlags& flags) {
  if (!(flags.timeout_seconds > 0)) {
    std::fprintf(stderr, "psflow eval: --timeout %g must be a positive number of seconds\n",
                 flags.timeout_seconds);
    return kExitUsage;
  }
  if (absl::StatusOr<TlsOptions> tls = tls_options_from_flags(flags.tls); !tls.ok()) {
    std::fprintf(stderr, "psflow eval: %s\n", std::string(tls.status().message()).c_str());
    return kExitUsage;
  }
  SignalShutdown shutdown;
  EvaluatorOptions options;
  options.run_dir = flags.run_dir;
  options.once = flags.once;
  options.timeout = absl::Seconds(flags.timeout_seconds);
  options.stop = &shutdown.stop_request();
  (void)options.stop->set_activity(
      {absl::StrCat("evaluating a checkpoint of ", flags.run_dir), /*at_once=*/false});
  absl::StatusOr<int> evaluated = run_evaluator(options);
  if (std::optional<int> stopped = shutdown.exit_code(); stopped.has_value()) {
    std::printf("eval: %s; metrics so far in %s/eval/metrics.jsonl\n",
                std::string(options.stop->reason().message()).c_str(), flags.run_dir.c_str());
    std::fflush(stdout);
    return *stopped;
  }
  if (!evaluated.ok()) {
    std::fprintf(stderr, "psflow eval: %s\n", std::string(evaluated.status().message()).c_str());
    return absl::IsNotFound(evaluated.status()) || absl::IsInvalidArgument(evaluated.status())
               ? kExitUsage
               : kExitFailure;
  }
  std::printf("eval: %d checkpoint(s) evaluated; metrics in %s/eval/metrics.jsonl\n", *evaluated,
              flags.run_dir.c_str());
  return kExitOk;
}

}  // namespace

Command add_eval_command(CLI::App& parent) {
  return add_command(parent, kEvalHelp, add_eval_flags, run_eval);
}

}  // namespace psflow::internal
