// How a ps says that it came back empty (internal): the flag its
// VariableService sets on an answer about a variable it does not hold while
// it holds no variable at all, which is what a ps that restarted (and lost
// everything) looks like to the programs still using its variables. Clients
// classify such answers as a ps failure by this flag, never by the text of
// the message (ps/client/ps_failure.h).
#ifndef PSFLOW_PS_REQUEST_LOST_STATE_H_
#define PSFLOW_PS_REQUEST_LOST_STATE_H_

namespace psflow::internal {

// gRPC trailing metadata of an Execute answer: present, with value "1", on
// a NOT_FOUND answer of a ps that holds no variables.
inline constexpr char kPsHoldsNothingMetadata[] = "psflow-ps-holds-nothing";

// The absl::Status payload by which the gRPC client passes the flag on to
// the layers above it (payloads never cross the wire).
inline constexpr char kPsHoldsNothingPayload[] = "psflow.internal/ps-holds-nothing";

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_LOST_STATE_H_
