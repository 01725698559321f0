#include "worker/value_graph.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "tensor/codec.h"

namespace psflow::internal {

struct ValueGraph::Node {
  enum class Kind { kValue, kFunction, kCall, kStruct, kSelection };

  Kind kind = Kind::kValue;
  // Set when added, then immutable.
  std::string id;
  std::string owner;  // Who created it (the only one who may use `id`).
  uint64_t number = 0;
  std::string function_name;  // kFunction, kCall.

  // Everything below is guarded by the graph's mutex.
  bool resolved = false;
  Result result = Structure();
  // Until resolved: the values this one is built from (a call's argument,
  // a struct's elements, a selection's source).
  std::vector<std::shared_ptr<Node>> inputs;
  std::vector<std::string> names;  // kStruct: the keys when named (sorted).
  bool list = false;               // kStruct, unnamed.
  int64_t index = 0;               // kSelection.
  // Nesting this node adds over its leaves: a value's own depth, a
  // struct's 1 + its deepest element's, a selection's source's, 0 for a
  // call (its result is checked when it is encoded). Set when added.
  int depth = 0;
  // Bytes the value encodes to, as far as known when added (0 for a call):
  // elements shared by a struct count each time, as encoding repeats them.
  size_t bytes = 0;
  size_t unresolved = 0;  // Inputs not resolved yet (struct, selection).
  std::vector<std::shared_ptr<Node>> dependents;
  std::vector<Waiter> waiters;
  std::atomic<bool> cancelled{false};  // kCall.
};

namespace {

using Node = ValueGraph::Node;

constexpr size_t kMaxShownIdBytes = 64;
constexpr size_t kMaxListedIds = 5;

// `size` bytes from the kernel's CSPRNG. getrandom() blocks only until the
// pool is first initialised at boot, and fails only on interruption.
void fill_random(unsigned char* out, size_t size) {
  size_t got = 0;
  for (int attempt = 0; got < size && attempt < 1000; ++attempt) {
    const ssize_t n = ::getrandom(out + got, size - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR)
      break;
  }
  PSFLOW_CHECK(got == size, "getrandom() failed (errno ", errno,
               "): this worker cannot make unguessable value ids");
}

// An id as it may appear in a message: escaped and bounded, since it comes
// from the client.
std::string shown(std::string_view id) {
  std::string out = absl::CHexEscape(av(id.substr(0, kMaxShownIdBytes)));
  if (id.size() > kMaxShownIdBytes) absl::StrAppend(&out, "... (", id.size(), " bytes)");
  return out;
}

absl::Status function_misuse(const Node& node, std::string_view role, std::string_view use) {
  return absl::InvalidArgumentError(
      absl::StrCat(av(role), " '", node.id, "' is a reference to function '", node.function_name,
                   "', which ", av(use),
                   ". A function reference can only be called (CreateCall); pass a function's name "
                   "as a string value if a function needs it as data."));
}

absl::Status out_of_range(int64_t index, std::string_view source_id, size_t size) {
  return absl::InvalidArgumentError(
      absl::StrCat("selection index ", index, " is out of range for value '", av(source_id),
                   "', which has ", size, size == 1 ? " element" : " elements",
                   size == 0 ? "" : absl::StrCat(" (valid indices: 0..", size - 1, ")")));
}

// Element `index` of `source` (the value of `source_id`).
ValueGraph::Result select(const Structure& source, int64_t index, std::string_view source_id) {
  if (!source.is_sequence() && !source.is_dict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot select element ", index, " of value '", av(source_id), "': it is ",
                     av(kind_name_with_article(source.kind())), ", not a tuple, list or dict"));
  }
  if (index < 0 || static_cast<size_t>(index) >= source.size()) {
    return out_of_range(index, source_id, source.size());
  }
  if (source.is_sequence()) return source[static_cast<size_t>(index)];
  auto it = source.fields().begin();
  std::advance(it, index);
  return it->second;
}

