#include "embedding/dynamic_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/prefetch.h"
#include "base/strings.h"
#include "embedding/key_hash.h"
#include "optimizer/optimizer.h"
#include "optimizer/optimizer_kernels.h"

namespace psflow::internal {

std::vector<int64_t> DynamicTableStats::to_vector() const {
  return {
      rows,    clock, created,     evicted_ttl, evicted_capacity, not_admitted, dropped_gradients,
      applies, bytes, sketch_bytes};
}

DynamicTableStats DynamicTableStats::from_vector(const std::vector<int64_t>& v) {
  DynamicTableStats s;
  if (v.size() != static_cast<size_t>(kFields)) return s;
  s.rows = v[0];
  s.clock = v[1];
  s.created = v[2];
  s.evicted_ttl = v[3];
  s.evicted_capacity = v[4];
  s.not_admitted = v[5];
  s.dropped_gradients = v[6];
  s.applies = v[7];
  s.bytes = v[8];
  s.sketch_bytes = v[9];
  return s;
}

absl::Status DynamicTable::validate_options(const DynamicEmbeddingOptions& o) {
  if (o.dim < 1 || o.dim > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dim ", o.dim, " is out of range; a dynamic table's rows hold 1 to ", kMaxDim, " values"));
  }
  if (o.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("dtype ", av(dtype_name(o.dtype)),
                                                   " is not supported; dynamic tables hold "
                                                   "float32 rows"));
  }
  if (o.initializer != DynamicEmbeddingInitializer::kZeros &&
      o.initializer != DynamicEmbeddingInitializer::kUniform &&
      o.initializer != DynamicEmbeddingInitializer::kNormal) {
    return absl::InvalidArgumentError(absl::StrCat("unknown initializer ",
                                                   static_cast<int>(o.initializer),
                                                   "; use zeros (0), uniform (1) or normal (2)"));
  }
  if (!std::isfinite(o.init_scale) || o.init_scale < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("init_scale ", o.init_scale, " must be finite and >= 0"));
  }
  if (o.capacity_per_shard < 0 || o.capacity_per_shard > int64_t{kNil} - 1) {
    return absl::InvalidArgumentError(absl::StrCat("capacity_per_shard ", o.capacity_per_shard,
                                                   " is out of range; use 0 (unbounded) to ",
                                                   int64_t{kNil} - 1));
  }
  if (o.ttl_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ttl_steps ", o.ttl_steps, " is negative; use 0 for no expiry"));
  }
  if (o.admit_after < 0 || o.admit_after > kMaxAdmitAfter) {
    return absl::InvalidArgumentError(
        absl::StrCat("admit_after ", o.admit_after, " is out of range; use 0 to ", kMaxAdmitAfter));
  }
  if (o.admit_after > 1 && (o.sketch_width < 1 || o.sketch_width > kMaxSketchWidth)) {
    return absl::InvalidArgumentError(absl::StrCat("sketch_width ", o.sketch_width,
                                                   " is out of range; use 1 to ", kMaxSketchWidth));
  }
  if (!(o.admit_probability > 0 && o.admit_probability <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("admit_probability ", o.admit_probability, " is out of range; use (0, 1]"));
  }
  absl::Status s = validate_optimizer(o.optimizer);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("optimizer: ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DynamicTable>> DynamicTable::create(
    const DynamicEmbeddingOptions& options) {
  absl::Status s = validate_options(options);
  if (!s.ok()) return s;
  return std::unique_ptr<DynamicTable>(new DynamicTable(options));
}

DynamicTable::DynamicTable(const DynamicEmbeddingOptions& options)
    : options_(options),
      num_slots_(static_cast<int>(optimizer_slot_names(options.optimizer.kind).size())),
      stride_(options.dim * (1 + num_slots_)) {
  absl::MutexLock lock(&mu_);
  if (options_.admit_after > 1) sketch_.emplace(options_.sketch_width);
}

