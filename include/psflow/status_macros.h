// Status propagation helpers, for psflow's own code and for functions of
// yours (PSFLOW_FUNCTION bodies return absl::StatusOr<Structure>).
#ifndef PSFLOW_STATUS_MACROS_H_
#define PSFLOW_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PSFLOW_CONCAT_INNER_(a, b) a##b
#define PSFLOW_CONCAT_(a, b) PSFLOW_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` is not OK.
#define PSFLOW_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status psflow_status_ = (expr);          \
    if (!psflow_status_.ok()) return psflow_status_; \
  } while (0)

// `PSFLOW_ASSIGN_OR_RETURN(auto x, StatusOrExpr());`
#define PSFLOW_ASSIGN_OR_RETURN(lhs, expr) \
  PSFLOW_ASSIGN_OR_RETURN_IMPL_(PSFLOW_CONCAT_(psflow_statusor_, __LINE__), lhs, expr)
#define PSFLOW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // PSFLOW_STATUS_MACROS_H_
