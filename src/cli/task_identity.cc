#include "cli/task_identity.h"

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/cluster_spec.h"
#include "rpc/channel.h"

namespace psflow::internal {
namespace {

std::string_view other_job(std::string_view job) { return job == kPsJob ? kWorkerJob : kPsJob; }

absl::Status mismatch(std::string_view address, std::string_view job, int index,
                      const v1::GetStatusResponse& answer) {
  const std::string expected = absl::StrCat(av(job), ":", index);
  const std::string actual = absl::StrCat(answer.job_name(), ":", answer.task_index());
  const std::string swapped =
      answer.job_name() == job
          ? absl::StrCat("the TF_CONFIG addresses of ", expected, " and ", actual)
          : absl::StrCat("the TF_CONFIG addresses of ", av(job), " and ", answer.job_name());
  return absl::FailedPreconditionError(
      absl::StrCat(expected, " at ", av(address), " answers as ", actual, "; ", swapped,
                   " look swapped (every task must get the same cluster in its TF_CONFIG)"));
}

}  // namespace

absl::Status check_task_identity(std::string_view address, std::string_view job, int index,
                                 absl::Time deadline) {
  absl::StatusOr<v1::GetStatusResponse> status = get_status(address, job, index, deadline);
  if (status.ok()) {
    if (status->job_name() == job && status->task_index() == index) return absl::OkStatus();
    return mismatch(address, job, index, *status);
  }
  if (!absl::IsUnimplemented(status.status())) {
    // Only a mismatch is FAILED_PRECONDITION (the caller's contract).
    if (absl::IsFailedPrecondition(status.status())) {
      return absl::UnavailableError(status.status().message());
    }
    return status.status();
  }
  // Not `job`'s service: is it the other job's task?
  absl::StatusOr<v1::GetStatusResponse> other = get_status(address, other_job(job), 0, deadline);
  if (other.ok()) return mismatch(address, job, index, *other);
  return absl::FailedPreconditionError(
      absl::StrCat(av(job), ":", index, " at ", av(address),
                   " answers health checks but serves neither ps nor worker calls; is another "
                   "program listening at that address?"));
}

}  // namespace psflow::internal
