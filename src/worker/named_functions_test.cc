#include "worker/named_functions.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/per_worker.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

TEST(NamedFunctionsTest, RegistrationChecksNameTheKind) {
  EXPECT_TRUE(check_registration("dataset", "d", false).ok());
  EXPECT_EQ(check_registration("dataset", "", false),
            absl::InvalidArgumentError("A dataset function needs a name."));
  EXPECT_EQ(check_registration("resource", "r", true),
            absl::InvalidArgumentError("Resource function 'r' is empty."));
  EXPECT_EQ(already_registered("resource", "r"),
            absl::AlreadyExistsError("A resource function named 'r' is already registered."));
}

TEST(NamedFunctionsTest, NotRegisteredSuggestsACloseNameAndTheMacro) {
  const absl::Status s =
      not_registered("dataset", "PSFLOW_DATASET_FUNCTION", "train_dta", {"train_data", "other"});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("No dataset function named 'train_dta'"));
  EXPECT_THAT(s.message(), HasSubstr("Did you mean 'train_data'?"));
  EXPECT_THAT(s.message(), HasSubstr("Dataset functions are registered with "
                                     "PSFLOW_DATASET_FUNCTION"));
}

TEST(NamedFunctionsTest, PerWorkerIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(new_per_worker_id());
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(NamedFunctionsTest, TheDatasetRegistryUsesThem) {
  DatasetRegistry registry;
  EXPECT_TRUE(
      registry
          .register_dataset("nf_test_data",
                            [](const DatasetContext&, const Structure&) -> absl::StatusOr<Dataset> {
                              return Dataset::range(1);
                            })
          .ok());
  EXPECT_TRUE(absl::IsAlreadyExists(registry.register_dataset(
      "nf_test_data", [](const DatasetContext&, const Structure&) -> absl::StatusOr<Dataset> {
        return Dataset::range(1);
      })));
  EXPECT_THAT(registry.lookup("nf_test_dat").status().message(),
              HasSubstr("Did you mean 'nf_test_data'?"));
}

}  // namespace
}  // namespace psflow::internal

namespace psflow::internal {
namespace {

TEST(DatasetContextTest, WorkerSeedsDifferPerWorkerAndAfterARestartOnly) {
  const DatasetContext w0{0, 2, 0, 0}, w1{1, 2, 0, 0}, w1_restarted{1, 2, 1, 12345};
  // Reproducible: without a restart salt, the coordinator losing and
  // regaining the worker (worker_recoveries) does not change its seed.
  EXPECT_EQ(w0.worker_seed(7), DatasetContext({0, 2, 3, 0}).worker_seed(7));
  EXPECT_NE(w0.worker_seed(7), w1.worker_seed(7));
  EXPECT_NE(w1.worker_seed(7), w1_restarted.worker_seed(7));
  EXPECT_NE(w0.worker_seed(7), w0.worker_seed(8));
}

}  // namespace
}  // namespace psflow::internal
