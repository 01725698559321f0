#include "worker/named_functions.h"

#include <atomic>
#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/close_names.h"
#include "base/shown_text.h"
#include "base/strings.h"

namespace psflow::internal {

absl::Status check_registration(std::string_view kind, std::string_view name,
                                bool function_is_empty) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("A ", av(kind), " function needs a name."));
  }
  if (function_is_empty) {
    std::string capital(kind);
    if (!capital.empty()) capital[0] = static_cast<char>(capital[0] - 'a' + 'A');
    return absl::InvalidArgumentError(
        absl::StrCat(capital, " function '", av(name), "' is empty."));
  }
  return absl::OkStatus();
}

absl::Status already_registered(std::string_view kind, std::string_view name) {
  return absl::AlreadyExistsError(
      absl::StrCat("A ", av(kind), " function named '", av(name), "' is already registered."));
}

absl::Status not_registered(std::string_view kind, std::string_view macro, std::string_view name,
                            const std::vector<std::string>& registered) {
  std::string message = absl::StrCat("No ", av(kind), " function named '", shown_name(name),
                                     "' is registered in this binary.");
  const std::vector<std::string> close = close_names(name, registered);
  if (!close.empty()) absl::StrAppend(&message, " Did you mean '", close.front(), "'?");
  std::string capital(kind);
  if (!capital.empty()) capital[0] = static_cast<char>(capital[0] - 'a' + 'A');
  absl::StrAppend(&message, " ", capital, " functions are registered with ", av(macro),
                  " in code linked into every process of the job.");
  return absl::NotFoundError(message);
}

std::string new_per_worker_id() {
  static const uint64_t process = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(absl::Hex(process, absl::kZeroPad16), "-", counter.fetch_add(1) + 1);
}

}  // namespace psflow::internal
