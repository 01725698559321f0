#include "psflow/function_registry.h"

#include <atomic>

#include "base/close_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/function_runner.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

PSFLOW_FUNCTION(registry_test_double, ctx, args) { return Structure(args.int_value() * 2); }

absl::StatusOr<Structure> triple(WorkerContext&, const Structure& args) {
  return Structure(args.int_value() * 3);
}
PSFLOW_REGISTER_FUNCTION("registry_test/triple", &triple);

TEST(FunctionRegistryTest, MacrosRegisterInTheGlobalRegistry) {
  WorkerResources resources;
  std::atomic<bool> cancelled{false};
  WorkerContext ctx(0, 1, resources, cancelled);
  const RegisteredFunction* twice = FunctionRegistry::global().find("registry_test_double");
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice->name, "registry_test_double");
  EXPECT_EQ(*twice->fn(ctx, 21), Structure(42));
  const RegisteredFunction* thrice = FunctionRegistry::global().find("registry_test/triple");
  ASSERT_NE(thrice, nullptr);
  EXPECT_EQ(*thrice->fn(ctx, 5), Structure(15));
}

TEST(FunctionRegistryTest, RejectsDuplicatesAndEmptyNames) {
  FunctionRegistry registry;
  auto fn = [](WorkerContext&, const Structure&) -> absl::StatusOr<Structure> { return 1; };
  EXPECT_TRUE(registry.register_function("f", fn).ok());
  const absl::Status again = registry.register_function("f", fn);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("'f'"));
  EXPECT_EQ(registry.register_function("", fn).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.register_function("g", nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(registry.names(), ElementsAre("f"));
}

TEST(FunctionRegistryTest, NotFoundNamesTheFunctionAndCloseNames) {
  FunctionRegistry registry;
  auto fn = [](WorkerContext&, const Structure&) -> absl::StatusOr<Structure> { return 1; };
  for (const char* name : {"train_step", "eval_step", "make_iterator", "zzz"}) {
    ASSERT_TRUE(registry.register_function(name, fn).ok());
  }
  const absl::StatusOr<const RegisteredFunction*> typo = registry.lookup("trian_step");
  ASSERT_EQ(typo.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(typo.status().message(), HasSubstr("'trian_step'"));
  EXPECT_THAT(typo.status().message(), HasSubstr("Did you mean 'train_step'"));
  EXPECT_THAT(typo.status().message(), Not(HasSubstr("make_iterator")));

  const absl::StatusOr<const RegisteredFunction*> far = registry.lookup("completely_different");
  ASSERT_EQ(far.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(far.status().message(), HasSubstr("Registered: 'eval_step', 'make_iterator'"));

  FunctionRegistry empty;
  EXPECT_THAT(empty.lookup("f").status().message(), HasSubstr("No function is registered"));
}

TEST(CloseNamesTest, EditDistanceIgnoresCase) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("Train", "train"), 0u);
  EXPECT_THAT(close_names("step", {"train_step", "eval_step", "zzzz"}),
              ElementsAre("eval_step", "train_step"));
  EXPECT_THAT(close_names("f", {"g", "ff", "longer_name"}), ElementsAre("ff", "g"));
}

TEST(FunctionRunnerTest, ExceptionsBecomeInternalErrors) {
  FunctionRegistry registry;
  ASSERT_TRUE(
      registry
          .register_function("throws",
                             [](WorkerContext&, const Structure&) -> absl::StatusOr<Structure> {
                               throw std::runtime_error("bad thing");
                             })
          .ok());
  WorkerResources resources;
  std::atomic<bool> cancelled{false};
  WorkerContext ctx(3, 1, resources, cancelled);
  const absl::StatusOr<Structure> thrown = run_registered_function(registry, "throws", ctx, {});
  EXPECT_EQ(thrown.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(thrown.status().message(), HasSubstr("'throws'"));
  EXPECT_THAT(thrown.status().message(), HasSubstr("bad thing"));
  EXPECT_EQ(run_registered_function(registry, "throwz", ctx, {}).status().code(),
            absl::StatusCode::kNotFound);
}

struct Counter {
  int value = 0;
};

TEST(WorkerResourcesTest, OneObjectPerKey) {
  WorkerResources resources;
  resources.get_or_create<Counter>("a").value += 2;
  resources.get_or_create<Counter>("a").value += 3;
  resources.get_or_create<Counter>("b").value += 7;
  EXPECT_EQ(resources.get_or_create<Counter>("a").value, 5);
  EXPECT_EQ(resources.get_or_create<Counter>("b").value, 7);
  EXPECT_EQ(resources.size(), 2u);
  resources.clear();
  EXPECT_EQ(resources.get_or_create<Counter>("a").value, 0);
}

TEST(WorkerResourcesDeathTest, TypeMismatchAborts) {
  WorkerResources resources;
  (void)resources.get_or_create<Counter>("a");
  EXPECT_DEATH((void)resources.get_or_create<double>("a"), "Worker resource 'a'");
}

}  // namespace
}  // namespace psflow::internal
