// psflow::nn: the model math a worker runs between pulling parameters and
// pushing gradients (dense layers, activations, losses, embeddings,
// initializers) and the Keras-style metrics it reports back.
//
// The functions are stateless and work on psflow::Tensor. Floating-point
// inputs must be float32 (what training uses) or float64 (what gradient
// checks use); the float arguments of one call share a dtype (labels
// excepted) and results have that dtype. Inputs are read in place, never
// copied or written; results are fresh tensors that never alias an input.
//
// Bad input (wrong rank, mismatched shapes or dtypes, labels or ids out of
// range) is an INVALID_ARGUMENT status naming the function, the argument,
// the value received and the one expected; nothing here aborts on input.
//
// Thread-safety of the free functions: they keep no state, so concurrent
// calls are safe as long as nobody writes their input tensors meanwhile.
#ifndef PSFLOW_NN_H_
#define PSFLOW_NN_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"

namespace psflow::nn {

// ---------------------------------------------------------------------------
// Dense (fully connected) layer: y = x w + b.

// x [N, in], w [in, out], b [out] -> y [N, out].
[[nodiscard]] absl::StatusOr<Tensor> dense_forward(const Tensor& x, const Tensor& w,
                                                   const Tensor& b);

// Gradients of a dense layer. Thread-safety: a value type.
struct DenseGradients {
  Tensor dx;  // [N, in]; invalid (default Tensor) when not requested
  Tensor dw;  // [in, out]
  Tensor db;  // [out]
};

// Given dy = dL/dy [N, out], returns dL/dx, dL/dw, dL/db. The first layer
// of a model has no use for dx, so `need_dx` false skips that GEMM.
[[nodiscard]] absl::StatusOr<DenseGradients> dense_backward(const Tensor& x, const Tensor& w,
                                                            const Tensor& dy, bool need_dx = true);

// ---------------------------------------------------------------------------
// Element-wise activations (any shape).

// max(x, 0).
[[nodiscard]] absl::StatusOr<Tensor> relu(const Tensor& x);
// dy where the forward value was positive, else 0. Accepts either the
// forward input x or the output relu(x): both are positive at the same
// places, so callers keep whichever they already hold.
[[nodiscard]] absl::StatusOr<Tensor> relu_backward(const Tensor& y_or_x, const Tensor& dy);
// 1 / (1 + exp(-x)), computed without overflow for large |x|.
[[nodiscard]] absl::StatusOr<Tensor> sigmoid(const Tensor& x);
// dy * y * (1 - y). Takes the forward *output* y = sigmoid(x), which makes
// the derivative free to compute.
[[nodiscard]] absl::StatusOr<Tensor> sigmoid_backward(const Tensor& y, const Tensor& dy);

// ---------------------------------------------------------------------------
// Losses: the mean over the batch, as Keras's default reduction
// (SUM_OVER_BATCH_SIZE). An empty batch has loss 0 and an empty gradient.

// Thread-safety: a value type.
struct LossResult {
  double loss = 0.0;  // mean over the batch, accumulated in double
  Tensor d_logits;    // dLoss/dlogits, same shape and dtype as the logits
  // Per-example predictions for metrics, same shape as the logits: class
  // probabilities (softmax) or the positive-class probability (sigmoid).
  // They come free with the gradient, so metrics need no second pass.
  Tensor probabilities;
};

// logits [N, C] float; labels [N] int32, int64 or uint8 in [0, C).
// Stable for any finite logits (log-sum-exp with the row max subtracted).
[[nodiscard]] absl::StatusOr<LossResult> sparse_softmax_cross_entropy(const Tensor& logits,
                                                                      const Tensor& labels);

// logits [N] or [N, 1]; labels of the same shape, float32 or float64 in
// [0, 1] (soft labels allowed). Uses the stable form
// max(x, 0) - x z + log(1 + exp(-|x|)), as TF's
// sigmoid_cross_entropy_with_logits.
[[nodiscard]] absl::StatusOr<LossResult> sigmoid_binary_cross_entropy(const Tensor& logits,
                                                                      const Tensor& labels);

// Row-wise softmax of x [N, C] (stable).
[[nodiscard]] absl::StatusOr<Tensor> softmax(const Tensor& x);
// Index of the largest entry of each row of x [N, C] (C >= 1), int64 [N];
// ties go to the lowest index, as numpy.argmax.
[[nodiscard]] absl::StatusOr<Tensor> argmax_rows(const Tensor& x);

// ---------------------------------------------------------------------------
// Embeddings. Ids are int32 or int64 of any shape. A worker pulls only the
// rows it needs, so the usual forward path is
//   u = unique_ids(ids); rows = pull(u.values);
//   emb = embedding_lookup(rows, u.index)            // [ids..., dim]
// and the backward path ends in embedding_backward, whose result is the
// row-sparse gradient pushed to the parameter server.

// tf.unique over all elements of `ids`. Thread-safety: a value type.
struct UniqueIds {
  Tensor values;  // int64 [U], distinct ids in order of first occurrence
  Tensor index;   // int64, ids' shape: position of each id in `values`
};
[[nodiscard]] absl::StatusOr<UniqueIds> unique_ids(const Tensor& ids);

// Gathers rows: params [V, dim], ids with every value in [0, V) ->
// [ids.shape..., dim].
[[nodiscard]] absl::StatusOr<Tensor> embedding_lookup(const Tensor& params, const Tensor& ids);

// A row-sparse gradient (TF's IndexedSlices). Thread-safety: a value type.
struct SparseGradient {
  Tensor indices;  // int64 [n], distinct, in order of first occurrence
  Tensor values;   // [n, dim], the dtype of the dense gradient
};

// Gradient of a lookup w.r.t. the table: d_out [ids.shape..., dim] becomes
// one row per distinct id, rows of repeated ids summed, so a parameter
// server applies each id once. Ids are passed through unchecked (any int64,
// as hash-table embeddings use).
[[nodiscard]] absl::StatusOr<SparseGradient> embedding_backward(const Tensor& ids,
                                                                const Tensor& d_out);

// How a bag of embeddings per example becomes one vector (TF's
// embedding_lookup_sparse combiner).
enum class Combiner { kSum, kMean };

// embeddings [N, L, dim] (the lookups of ids [N, L]) -> [N, dim]:
// sum_l w[n,l] e[n,l], divided by sum_l w[n,l] for kMean (a bag whose
// weights sum to 0 gives a zero row). `weights` [N, L], same dtype, finite
// and >= 0, defaults to all ones; weight 0 marks padding in ragged bags.
[[nodiscard]] absl::StatusOr<Tensor> embedding_combine(const Tensor& embeddings, Combiner combiner,
                                                       const Tensor& weights = Tensor());

// d_combined [N, dim] -> d_embeddings [N, bag_size, dim], for the same
// combiner and weights as the forward call.
[[nodiscard]] absl::StatusOr<Tensor> embedding_combine_backward(const Tensor& d_combined,
                                                                int64_t bag_size, Combiner combiner,
                                                                const Tensor& weights = Tensor());

// ---------------------------------------------------------------------------
// Initializers. The same (shape, seed, dtype) gives the same values in
// every process, so workers and the coordinator agree without shipping the
// values: bits come from std::mt19937_64 (fully specified by the standard)
// through our own uniform and Box-Muller transforms, not the
// implementation-defined std distributions; only random_normal's libm
// log/sin/cos may round differently on another platform.
// `dtype` must be float32 or float64; shapes are validated as untrusted.

[[nodiscard]] absl::StatusOr<Tensor> zeros(const Shape& shape, DType dtype = DType::kFloat32);
// Uniform in [minval, maxval) (before rounding to `dtype`); needs finite
// minval <= maxval.
[[nodiscard]] absl::StatusOr<Tensor> random_uniform(const Shape& shape, double minval,
                                                    double maxval, uint64_t seed,
                                                    DType dtype = DType::kFloat32);
// Normal with mean 0 and the given stddev (finite, >= 0).
[[nodiscard]] absl::StatusOr<Tensor> random_normal(const Shape& shape, double stddev, uint64_t seed,
                                                   DType dtype = DType::kFloat32);
// Keras's GlorotUniform: uniform in [-limit, limit], limit =
// sqrt(6 / (fan_in + fan_out)), fans computed as Keras does (the last two
// dims times the receptive field for rank > 2).
[[nodiscard]] absl::StatusOr<Tensor> glorot_uniform(const Shape& shape, uint64_t seed,
                                                    DType dtype = DType::kFloat32);

// ---------------------------------------------------------------------------
// Metrics, as Keras's: update() during training, result() afterwards.
// Each worker keeps partial state and returns to_structure(); the
// coordinator rebuilds them with from_structure() (which validates, as the
// structure crossed the network) and merge()s them, so the merged result
// equals the result of one metric fed every batch.
//
// to_structure() is a dict {"metric": <name>, ...state fields}. Counts are
// int64 and merge checks them for overflow (OUT_OF_RANGE, state unchanged).
// Sample weights are not supported.
//
// Copies take a snapshot of the state. merge(other) reads a snapshot of
// `other` before touching this one, so merging a metric into itself or two
// metrics into each other from two threads cannot deadlock.

namespace internal {

// A metric's state behind a mutex: what every metric below holds. Copies
// take a snapshot; assignment reads a snapshot of `other` before locking
// this one, so that assigning two metrics to each other from two threads
// cannot deadlock.
// Thread-safety: the mutex guards the state.
template <typename State>
class GuardedState {
 protected:
  GuardedState() = default;
  GuardedState(const GuardedState& other) : state_(other.snapshot()) {}
  GuardedState& operator=(const GuardedState& other) ABSL_LOCKS_EXCLUDED(mu_) {
    State s = other.snapshot();
    absl::MutexLock lock(&mu_);
    state_ = std::move(s);
    return *this;
  }
  ~GuardedState() = default;