float* DynamicTable::row(uint32_t r) {
  return value_chunks_[r / kChunkRows].get() + static_cast<int64_t>(r % kChunkRows) * stride_;
}
const float* DynamicTable::row(uint32_t r) const {
  return value_chunks_[r / kChunkRows].get() + static_cast<int64_t>(r % kChunkRows) * stride_;
}
DynamicTable::RowMeta& DynamicTable::meta(uint32_t r) {
  return meta_chunks_[r / kChunkRows][r % kChunkRows];
}
const DynamicTable::RowMeta& DynamicTable::meta(uint32_t r) const {
  return meta_chunks_[r / kChunkRows][r % kChunkRows];
}

void DynamicTable::unlink(uint32_t r) {
  RowMeta& m = meta(r);
  if (m.prev != kNil)
    meta(m.prev).next = m.next;
  else
    front_ = m.next;
  if (m.next != kNil)
    meta(m.next).prev = m.prev;
  else
    back_ = m.prev;
  m.prev = m.next = kNil;
}

void DynamicTable::push_front(uint32_t r) {
  RowMeta& m = meta(r);
  m.prev = kNil;
  m.next = front_;
  if (front_ != kNil)
    meta(front_).prev = r;
  else
    back_ = r;
  front_ = r;
}

// Without an eviction rule nothing needs the recency order: rows keep only
// their last-seen step, and the list (random accesses to two neighbours per
// touch) is not kept.
static bool keeps_recency(const DynamicEmbeddingOptions& o) {
  return o.ttl_steps > 0 || o.capacity_per_shard > 0;
}

void DynamicTable::touch(uint32_t r) {
  meta(r).last_seen = stats_.clock;
  if (front_ == r || !keeps_recency(options_)) return;
  unlink(r);
  push_front(r);
}

void DynamicTable::evict_back() {
  const uint32_t r = back_;
  unlink(r);
  index_.erase(meta(r).key);
  free_.push_back(r);
  --stats_.rows;
}

// Rows ahead of their use: a large table's lookups are main-memory round
// trips.
constexpr size_t kRowsAhead = 4;

void DynamicTable::resolve(absl::Span<const int64_t> keys, std::vector<uint32_t>& rows) {
  // The hash slots of later keys are fetched while earlier ones are found.
  constexpr size_t kAhead = 8;
  rows.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) index_.prefetch(keys[i + kAhead]);
    auto it = index_.find(keys[i]);
    rows[i] = it == index_.end() ? kNil : it->second;
  }
}

void DynamicTable::prefetch_row_of(uint32_t r) {
  if (r == kNil) return;
  prefetch_row(row(r), static_cast<size_t>(stride_) * sizeof(float), /*for_write=*/true);
  prefetch_row(&meta(r), sizeof(RowMeta), /*for_write=*/true);
}

void DynamicTable::advance(int64_t step) {
  if (step > stats_.clock) stats_.clock = step;
  if (options_.ttl_steps <= 0) return;
  while (back_ != kNil && stats_.clock - meta(back_).last_seen > options_.ttl_steps) {
    evict_back();
    ++stats_.evicted_ttl;
  }
}

uint32_t DynamicTable::insert(int64_t key) {
  uint32_t r;
  if (!free_.empty()) {
    r = free_.back();
    free_.pop_back();
  } else {
    r = high_water_++;
    if (r / kChunkRows >= value_chunks_.size()) {
      value_chunks_.push_back(std::make_unique<float[]>(static_cast<size_t>(kChunkRows * stride_)));
      meta_chunks_.push_back(std::make_unique<RowMeta[]>(static_cast<size_t>(kChunkRows)));
    }
  }
  float* values = row(r);
  initial_row(options_, key, values);
  const std::vector<std::string_view> slots = optimizer_slot_names(options_.optimizer.kind);
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto init =
        static_cast<float>(optimizer_slot_initial_value(options_.optimizer, slots[i]));
    std::fill_n(values + options_.dim * static_cast<int64_t>(i + 1), options_.dim, init);
  }
  RowMeta& m = meta(r);
  m.key = key;
  m.last_seen = stats_.clock;
  m.prev = m.next = kNil;
  if (keeps_recency(options_)) push_front(r);
  index_.emplace(key, r);
  ++stats_.rows;
  ++stats_.created;
  if (options_.capacity_per_shard > 0) {
    while (stats_.rows > options_.capacity_per_shard) {
      evict_back();
      ++stats_.evicted_capacity;
    }
  }
  return r;
}

