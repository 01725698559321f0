#include "ps/client/retrying_variable_client.h"

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "ps/request/update_key.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

// Answers each call with the next scripted status (OK once the script is
// used up) and counts the calls. Thread-safety: thread-safe.
class ScriptedClient final : public VariableClient {
 public:
  explicit ScriptedClient(std::vector<absl::Status> script, std::atomic<int>* calls)
      : script_(script.begin(), script.end()), calls_(calls) {}

  const std::string& task_name() const override { return name_; }

  void execute_batch_async(ExecuteBatch batch, absl::Time, BatchCallback done) override {
    absl::Status s = next();
    if (s.ok()) {
      done(std::vector<Tensor>(batch.ops.size()));
    } else {
      done(s);
    }
  }

 private:
  absl::Status next() {
    calls_->fetch_add(1);
    absl::MutexLock lock(&mu_);
    if (script_.empty()) return absl::OkStatus();
    absl::Status s = script_.front();
    script_.pop_front();
    return s;
  }

  const std::string name_ = "/job:ps/replica:0/task:0";
  absl::Mutex mu_;
  std::deque<absl::Status> script_ ABSL_GUARDED_BY(mu_);
  std::atomic<int>* calls_;
};

ExecuteBatch batch_of(Op::Kind kind) {
  ExecuteBatch batch;
  VariableOpArgs op;
  op.kind = kind;
  op.variable = "v";
  batch.ops.push_back(op);
  return batch;
}

RetryPolicy fast_policy(int attempts) {
  RetryPolicy p;
  p.max_attempts = attempts;
  p.initial_backoff = absl::Milliseconds(1);
  p.max_backoff = absl::Milliseconds(4);
  return p;
}

absl::Time deadline() { return absl::Now() + absl::Seconds(30); }

// A retrying client over a ScriptedClient answering `script` (then OK),
// counting the attempts in *calls.
std::unique_ptr<VariableClient> scripted(std::vector<absl::Status> script, std::atomic<int>* calls,
                                         int attempts = 6) {
  return make_retrying_variable_client(std::make_unique<ScriptedClient>(std::move(script), calls),
                                       fast_policy(attempts));
}

TEST(RetryingVariableClientTest, TransientFailuresOfAReadAreRetriedUntilItSucceeds) {
  std::atomic<int> calls{0};
  auto client = scripted(
      std::vector<absl::Status>{absl::UnavailableError("down"), absl::DeadlineExceededError("slow"),
                                absl::AbortedError("restarted")},
      &calls);
  absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(batch_of(Op::READ), deadline());
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(calls.load(), 4);
}

TEST(RetryingVariableClientTest, GivesUpAfterMaxAttemptsWithTheLastStatus) {
  std::atomic<int> calls{0};
  auto client =
      scripted(std::vector<absl::Status>(10, absl::UnavailableError("ps 0 is down")), &calls, 3);
  absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(batch_of(Op::GATHER), deadline());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(r.status().message(), "ps 0 is down");
  EXPECT_EQ(calls.load(), 3);
}

TEST(RetryingVariableClientTest, FinalCodesAreNotRetried) {
  std::atomic<int> calls{0};
  auto client = scripted(std::vector<absl::Status>{absl::NotFoundError("no variable 'v'")}, &calls);
  absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(batch_of(Op::READ), deadline());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_EQ(calls.load(), 1);
}

TEST(RetryingVariableClientTest, AccumulatingUpdatesWithoutAKeyAreSentOnce) {
  std::atomic<int> calls{0};
  auto client = scripted(std::vector<absl::Status>{absl::UnavailableError("down")}, &calls);
  // The first attempt may have been applied: sending it again could add twice.
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of(Op::ASSIGN_ADD), deadline());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(calls.load(), 1);
}

TEST(RetryingVariableClientTest, KeyedUpdatesAreRetried) {
  std::atomic<int> calls{0};
  auto client = scripted(std::vector<absl::Status>{absl::UnavailableError("down")}, &calls);
  ExecuteBatch batch = batch_of(Op::APPLY_SPARSE);
  batch.update_key = UpdateKey{7, 3, 1};
  absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(std::move(batch), deadline());
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(calls.load(), 2);
}

TEST(RetryingVariableClientTest, NoRetryWaitsPastTheCallDeadline) {
  std::atomic<int> calls{0};
  RetryPolicy policy;
  policy.max_attempts = 100;
  policy.initial_backoff = absl::Seconds(10);
  auto client = make_retrying_variable_client(
      std::make_unique<ScriptedClient>(
          std::vector<absl::Status>(100, absl::UnavailableError("down")), &calls),
      policy);
  // A wait of at least 5 s does not fit in a 1 s deadline: the first
  // failure is final.
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of(Op::READ), absl::Now() + absl::Seconds(1));
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(calls.load(), 1);
}

TEST(RetryingVariableClientTest, DestroyingTheClientAnswersPendingRetries) {
  std::atomic<int> calls{0};
  RetryPolicy policy;
  policy.max_attempts = 5;
  policy.initial_backoff = absl::Seconds(60);
  policy.max_backoff = absl::Seconds(60);
  auto client = make_retrying_variable_client(
      std::make_unique<ScriptedClient>(std::vector<absl::Status>(5, absl::UnavailableError("down")),
                                       &calls),
      policy);
  absl::Notification answered;
  absl::Status got;
  client->execute_batch_async(batch_of(Op::READ), absl::Now() + absl::Seconds(600),
                              [&](absl::StatusOr<std::vector<Tensor>> r) {
                                got = r.status();
                                answered.Notify();
                              });
  EXPECT_FALSE(answered.HasBeenNotified());  // waiting 30-60 s to retry
  client.reset();
  ASSERT_TRUE(answered.HasBeenNotified());
  EXPECT_TRUE(absl::IsUnavailable(got)) << got;
  EXPECT_EQ(calls.load(), 1);
}

TEST(RetryingVariableClientTest, SafetyOfRepeatingByKind) {
  EXPECT_TRUE(is_safe_to_repeat(batch_of(Op::READ)));
  EXPECT_TRUE(is_safe_to_repeat(batch_of(Op::SNAPSHOT)));
  EXPECT_TRUE(is_safe_to_repeat(batch_of(Op::SCATTER_UPDATE)));
  EXPECT_TRUE(is_safe_to_repeat(batch_of(Op::RESTORE)));
  EXPECT_FALSE(is_safe_to_repeat(batch_of(Op::ASSIGN_SUB)));
  EXPECT_FALSE(is_safe_to_repeat(batch_of(Op::APPLY_DENSE)));
  EXPECT_FALSE(is_safe_to_repeat(batch_of(Op::DELETE)));
  ExecuteBatch mixed = batch_of(Op::READ);
  mixed.ops.push_back(batch_of(Op::SCATTER_MUL).ops[0]);
  EXPECT_FALSE(is_safe_to_repeat(mixed));
}

}  // namespace
}  // namespace psflow::internal