  [[nodiscard]] State snapshot() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return state_;
  }
  void reset_state() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    state_ = State();
  }

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
};

struct MeanState {
  double total = 0.0;
  double count = 0.0;
};
}  // namespace internal

// Weighted mean of values (Keras's metrics.Mean), typically the loss.
// Thread-safety: all methods may run concurrently (internal mutex).
class Mean : private internal::GuardedState<internal::MeanState> {
 public:
  Mean() = default;

  // Adds `value` with `weight` (finite, >= 0). A NaN or infinite value is
  // accepted and propagates to result(), as in Keras, so divergence shows.
  [[nodiscard]] absl::Status update(double value, double weight = 1.0) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds every element of a float32/float64 tensor with weight 1.
  [[nodiscard]] absl::Status update(const Tensor& values) ABSL_LOCKS_EXCLUDED(mu_);
  // total / count; 0 before any update.
  [[nodiscard]] double result() const ABSL_LOCKS_EXCLUDED(mu_);
  void reset() ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status merge(const Mean& other) ABSL_LOCKS_EXCLUDED(mu_);

  // {"metric": "mean", "total": float, "count": float}
  [[nodiscard]] Structure to_structure() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] static absl::StatusOr<Mean> from_structure(const Structure& s);

 private:
  using State = internal::MeanState;
};

