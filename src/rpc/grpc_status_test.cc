#include "rpc/grpc_status.h"

#include <vector>

#include "absl/strings/cord.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

struct CodePair {
  absl::StatusCode absl_code;
  grpc::StatusCode grpc_code;
};

const std::vector<CodePair>& all_codes() {
  static const auto* codes = new std::vector<CodePair>{
      {absl::StatusCode::kOk, grpc::StatusCode::OK},
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  return *codes;
}

TEST(GrpcStatusTest, EveryCodeMapsBothWays) {
  for (const CodePair& pair : all_codes()) {
    EXPECT_EQ(from_grpc_code(pair.grpc_code), pair.absl_code) << static_cast<int>(pair.grpc_code);
    EXPECT_EQ(to_grpc_code(pair.absl_code), pair.grpc_code) << static_cast<int>(pair.absl_code);
  }
}

TEST(GrpcStatusTest, StatusesKeepCodeAndMessage) {
  for (const CodePair& pair : all_codes()) {
    if (pair.absl_code == absl::StatusCode::kOk) continue;
    const absl::Status from = from_grpc_status(grpc::Status(pair.grpc_code, "remote says no"));
    EXPECT_EQ(from.code(), pair.absl_code);
    EXPECT_EQ(from.message(), "remote says no");
    const grpc::Status to = to_grpc_status(absl::Status(pair.absl_code, "local says no"));
    EXPECT_EQ(to.error_code(), pair.grpc_code);
    EXPECT_EQ(to.error_message(), "local says no");
  }
  EXPECT_TRUE(from_grpc_status(grpc::Status::OK).ok());
  EXPECT_TRUE(to_grpc_status(absl::OkStatus()).ok());
}

// grpc::StatusCode has no fixed underlying type: only values its
// enumerators' bits can hold (0-31) may be cast to it (UBSan's enum check
// fails on 99), and gRPC maps any other code from the wire to UNKNOWN
// itself. 17 and 31 are such values without an enumerator.
TEST(GrpcStatusTest, OutOfRangeCodesBecomeUnknown) {
  EXPECT_EQ(from_grpc_code(static_cast<grpc::StatusCode>(17)), absl::StatusCode::kUnknown);
  EXPECT_EQ(from_grpc_code(static_cast<grpc::StatusCode>(31)), absl::StatusCode::kUnknown);
  EXPECT_EQ(from_grpc_code(grpc::StatusCode::DO_NOT_USE), absl::StatusCode::kUnknown);
  EXPECT_EQ(to_grpc_code(static_cast<absl::StatusCode>(99)), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(from_grpc_status(grpc::Status(static_cast<grpc::StatusCode>(17), "x")).code(),
            absl::StatusCode::kUnknown);
}

TEST(GrpcStatusTest, AnnotateNamesTheTaskAndKeepsCodeAndPayload) {
  absl::Status error = absl::UnavailableError("Socket closed");
  error.SetPayload("type.example/detail", absl::Cord("detail"));
  const absl::Status annotated =
      annotate_with_task(error, "/job:ps/replica:0/task:1", "127.0.0.1:4567");
  EXPECT_EQ(annotated.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(annotated.message(), "/job:ps/replica:0/task:1 (127.0.0.1:4567): Socket closed");
  ASSERT_TRUE(annotated.GetPayload("type.example/detail").has_value());
  EXPECT_EQ(*annotated.GetPayload("type.example/detail"), "detail");
  // Annotating twice does not repeat the prefix.
  EXPECT_EQ(annotate_with_task(annotated, "/job:ps/replica:0/task:1", "127.0.0.1:4567"), annotated);
}

TEST(GrpcStatusTest, AnnotateLeavesOkAlone) {
  EXPECT_TRUE(annotate_with_task(absl::OkStatus(), "/job:ps/replica:0/task:0", "h:1").ok());
}

TEST(GrpcStatusTest, RetryableByCodeOnly) {
  for (const CodePair& pair : all_codes()) {
    const bool expected = pair.absl_code == absl::StatusCode::kUnavailable ||
                          pair.absl_code == absl::StatusCode::kDeadlineExceeded ||
                          pair.absl_code == absl::StatusCode::kAborted;
    EXPECT_EQ(is_retryable(absl::Status(pair.absl_code, "Socket closed")), expected)
        << absl::StatusCodeToString(pair.absl_code);
  }
  // The message never matters.
  EXPECT_FALSE(is_retryable(absl::InternalError("UNAVAILABLE: connection reset")));
  EXPECT_FALSE(is_retryable(absl::OkStatus()));
}

}  // namespace
}  // namespace psflow::internal
