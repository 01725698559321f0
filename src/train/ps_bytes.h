// The chief's line about what each ps task holds (internal).
#ifndef PSFLOW_TRAIN_PS_BYTES_H_
#define PSFLOW_TRAIN_PS_BYTES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace psflow::internal {

// "ps bytes: ps/0 393.0 KiB, ps/1 402.0 KiB (largest/smallest 1.02)": the
// bytes of each ps task by index, in B, KiB, MiB or GiB with one decimal,
// and how far the largest is from the smallest (omitted with one task or
// an empty one).
[[nodiscard]] std::string ps_bytes_line(const std::vector<int64_t>& bytes);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PS_BYTES_H_