namespace internal {
struct AccuracyState {
  int64_t correct = 0;
  int64_t count = 0;
};
}  // namespace internal

// Fraction of rows whose argmax equals the integer label (Keras's
// SparseCategoricalAccuracy). Thread-safety: all methods may run
// concurrently (internal mutex).
class SparseCategoricalAccuracy : private internal::GuardedState<internal::AccuracyState> {
 public:
  SparseCategoricalAccuracy() = default;

  // labels [N] or [N, 1], int32/int64/uint8 in [0, C); predictions [N, C]
  // float (probabilities or logits: the argmax is the same).
  [[nodiscard]] absl::Status update(const Tensor& labels, const Tensor& predictions)
      ABSL_LOCKS_EXCLUDED(mu_);
  // correct / count; 0 before any update.
  [[nodiscard]] double result() const ABSL_LOCKS_EXCLUDED(mu_);
  void reset() ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status merge(const SparseCategoricalAccuracy& other) ABSL_LOCKS_EXCLUDED(mu_);

  // {"metric": "sparse_categorical_accuracy", "correct": int, "count": int}
  [[nodiscard]] Structure to_structure() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] static absl::StatusOr<SparseCategoricalAccuracy> from_structure(const Structure& s);

 private:
  using State = internal::AccuracyState;
};

