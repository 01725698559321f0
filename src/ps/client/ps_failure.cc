#include "ps/client/ps_failure.h"

#include <utility>

#include "ps/request/lost_state.h"

namespace psflow::internal {
namespace {

// Thread-safety: as its inner client; it holds no state of its own.
class PsFailureClient final : public VariableClient {
 public:
  explicit PsFailureClient(std::unique_ptr<VariableClient> inner) : inner_(std::move(inner)) {}

  const std::string& task_name() const override { return inner_->task_name(); }
  bool uses_shared_memory() const override { return inner_->uses_shared_memory(); }

  void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) override {
    inner_->execute_batch_async(std::move(batch), deadline,
                                [done = std::move(done)](absl::StatusOr<std::vector<Tensor>> r) {
                                  if (!r.ok()) r = as_ps_failure(std::move(r).status());
                                  done(std::move(r));
                                });
  }

 private:
  std::unique_ptr<VariableClient> inner_;
};

}  // namespace

bool is_ps_lost_state(const absl::Status& status) {
  return absl::IsNotFound(status) && status.GetPayload(kPsHoldsNothingPayload).has_value();
}

absl::Status as_ps_failure(absl::Status status) {
  if (!is_ps_lost_state(status)) return status;
  absl::Status failure(absl::StatusCode::kUnavailable, status.message());
  status.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
    failure.SetPayload(type_url, payload);
  });
  return failure;
}

std::unique_ptr<VariableClient> make_ps_failure_client(std::unique_ptr<VariableClient> inner) {
  return std::make_unique<PsFailureClient>(std::move(inner));
}

}  // namespace psflow::internal
