// Hyper-parameters of the server-side optimizers (SGD, Momentum, Adagrad,
// Adam, FTRL). Shared by the coordinator-side psflow::Optimizer and the ps
// tasks that apply the updates.
#ifndef PSFLOW_OPTIMIZER_CONFIG_H_
#define PSFLOW_OPTIMIZER_CONFIG_H_

namespace psflow {

// Hyper-parameters of one optimizer. Defaults are Keras's, except
// `momentum` (0.9; Keras's SGD defaults to 0, which would make kMomentum
// plain SGD). The learning rate is not here: it travels with every apply
// call so that schedules need no hot-spot variable.
// Thread-safety: a value type.
struct OptimizerConfig {
  enum class Kind { kSgd, kMomentum, kAdagrad, kAdam, kFtrl };
  Kind kind = Kind::kSgd;
  // Momentum.
  double momentum = 0.9;
  bool nesterov = false;
  // Adagrad, FTRL.
  double initial_accumulator_value = 0.1;
  // Adagrad, Adam.
  double epsilon = 1e-7;
  // Adam.
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  // FTRL.
  double learning_rate_power = -0.5;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  double beta = 0.0;

  friend bool operator==(const OptimizerConfig&, const OptimizerConfig&) = default;
};

}  // namespace psflow

#endif  // PSFLOW_OPTIMIZER_CONFIG_H_