namespace internal {
struct BinaryAccuracyState {
  double threshold = 0.5;
  int64_t correct = 0;
  int64_t count = 0;
};
}  // namespace internal

// Fraction of predictions p with (p > threshold) == label (Keras's
// BinaryAccuracy). Thread-safety: all methods may run concurrently
// (internal mutex).
class BinaryAccuracy : private internal::GuardedState<internal::BinaryAccuracyState> {
 public:
  // `threshold` should be finite: from_structure rejects a non-finite one.
  explicit BinaryAccuracy(double threshold = 0.5);

  // labels 0 or 1 (float32/float64/int32/int64/uint8/bool); predictions
  // float32/float64 of the same shape ([N] and [N, 1] also pair up).
  [[nodiscard]] absl::Status update(const Tensor& labels, const Tensor& predictions)
      ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] double result() const ABSL_LOCKS_EXCLUDED(mu_);
  void reset() ABSL_LOCKS_EXCLUDED(mu_);
  // INVALID_ARGUMENT when the thresholds differ.
  [[nodiscard]] absl::Status merge(const BinaryAccuracy& other) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] double threshold() const ABSL_LOCKS_EXCLUDED(mu_);

  // {"metric": "binary_accuracy", "threshold": float, "correct": int,
  //  "count": int}
  [[nodiscard]] Structure to_structure() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] static absl::StatusOr<BinaryAccuracy> from_structure(const Structure& s);

 private:
  using State = internal::BinaryAccuracyState;
};

namespace internal {
struct AucState {
  int num_thresholds = 0;
  std::vector<int64_t> positives;  // num_thresholds - 1 buckets
  std::vector<int64_t> negatives;
};
}  // namespace internal

// Area under the ROC curve, approximated as Keras's AUC does: predictions
// are counted against `num_thresholds` thresholds (-eps, 1/K, ...,
// (K-1)/K, 1+eps with K = num_thresholds - 1), and the curve through the
// resulting (FPR, TPR) points is integrated with the trapezoid rule. The
// state is a histogram of positives and negatives per threshold bucket,
// which sums exactly across workers. Thread-safety: all methods may run
// concurrently (internal mutex).
class AUC : private internal::GuardedState<internal::AucState> {
 public:
  static constexpr int kDefaultThresholds = 200;
  // Bounds the state a from_structure() input can make us allocate.
  static constexpr int kMaxThresholds = 1 << 20;

  AUC() : AUC(kDefaultThresholds) {}
  // INVALID_ARGUMENT unless 2 <= num_thresholds <= kMaxThresholds.
  [[nodiscard]] static absl::StatusOr<AUC> create(int num_thresholds);

  // labels 0 or 1 (float32/float64/int32/int64/uint8/bool); predictions
  // float32/float64 probabilities in [0, 1] (Keras asserts the same), same
  // shape as labels ([N] and [N, 1] also pair up).
  [[nodiscard]] absl::Status update(const Tensor& labels, const Tensor& predictions)
      ABSL_LOCKS_EXCLUDED(mu_);
  // 0 when there are no positives or no negatives (Keras's divide_no_nan).
  [[nodiscard]] double result() const ABSL_LOCKS_EXCLUDED(mu_);
  void reset() ABSL_LOCKS_EXCLUDED(mu_);
  // INVALID_ARGUMENT when num_thresholds differ.
  [[nodiscard]] absl::Status merge(const AUC& other) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] int num_thresholds() const ABSL_LOCKS_EXCLUDED(mu_);

  // {"metric": "auc", "num_thresholds": int,
  //  "positives": int64 [num_thresholds - 1],
  //  "negatives": int64 [num_thresholds - 1]}: per bucket b, the examples
  // whose prediction exceeds thresholds 0..b and no more.
  [[nodiscard]] Structure to_structure() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] static absl::StatusOr<AUC> from_structure(const Structure& s);

 private:
  explicit AUC(int num_thresholds);
  using State = internal::AucState;
};

}  // namespace psflow::nn

#endif  // PSFLOW_NN_H_