// The value of a struct or selection whose inputs are all resolved.
ValueGraph::Result evaluate(const Node& node) {
  if (node.kind == Node::Kind::kSelection) {
    const Node& source = *node.inputs[0];
    if (!source.result.ok()) return source.result.status();
    return select(*source.result, node.index, source.id);
  }
  for (const std::shared_ptr<Node>& input : node.inputs) {
    if (!input->result.ok()) return input->result.status();
  }
  if (!node.names.empty()) {
    Structure::Fields fields;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      fields.emplace(node.names[i], *node.inputs[i]->result);
    }
    return Structure::dict(std::move(fields));
  }
  Structure::Items items;
  items.reserve(node.inputs.size());
  for (const std::shared_ptr<Node>& input : node.inputs) items.push_back(*input->result);
  return node.list ? Structure::list(std::move(items)) : Structure::tuple(std::move(items));
}

}  // namespace

ValueGraph::ValueGraph(ValueGraphOptions options) : options_(std::move(options)) {}

ValueGraph::~ValueGraph() {
  // Pending values and their inputs point at each other until resolved;
  // break those links so that nothing leaks when calls never ran.
  std::vector<std::shared_ptr<Node>> work;
  absl::MutexLock lock(&mu_);
  for (auto& [id, node] : values_) work.push_back(node);
  for (auto& [number, call] : running_calls_) {
    if (std::shared_ptr<Node> node = call.lock()) work.push_back(std::move(node));
  }
  while (!work.empty()) {
    std::shared_ptr<Node> node = std::move(work.back());
    work.pop_back();
    for (auto* links : {&node->inputs, &node->dependents}) {
      for (std::shared_ptr<Node>& next : *links) work.push_back(std::move(next));
      links->clear();
    }
  }
}

absl::Status ValueGraph::check_capacity() const {
  if (values_.size() >= options_.max_live_values) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this worker holds ", values_.size(),
                     " values, the most it allows (max_live_values = ", options_.max_live_values,
                     "); dispose of values (Dispose, or destroy RemoteExecutorValue "
                     "handles) before creating more"));
  }
  if (static_cast<size_t>(pending_) >= options_.max_live_values) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this worker has ", pending_,
                     " values still being computed, the most it allows "
                     "(max_live_values = ",
                     options_.max_live_values, "); compute some before creating more"));
  }
  return absl::OkStatus();
}

absl::Status ValueGraph::not_found(std::string_view id, std::string_view role) const {
  std::string message = absl::StrCat(av(role), " '", shown(id),
                                     "' names no value on this worker: it was never created here, "
                                     "or it was already disposed");
  if (!absl::StartsWith(av(id), options_.id_prefix)) {
    absl::StrAppend(&message, " (this worker's ids start with '", options_.id_prefix,
                    "'; an id of an earlier run of the worker names a value lost when it "
                    "restarted)");
  }
  return absl::NotFoundError(message);
}

absl::StatusOr<std::shared_ptr<Node>> ValueGraph::find(std::string_view owner, std::string_view id,
                                                       std::string_view role) const {
  auto it = values_.find(av(id));
  if (it == values_.end() || it->second->owner != owner) return not_found(id, role);
  return it->second;
}

std::string ValueGraph::new_id() {
  unsigned char bytes[kIdRandomBytes];
  // Unique per worker: a repeat (2^-128 per pair, or a test's generator)
  // draws again; bounded, since a generator that keeps repeating is broken.
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (options_.random_bytes) {
      options_.random_bytes(bytes, sizeof(bytes));
    } else {
      fill_random(bytes, sizeof(bytes));
    }
    std::string id =
        absl::StrCat(options_.id_prefix, absl::BytesToHexString(absl::string_view(
                                             reinterpret_cast<const char*>(bytes), sizeof(bytes))));
    if (!values_.contains(id)) return id;
  }
  check_failed(__FILE__, __LINE__, "new_id()",
               "64 random ids in a row named existing values: the random source is broken");
}

std::string ValueGraph::add(std::string_view owner, std::shared_ptr<Node> node) {
  node->number = next_number_++;
  node->id = new_id();
  node->owner = std::string(owner);
  ++created_;
  std::string id = node->id;
  values_.emplace(id, std::move(node));
  return id;
}