bool DynamicTable::admit(int64_t key) {
  if (options_.admit_probability < 1 &&
      !(admission_draw(options_.seed, key) < options_.admit_probability)) {
    return false;
  }
  if (!sketch_.has_value()) return true;
  return sketch_->add(key) >= static_cast<uint32_t>(options_.admit_after);
}

absl::Status DynamicTable::validate_lookup(const Tensor& keys) const {
  if (!keys.valid() || keys.dtype() != DType::kInt64 || keys.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("keys must be a 1-D int64 tensor, not ",
                     keys.valid() ? keys.debug_string(0) : std::string("absent")));
  }
  if (keys.num_elements() > kMaxKeys) {
    return absl::InvalidArgumentError(absl::StrCat(keys.num_elements(),
                                                   " keys in one request; send at most ", kMaxKeys,
                                                   " per request and ps task"));
  }
  if (keys.num_elements() * options_.dim * 4 > kMaxResultBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(keys.num_elements(), " keys of dim ", options_.dim, " make a result over ",
                     kMaxResultBytes, " bytes; split the lookup into smaller requests"));
  }
  return absl::OkStatus();
}

Tensor DynamicTable::lookup(const Tensor& keys, int64_t step, bool replay) {
  const int64_t n = keys.num_elements();
  const int64_t dim = options_.dim;
  Tensor out(DType::kFloat32, {n, dim});
  float* dst = out.mutable_flat<float>().data();
  const absl::Span<const int64_t> k = keys.flat<int64_t>();
  absl::MutexLock lock(&mu_);
  if (!replay) advance(step);
  // Rows found before the loop stay valid while nothing is evicted, which
  // only new rows beyond the capacity do; otherwise each key is found in
  // turn.
  std::vector<uint32_t> found;
  const bool pipelined =
      options_.capacity_per_shard == 0 || stats_.rows + n <= options_.capacity_per_shard;
  if (pipelined) resolve(k, found);
  for (int64_t i = 0; i < n; ++i) {
    float* to = dst + i * dim;
    const int64_t key = k[static_cast<size_t>(i)];
    uint32_t r = kNil;
    if (pipelined) {
      if (static_cast<size_t>(i) + kRowsAhead < found.size()) {
        prefetch_row_of(found[static_cast<size_t>(i) + kRowsAhead]);
      }
      r = found[static_cast<size_t>(i)];
    }
    if (r == kNil) {
      // Not found before the loop: an earlier duplicate may have made it.
      auto it = index_.find(key);
      if (it != index_.end()) r = it->second;
    }
    if (r != kNil) {
      if (!replay) touch(r);
    } else if (!replay) {
      if (admit(key)) {
        r = insert(key);
      } else {
        ++stats_.not_admitted;
      }
    }
    if (r == kNil) {
      std::fill_n(to, dim, 0.0f);
    } else {
      std::memcpy(to, row(r), static_cast<size_t>(dim) * sizeof(float));
    }
  }
  return out;
}

absl::Status DynamicTable::validate_apply(const OptimizerConfig& config, double learning_rate,
                                          const Tensor& keys, const Tensor& grads) const {
  if (config.kind != options_.optimizer.kind) {
    return absl::FailedPreconditionError(
        absl::StrCat("the table keeps the slots of ", av(optimizer_name(options_.optimizer.kind)),
                     " but the update uses ", av(optimizer_name(config.kind)),
                     "; update it with the optimizer it was created with"));
  }
  absl::Status s = validate_optimizer(config);
  if (!s.ok()) return s;
  if (!std::isfinite(learning_rate) || learning_rate < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate ", learning_rate, " must be finite and >= 0"));
  }
  s = validate_lookup(keys);
  if (!s.ok()) return s;
  if (!grads.valid() || grads.dtype() != DType::kFloat32 || grads.rank() != 2 ||
      grads.dim(0) != keys.num_elements() || grads.dim(1) != options_.dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradients must be float32 [", keys.num_elements(), ", ", options_.dim,
                     "] (one row of dim values per key), not ",
                     grads.valid() ? grads.debug_string(0) : std::string("absent")));
  }
  return absl::OkStatus();
}

