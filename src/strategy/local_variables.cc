#include "strategy/local_variables.h"

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "ps/server/local_variable_client.h"
#include "psflow/cluster_spec.h"
#include "strategy/name_registry.h"

namespace psflow::internal {
namespace {

// Thread-safety: `names` is guarded by `mu`; the client is thread-safe.
struct LocalVariables {
  absl::Mutex mu;
  NameRegistry names ABSL_GUARDED_BY(mu);
  std::shared_ptr<VariableClient> client = make_local_variable_client(
      std::make_shared<VariableStore>(), task_name(kLocalJob, kLocalTask));
};

// Leaked on purpose: handles may be used until the process exits.
LocalVariables& local() {
  static LocalVariables* const instance = new LocalVariables();
  return *instance;
}

}  // namespace

const std::shared_ptr<VariableClient>& local_variable_client() { return local().client; }

std::string reserve_local_name(std::string_view base, int num_parts) {
  LocalVariables& l = local();
  absl::MutexLock lock(&l.mu);
  return l.names.reserve(base, num_parts);
}

}  // namespace psflow::internal
