#include "train/step_config.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/per_worker.h"
#include "psflow/status_macros.h"
#include "psflow/tensor.h"

namespace psflow::internal {
Structure optimizer_config_to_structure(const OptimizerConfig& c) {
  Structure::Fields fields;
  fields.emplace(std::string(kOptimizerKindField), std::string(optimizer_name(c.kind)));
  for (const OptimizerField& f : kOptimizerFields) {
    fields.emplace(std::string(f.structure_name),
                   f.flag != nullptr ? Structure(c.*f.flag) : Structure(c.*f.number));
  }
  return Structure::dict(std::move(fields));
}

absl::StatusOr<OptimizerConfig> optimizer_config_from_structure(const Structure& s) {
  OptimizerConfig c;
  PSFLOW_ASSIGN_OR_RETURN(
      const Structure* kind,
      kTrainingClosureArgs.field(s, kOptimizerKindField, Structure::Kind::kString));
  PSFLOW_ASSIGN_OR_RETURN(c.kind, optimizer_kind_from_name(kind->string_value()));
  for (const OptimizerField& f : kOptimizerFields) {
    if (f.flag != nullptr) {
      PSFLOW_ASSIGN_OR_RETURN(
          const Structure* flag,
          kTrainingClosureArgs.field(s, f.structure_name, Structure::Kind::kBool));
      c.*f.flag = flag->bool_value();
    } else {
      PSFLOW_ASSIGN_OR_RETURN(c.*f.number, kTrainingClosureArgs.float_field(s, f.structure_name));
    }
  }
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(c));
  return c;
}

Structure StepSettings::to_structure(Structure model) const {
  Structure::Items handles;
  for (const VariableHandle& h : variables) handles.push_back(h.to_structure());
  return Structure::dict({{"run_id", run_id},
                          {"model", std::move(model)},
                          {"variables", Structure::list(std::move(handles))},
                          {"optimizer", optimizer_config_to_structure(optimizer)},
                          {"learning_rate", learning_rate},
                          {"decay_steps", decay_steps},
                          {"decay_alpha", decay_alpha},
                          {"iterations", iterations.to_structure()},
                          {"iterator", iterator},
                          {"steps", steps},
                          {"overlap", overlap}});
}

absl::StatusOr<StepSettings> StepSettings::from_structure(const Structure& s,
                                                          const ClosureArgs& args,
                                                          const std::vector<Shape>& shapes) {
  StepSettings c;
  PSFLOW_ASSIGN_OR_RETURN(const Structure* run_id,
                          args.field(s, "run_id", Structure::Kind::kString));
  c.run_id = run_id->string_value();
  if (c.run_id.empty()) return args.malformed("'run_id' is empty");
  PSFLOW_ASSIGN_OR_RETURN(const Structure* vars,
                          args.field(s, "variables", Structure::Kind::kList));
  if (vars->size() != shapes.size()) {
    return args.malformed(absl::StrCat("the model has ", shapes.size(), " parameters but ",
                                       vars->size(), " variables were sent"));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(VariableHandle h, VariableHandle::from_structure((*vars)[i]));
    if (h.dtype != DType::kFloat32 || h.shape != shapes[i]) {
      return args.malformed(absl::StrCat("variable ", i, " ('", h.name, "') is ",
                                         av(dtype_name(h.dtype)), " ", shape_string(h.shape),
                                         ", the model needs float32 ", shape_string(shapes[i])));
    }
    c.variables.push_back(std::move(h));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* opt, args.field(s, "optimizer", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(c.optimizer, optimizer_config_from_structure(*opt));
  PSFLOW_ASSIGN_OR_RETURN(c.learning_rate, args.float_field(s, "learning_rate"));
  PSFLOW_ASSIGN_OR_RETURN(c.decay_steps, args.int_field(s, "decay_steps"));
  PSFLOW_ASSIGN_OR_RETURN(c.decay_alpha, args.float_field(s, "decay_alpha"));
  if (!(c.learning_rate > 0) || c.decay_steps < 0 || !(c.decay_alpha >= 0 && c.decay_alpha <= 1)) {
    return args.malformed("learning_rate must be > 0, decay_steps >= 0 and decay_alpha in [0, 1]");
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* it, args.field(s, "iterations", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(c.iterations, VariableHandle::from_structure(*it));
  if (c.iterations.dtype != DType::kInt64 || !c.iterations.shape.empty()) {
    return args.malformed("'iterations' must be an int64 scalar variable");
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* iterator,
                          args.field(s, "iterator", Structure::Kind::kDict));
  if (!PerWorkerIterator::is_handle(*iterator)) {
    return args.malformed("'iterator' is not an iterator");
  }
  c.iterator = *iterator;
  PSFLOW_ASSIGN_OR_RETURN(c.steps, args.int_field(s, "steps"));
  if (c.steps < 1 || c.steps > kMaxStepsPerClosure) {
    return args.malformed(
        absl::StrCat("steps ", c.steps, " is outside [1, ", kMaxStepsPerClosure, "]"));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* overlap,
                          args.field(s, "overlap", Structure::Kind::kBool));
  c.overlap = overlap->bool_value();
  return c;
}

double cosine_decay(double learning_rate, int64_t decay_steps, double alpha, int64_t step) {
  if (decay_steps <= 0) return learning_rate;
  const double t = static_cast<double>(std::clamp<int64_t>(step, 0, decay_steps)) /
                   static_cast<double>(decay_steps);
  constexpr double kPi = 3.14159265358979323846;
  return learning_rate * ((1.0 - alpha) * 0.5 * (1.0 + std::cos(kPi * t)) + alpha);
}

absl::StatusOr<StepState> resolve_step_state(const StepSettings& settings,
                                             const VariableClientLookup& lookup) {
  const double learning_rate = settings.learning_rate;
  const int64_t decay_steps = settings.decay_steps;
  const double decay_alpha = settings.decay_alpha;
  const OptimizerConfig& optimizer = settings.optimizer;
  StepState state;
  for (const VariableHandle& handle : settings.variables) {
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v, ShardedVariable::from_handle(handle, lookup));
    state.variables.push_back(std::move(v));
  }
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable step_counter,
                          ShardedVariable::from_handle(settings.iterations, lookup));
  absl::StatusOr<Optimizer> created =
      decay_steps > 0
          ? Optimizer::create(
                optimizer,
                LearningRateSchedule([learning_rate, decay_steps, decay_alpha](int64_t step) {
                  return cosine_decay(learning_rate, decay_steps, decay_alpha, step);
                }),
                {.iterations = std::move(step_counter)})
          : Optimizer::create(optimizer, learning_rate, {.iterations = std::move(step_counter)});
  PSFLOW_ASSIGN_OR_RETURN(Optimizer made, std::move(created));
  state.optimizer.emplace(std::move(made));
  return state;
}

}  // namespace psflow::internal
