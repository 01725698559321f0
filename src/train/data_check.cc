#include "train/data_check.h"

#include <unistd.h>

#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "psflow/per_worker.h"
#include "psflow/remote_executor.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "(unknown host)";
  return name;
}

absl::Status on_host(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("on host ", host_name(), ": ", status.message()));
}

absl::StatusOr<std::optional<Structure>> first_element(const WorkerContext& ctx,
                                                       const Structure& args) {
  if (!args.is_dict() || args.fields().count("dataset") == 0 ||
      args["dataset"].kind() != Structure::Kind::kString || args.fields().count("args") == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCheckDataFunction, " takes {\"dataset\": name, \"args\": arguments}; got ",
                     args.debug_string()));
  }
  PSFLOW_ASSIGN_OR_RETURN(DatasetFunction make,
                          DatasetRegistry::global().lookup(args["dataset"].string_value()));
  DatasetContext dataset_ctx;
  dataset_ctx.worker_index = ctx.worker_index();
  dataset_ctx.num_workers = ctx.num_workers();
  PSFLOW_ASSIGN_OR_RETURN(Dataset dataset, make(dataset_ctx, args["args"]));
  DatasetIterator it = dataset.make_iterator();
  return it.get_next();
}

}  // namespace

absl::StatusOr<Structure> check_data(WorkerContext& ctx, const Structure& args) {
  absl::StatusOr<std::optional<Structure>> element = first_element(ctx, args);
  if (!element.ok()) return on_host(element.status());
  if (!element->has_value()) {
    return on_host(absl::FailedPreconditionError("the training data holds no example"));
  }
  return Structure::dict({{"host", Structure(host_name())}});
}

absl::Status check_workers_data(const ClusterSpec& spec, std::string_view dataset,
                                const Structure& args, absl::Duration timeout) {
  const std::vector<int> workers = spec.task_indices(kWorkerJob);
  std::vector<std::string> problems(workers.size());
  const Structure request =
      Structure::dict({{"dataset", Structure(std::string(dataset))}, {"args", args}});
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::string> address = spec.task_address(kWorkerJob, workers[i]);
      if (!address.ok()) return;
      RemoteExecutorOptions options;
      options.rpc_timeout = timeout;
      options.compute_timeout = timeout;
      absl::StatusOr<std::unique_ptr<RemoteExecutor>> executor =
          RemoteExecutor::create(*address, options);
      if (!executor.ok()) return;  // unreachable: the coordinator's business
      absl::StatusOr<Structure> checked = (*executor)->call_function(kCheckDataFunction, request);
      if (checked.ok() || absl::IsUnavailable(checked.status())) return;
      // The executor's error names the task and its address.
      problems[i] = std::string(checked.status().message());
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::string> found;
  for (std::string& p : problems) {
    if (!p.empty()) found.push_back(std::move(p));
  }
  if (found.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      found.size(), " worker(s) cannot read their training data, so training did not start: ",
      absl::StrJoin(found, "; "),
      ". Every worker reads the data on its own host: put it at the same path on every host, "
      "or mount one shared directory there, and pass that path as --data-dir"));
}

}  // namespace psflow::internal