void DynamicTable::apply(const OptimizerConfig& config, double learning_rate, const Tensor& keys,
                         const Tensor& grads, int64_t step) {
  const int64_t dim = options_.dim;
  const absl::Span<const int64_t> k = keys.flat<int64_t>();
  const float* g = grads.flat<float>().data();
  // Duplicate keys are summed first, as TF's sparse applies do.
  absl::flat_hash_map<int64_t, size_t> first;
  first.reserve(k.size());
  std::vector<int64_t> distinct;
  std::vector<float> summed;
  std::vector<const float*> rows_of;
  bool any_duplicate = false;
  for (size_t i = 0; i < k.size(); ++i) {
    auto [it, inserted] = first.try_emplace(k[i], distinct.size());
    if (inserted) {
      distinct.push_back(k[i]);
    } else {
      any_duplicate = true;
    }
  }
  if (any_duplicate) {
    summed.assign(distinct.size() * static_cast<size_t>(dim), 0.0f);
    for (size_t i = 0; i < k.size(); ++i) {
      float* to = summed.data() + first[k[i]] * static_cast<size_t>(dim);
      const float* from = g + static_cast<int64_t>(i) * dim;
      for (int64_t j = 0; j < dim; ++j) to[j] += from[j];
    }
  }
  absl::MutexLock lock(&mu_);
  advance(step);
  ++stats_.applies;
  const UpdateCoefficients<float> c =
      update_coefficients<float>(config, learning_rate, stats_.applies);
  // Updates never create or evict rows: every row can be found first.
  std::vector<uint32_t> found;
  resolve(distinct, found);
  for (size_t u = 0; u < distinct.size(); ++u) {
    if (u + kRowsAhead < found.size()) prefetch_row_of(found[u + kRowsAhead]);
    const uint32_t r = found[u];
    if (r == kNil) {
      ++stats_.dropped_gradients;
      continue;
    }
    const float* grad = any_duplicate ? summed.data() + u * static_cast<size_t>(dim)
                                      : g + static_cast<int64_t>(u) * dim;
    float* w = row(r);
    float* s0 = num_slots_ >= 1 ? w + dim : nullptr;
    float* s1 = num_slots_ >= 2 ? w + 2 * dim : nullptr;
    update_dense<float>(c, w, s0, s1, grad, dim);
    touch(r);
  }
}

DynamicTableStats DynamicTable::stats() const {
  absl::MutexLock lock(&mu_);
  DynamicTableStats s = stats_;
  const int64_t chunks = static_cast<int64_t>(value_chunks_.size());
  s.sketch_bytes = sketch_.has_value() ? static_cast<int64_t>(sketch_->bytes()) : 0;
  s.bytes =
      chunks * kChunkRows *
          (stride_ * static_cast<int64_t>(sizeof(float)) + static_cast<int64_t>(sizeof(RowMeta))) +
      static_cast<int64_t>(index_.capacity()) *
          static_cast<int64_t>(sizeof(std::pair<int64_t, uint32_t>) + 1) +
      static_cast<int64_t>(free_.capacity() * sizeof(uint32_t)) + s.sketch_bytes;
  return s;
}

std::optional<DynamicTable::RowCopy> DynamicTable::find(int64_t key) const {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  const float* r = row(it->second);
  return RowCopy{std::vector<float>(r, r + stride_), meta(it->second).last_seen};
}

void DynamicTable::for_each_row(
    const std::function<void(int64_t key, const float* row, int64_t last_seen)>& fn) const {
  absl::MutexLock lock(&mu_);
  if (!keeps_recency(options_)) {
    for (const auto& [key, r] : index_) fn(key, row(r), meta(r).last_seen);
    return;
  }
  for (uint32_t r = front_; r != kNil; r = meta(r).next) fn(meta(r).key, row(r), meta(r).last_seen);
}

}  // namespace psflow::internal