void ValueGraph::link(const std::shared_ptr<Node>& node) {
  for (const std::shared_ptr<Node>& input : node->inputs) {
    if (!input->resolved) {
      ++node->unresolved;
      input->dependents.push_back(node);
    }
  }
  if (node->unresolved == 0) {
    node->result = evaluate(*node);
    node->resolved = true;
    node->inputs.clear();
  } else {
    ++pending_;
  }
}

void ValueGraph::resolve(const std::shared_ptr<Node>& node, Result result, Fired* fired) {
  // Iterative: a long chain of values waiting on each other must not
  // recurse once per link.
  std::vector<std::pair<std::shared_ptr<Node>, Result>> work;
  work.emplace_back(node, std::move(result));
  while (!work.empty()) {
    std::shared_ptr<Node> n = std::move(work.back().first);
    Result r = std::move(work.back().second);
    work.pop_back();
    n->result = std::move(r);
    n->resolved = true;
    --pending_;
    n->inputs.clear();
    if (n->kind == Node::Kind::kCall) running_calls_.erase(n->number);
    for (Waiter& waiter : n->waiters) fired->emplace_back(std::move(waiter), n->result);
    waiting_ -= static_cast<int64_t>(n->waiters.size());
    n->waiters.clear();
    std::vector<std::shared_ptr<Node>> dependents = std::move(n->dependents);
    n->dependents.clear();
    for (std::shared_ptr<Node>& dependent : dependents) {
      if (--dependent->unresolved == 0) {
        Result value = evaluate(*dependent);
        work.emplace_back(std::move(dependent), std::move(value));
      }
    }
  }
}

void ValueGraph::fire(Fired fired) {
  for (auto& [waiter, result] : fired) waiter(result);
}

absl::StatusOr<std::string> ValueGraph::create_value(std::string_view owner, Structure value) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kValue;
  node->depth = value.depth();
  node->bytes = encoded_size(value);
  node->result = std::move(value);
  node->resolved = true;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = check_capacity(); !s.ok()) return s;
  if (node->bytes > options_.max_value_bytes - std::min(value_bytes_, options_.max_value_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this worker holds ", value_bytes_,
        " bytes of values clients created and did not dispose; ", node->bytes,
        " more would exceed max_value_bytes = ", options_.max_value_bytes,
        ". Dispose of values (Dispose, or destroy RemoteExecutorValue handles) before creating "
        "more, or start the worker with a larger ServerOptions::max_value_bytes "
        "(psflow server --max-value-mib)"));
  }
  value_bytes_ += node->bytes;
  return add(owner, std::move(node));
}

absl::StatusOr<std::string> ValueGraph::create_function(std::string_view owner,
                                                        std::string function_name) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kFunction;
  node->function_name = std::move(function_name);
  node->resolved = true;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = check_capacity(); !s.ok()) return s;
  return add(owner, std::move(node));
}

absl::StatusOr<ValueGraph::PendingCall> ValueGraph::create_call(
    std::string_view owner, std::string_view function_id,
    std::optional<std::string_view> argument_id) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = check_capacity(); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<Node>> function = find(owner, function_id, "function_ref");
  if (!function.ok()) return function.status();
  if ((*function)->kind != Node::Kind::kFunction) {
    return absl::InvalidArgumentError(
        absl::StrCat("function_ref '", (*function)->id,
                     "' is not a function reference, so it cannot be "
                     "called; make one with CreateValue(function_name)"));
  }
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kCall;
  node->function_name = (*function)->function_name;
  if (argument_id.has_value()) {
    absl::StatusOr<std::shared_ptr<Node>> argument = find(owner, *argument_id, "argument_ref");
    if (!argument.ok()) return argument.status();
    if ((*argument)->kind == Node::Kind::kFunction) {
      return function_misuse(**argument, "argument_ref", "cannot be an argument");
    }
    node->inputs.push_back(*std::move(argument));
  }
  ++pending_;
  std::string id = add(owner, node);
  running_calls_[node->number] = node;
  return PendingCall{std::move(id), std::move(node)};
}

