// Whether the task serving at a TF_CONFIG address is the task TF_CONFIG
// says it is: the chief asks it (GetStatus) once it answers health checks.
#ifndef PSFLOW_CLI_TASK_IDENTITY_H_
#define PSFLOW_CLI_TASK_IDENTITY_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace psflow::internal {

// OK when the task at `address` answers GetStatus as `job`:`index`.
// FAILED_PRECONDITION naming both roles when it answers as another task:
// "ps:0 at host:port answers as worker:1; the TF_CONFIG addresses of ps and
// worker look swapped" (or of ps:0 and ps:1). A task of the other job does
// not serve `job`'s service (it would answer UNIMPLEMENTED with no reason),
// so the other job's GetStatus is asked too; FAILED_PRECONDITION as well
// when it serves neither. Other errors (a task that went away meanwhile)
// come back as they are, never as FAILED_PRECONDITION. Bounded by
// `deadline`.
[[nodiscard]] absl::Status check_task_identity(std::string_view address, std::string_view job,
                                               int index, absl::Time deadline);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_TASK_IDENTITY_H_