void ValueGraph::run_call(const PendingCall& call, CallRunner runner) {
  Node& node = *call.node;
  Result argument = Structure();
  {
    absl::MutexLock lock(&mu_);
    if (!node.inputs.empty()) {
      const std::shared_ptr<Node> input = node.inputs[0];
      mu_.Await(absl::Condition(&input->resolved));
      argument = input->result;
    }
  }
  // A failed argument fails the call as it is, without running it.
  Result result = argument;
  if (argument.ok()) {
    result = runner(node.function_name, *argument, node.number, node.cancelled);
    if (!result.ok()) {
      result = absl::Status(result.status().code(),
                            absl::StrCat("call '", node.id, "' of '", node.function_name,
                                         "' failed: ", result.status().message()));
    }
  }
  Fired fired;
  {
    absl::MutexLock lock(&mu_);
    resolve(call.node, std::move(result), &fired);
  }
  fire(std::move(fired));
}

absl::StatusOr<std::string> ValueGraph::create_struct(std::string_view owner,
                                                      const std::vector<Element>& elements,
                                                      bool list) {
  // Names: all or none, unique.
  std::optional<size_t> named, unnamed;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].name.empty()) {
      if (!unnamed) unnamed = i;
    } else if (!named) {
      named = i;
    }
  }
  if (named && unnamed) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateStruct: element ", *named, " is named ('", shown(elements[*named].name),
                     "') but element ", *unnamed,
                     " is not; name every element (a dict) or none (a tuple or list)"));
  }
  if (named && list) {
    return absl::InvalidArgumentError(
        "CreateStruct: `list` is set but the elements are named; a struct of named elements is "
        "a dict");
  }
  std::vector<size_t> order(elements.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (named) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return elements[a].name < elements[b].name; });
    for (size_t k = 1; k < order.size(); ++k) {
      if (elements[order[k]].name == elements[order[k - 1]].name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "CreateStruct: elements ", order[k - 1], " and ", order[k], " are both named '",
            shown(elements[order[k]].name), "'; names must be unique"));
      }
    }
  }
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kStruct;
  node->list = list;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = check_capacity(); !s.ok()) return s;
  for (size_t i : order) {
    const std::string role = absl::StrCat("element ", i);
    absl::StatusOr<std::shared_ptr<Node>> input = find(owner, elements[i].id, role);
    if (!input.ok()) return input.status();
    if ((*input)->kind == Node::Kind::kFunction) {
      return function_misuse(**input, role, "cannot be a struct element");
    }
    node->depth = std::max(node->depth, (*input)->depth + 1);
    node->bytes = std::min(options_.max_struct_bytes + 1, node->bytes + (*input)->bytes + 16);
    node->inputs.push_back(*std::move(input));
    if (named) node->names.push_back(elements[i].name);
  }
  // Encoding, decoding and freeing a structure recurse once per level, and
  // clients' protobuf parsers stop at 100 nested messages: a chain of
  // structs must not grow without bound.
  if (node->depth > kMaxStructDepth) {
    return absl::InvalidArgumentError(absl::StrCat("CreateStruct: the struct would nest ",
                                                   node->depth, " levels deep, more than ",
                                                   kMaxStructDepth, "; flatten it"));
  }
  // Sharing lets a few requests describe a struct whose encoding (every
  // shared element written out each time) would take exabytes.
  if (node->bytes > options_.max_struct_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateStruct: the struct would encode to more than ", options_.max_struct_bytes,
        " bytes (max_struct_bytes; its elements counted each time they appear); build smaller "
        "structs"));
  }
  link(node);
  return add(owner, std::move(node));
}

absl::StatusOr<std::string> ValueGraph::create_selection(std::string_view owner,
                                                         std::string_view source_id,
                                                         int64_t index) {
  if (index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateSelection: index ", index, " is negative; select elements 0..size-1"));
  }
  absl::MutexLock lock(&mu_);
  if (absl::Status s = check_capacity(); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<Node>> source = find(owner, source_id, "source_ref");
  if (!source.ok()) return source.status();
  const Node& src = **source;
  if (src.kind == Node::Kind::kFunction) {
    return function_misuse(src, "source_ref", "has no elements to select");
  }
  // Problems visible now are rejected now; those of values not known yet
  // (call results) surface at compute().
  if (src.resolved && src.result.ok()) {
    if (Result element = select(*src.result, index, src.id); !element.ok()) {
      return element.status();
    }
  } else if (!src.resolved && src.kind == Node::Kind::kStruct &&
             static_cast<size_t>(index) >= src.inputs.size()) {
    return out_of_range(index, src.id, src.inputs.size());
  }
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kSelection;
  node->index = index;
  node->depth = src.depth;
  node->bytes = src.bytes;
  node->inputs.push_back(*std::move(source));
  link(node);
  return add(owner, std::move(node));
}

absl::Status ValueGraph::compute(std::string_view owner, std::string_view id, Waiter waiter) {
  Result result = Structure();
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<std::shared_ptr<Node>> node = find(owner, id, "value_ref");
    if (!node.ok()) return node.status();
    if ((*node)->kind == Node::Kind::kFunction) {
      return function_misuse(**node, "value_ref", "has no value to compute");
    }
    if (!(*node)->resolved) {
      (*node)->waiters.push_back(std::move(waiter));
      ++waiting_;
      return absl::OkStatus();
    }
    result = (*node)->result;
  }
  waiter(result);
  return absl::OkStatus();
}

absl::Status ValueGraph::dispose(std::string_view owner, const std::vector<std::string>& ids) {
  std::vector<std::shared_ptr<Node>> released;  // Destroyed after the lock is released.
  absl::MutexLock lock(&mu_);
  std::vector<std::string> unknown;  // The first few, for the message.
  size_t num_unknown = 0;
  bool foreign = false;
  released.reserve(ids.size());
  for (const std::string& id : ids) {
    auto it = values_.find(id);
    if (it == values_.end() || it->second->owner != owner) {
      if (unknown.size() < kMaxListedIds) unknown.push_back(absl::StrCat("'", shown(id), "'"));
      ++num_unknown;
      foreign |= !absl::StartsWith(id, options_.id_prefix);
      continue;
    }
    if (it->second->kind == Node::Kind::kValue) value_bytes_ -= it->second->bytes;
    released.push_back(std::move(it->second));
    values_.erase(it);
  }
  disposed_ += static_cast<int64_t>(released.size());
  if (num_unknown == 0) return absl::OkStatus();
  std::string message = absl::StrCat(
      "Dispose: ", num_unknown == 1 ? "value " : "values ", absl::StrJoin(unknown, ", "),
      num_unknown > unknown.size() ? absl::StrCat(" and ", num_unknown - unknown.size(), " more")
                                   : "",
      " (", num_unknown, " of the ", ids.size(), " ids) ", num_unknown == 1 ? "names" : "name",
      " no value on this worker: never created here, or already disposed (or listed twice). The "
      "other ",
      ids.size() - num_unknown, " were disposed.");
  if (foreign) {
    absl::StrAppend(&message, " This worker's ids start with '", options_.id_prefix,
                    "'; ids of an earlier run of the worker name values lost when it restarted.");
  }
  return absl::NotFoundError(message);
}

void ValueGraph::cancel_calls() {
  absl::MutexLock lock(&mu_);
  for (auto& [number, call] : running_calls_) {
    if (std::shared_ptr<Node> node = call.lock()) node->cancelled.store(true);
  }
}

ValueGraphStats ValueGraph::stats() const {
  absl::MutexLock lock(&mu_);
  ValueGraphStats out;
  out.live_values = static_cast<int64_t>(values_.size());
  out.pending_values = pending_;
  out.max_live_values = static_cast<int64_t>(options_.max_live_values);
  out.values_created = created_;
  out.values_disposed = disposed_;
  out.waiting_computes = waiting_;
  out.value_bytes = static_cast<int64_t>(value_bytes_);
  return out;
}

}  // namespace psflow::internal
