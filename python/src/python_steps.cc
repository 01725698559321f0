// Python step functions (@psflow.function) on the workers: the C++
// functions that run them, the worker context they see, the optimizer they
// push gradients through, and the per-worker datasets they read.
//
// A worker that runs Python steps is `python3 -m psflow.server` (the
// extension serves the task, psflow/server.py): the interpreter is this
// process's own. The worker's threads hold the GIL only while running
// Python: converting arguments and results, and the user's code; the runtime
// calls the steps make (pulls, pushes, next element) release it.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bindings.h"
#include "psflow/dataset.h"
#include "psflow/function_registry.h"
#include "psflow/main.h"
#include "psflow/optimizer.h"
#include "psflow/per_worker.h"
#include "psflow/variable_handle.h"
#include "psflow/worker_context.h"
#include "train_bindings.h"

namespace psflow::python {
namespace {

// The name under which Python dataset functions are registered in the C++
// DatasetRegistry; the Python function's own name travels in the args.
constexpr char kPythonDatasetFunction[] = "psflow/python_dataset";

// The context of the Python step running on this thread (set for the
// duration of the call), or null: the step's calls into the runtime find
// their worker, call and update keys through it.
thread_local WorkerContext* current_context = nullptr;
// Worker index and count while a Python dataset function runs.
thread_local const DatasetContext* current_dataset_context = nullptr;

// Makes `ctx` the current context for its lifetime (restoring the previous one).
// Thread-safety: touches this thread's context only.
class ContextScope {
 public:
  explicit ContextScope(WorkerContext* ctx) : saved_(current_context) { current_context = ctx; }
  ~ContextScope() { current_context = saved_; }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  WorkerContext* saved_;
};

WorkerContext& context_or_raise(const char* what) {
  if (current_context == nullptr) {
    raise_status(absl::FailedPreconditionError(absl::StrCat(
        what,
        " is only available inside a Python step function running on a worker (a "
        "@psflow.function scheduled with ClusterCoordinator.schedule), on the step's own "
        "thread")));
  }
  return *current_context;
}

// A per-worker iterator inside a step: next() reads this worker's copy.
// Thread-safety: used on the step's thread only (it needs its context).
struct WorkerIterator {
  Structure handle;
};

// Structure -> Python on a worker: variable handles become the worker's
// Variables (bound to the call: their updates carry its update keys),
// per-worker iterator handles WorkerIterators; the rest as
// structure_to_python.
py::object worker_value(const Structure& s, WorkerContext& ctx) {
  if (VariableHandle::is_handle(s)) {
    return py::cast(value_or_raise(ctx.variable(s)));
  }
  if (PerWorkerIterator::is_handle(s)) return py::cast(WorkerIterator{s});
  switch (s.kind()) {
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      py::list items;
      for (const Structure& item : s.items()) items.append(worker_value(item, ctx));
      if (s.kind() == Structure::Kind::kList) return items;
      return py::tuple(items);
    }
    case Structure::Kind::kDict: {
      py::dict fields;
      for (const auto& [key, value] : s.fields()) fields[py::str(key)] = worker_value(value, ctx);
      return fields;
    }
    default: return structure_to_python(s, true);
  }
}

// The status a Python exception becomes: psflow._steps decides (its
// psflow.errors code, or UNKNOWN with "<Type>: <message>" and the traceback).
absl::Status status_of(py::error_already_set& e, const std::string& where) {
  try {
    py::tuple coded = py::module_::import("psflow._steps")
                          .attr("_status_of")(e.type(), e.value(), e.trace(), where);
    const int code = coded[0].cast<int>();
    return absl::Status(static_cast<absl::StatusCode>(code), coded[1].cast<std::string>());
  } catch (const py::error_already_set& inner) {
    return absl::InternalError(absl::StrCat(
        where, ": ", e.what(), " (and formatting the error failed: ", inner.what(), ")"));
  }
}

absl::StatusOr<Structure> run_python_step(const std::string& name, WorkerContext& ctx,
                                          const Structure& args) {
  if (!Py_IsInitialized()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Python step '", name, "': the interpreter is not running"));
  }
  py::gil_scoped_acquire gil;
  ContextScope scope(&ctx);
  const std::string where = absl::StrCat("Python step '", name, "'");
  try {
    py::object packed = worker_value(args, ctx);
    py::object result = py::module_::import("psflow._steps").attr("_run")(name, packed);
    return structure_from_python(result, absl::StrCat("the result of ", where));
  } catch (py::error_already_set& e) {
    return status_of(e, where);
  } catch (const py::builtin_exception& e) {
    // A result that does not convert (raise_type_error / raise_value_error).
    return absl::InvalidArgumentError(e.what());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(where, ": ", e.what()));
  }
}

// Names this process registered: registering again (a module re-imported,
// or imported as __main__ and by name) only replaces the Python function,
// which psflow._steps looks up at each call.
absl::Mutex registered_mu;
absl::flat_hash_set<std::string>& registered_names() ABSL_EXCLUSIVE_LOCKS_REQUIRED(registered_mu) {
  static auto* names = new absl::flat_hash_set<std::string>();
  return *names;
}

void register_python_function(const std::string& name) {
  {
    absl::MutexLock lock(&registered_mu);
    if (!registered_names().insert(name).second) return;
  }
  check(FunctionRegistry::global().register_function(
      name, [name](WorkerContext& ctx, const Structure& args) {
        return run_python_step(name, ctx, args);
      }));
}

// optimizer.apply_gradients: on a worker inside a step, bound to the call
// (exactly-once, as C++ steps); elsewhere (the coordinator) unbound.
void apply_gradients(const std::string& kind, const py::dict& hyper, double learning_rate,
                     const ShardedVariable& iterations, const py::list& grads,
                     const py::list& vars) {
  const OptimizerConfig config = optimizer_config_from_python(kind, hyper);
  if (grads.size() != vars.size()) {
    raise_value_error(absl::StrCat("apply_gradients: ", grads.size(), " gradients for ",
                                   vars.size(), " variables"));
  }
  std::vector<GradientAndVariable> pairs;
  pairs.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    const ShardedVariable* v = variable_of(vars[i]);
    if (v == nullptr) {
      raise_type_error(absl::StrCat("apply_gradients: variable ", i, " is a ",
                                    std::string(py::str(py::type::handle_of(vars[i]))),
                                    ", not a psflow.Variable"));
    }
    const std::string what = absl::StrCat("apply_gradients: the gradient of '", v->name(), "'");
    py::handle g = grads[i];
    if (g.is_none()) {
      pairs.push_back({Tensor(), *v});
    } else if (py::hasattr(g, "indices") && py::hasattr(g, "values")) {
      pairs.push_back({IndexedSlices{tensor_from_python(g.attr("values"), what),
                                     tensor_from_python(g.attr("indices"), what)},
                       *v});
    } else {
      pairs.push_back({tensor_from_python(g, what), *v});
    }
  }
  WorkerContext* ctx = current_context;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = [&]() -> absl::Status {
      OptimizerOptions options;
      options.iterations = ctx != nullptr ? ctx->bind(iterations) : iterations;
      absl::StatusOr<Optimizer> optimizer = Optimizer::create(config, learning_rate, options);
      if (!optimizer.ok()) return optimizer.status();
      if (ctx != nullptr) {
        for (GradientAndVariable& p : pairs) p.variable = ctx->bind(p.variable);
        return ctx->bind(*optimizer).apply_gradients(pairs);
      }
      return optimizer->apply_gradients(pairs);
    }();
  }
  check(status);
}

// A Python iterator the runtime holds: released under the GIL, whichever
// thread drops the last reference.
// Thread-safety: `it` is touched with the GIL held only.
struct PythonIterator {
  std::optional<py::object> it;
  PythonIterator() = default;
  PythonIterator(const PythonIterator&) = delete;
  PythonIterator& operator=(const PythonIterator&) = delete;
  ~PythonIterator() {
    if (!it.has_value()) return;
    if (!Py_IsInitialized()) {
      (void)it->release();  // The interpreter is gone: nothing to free.
      return;
    }
    py::gil_scoped_acquire gil;
    it.reset();
  }
};

// A Python iterable as a C++ dataset: each element is next() of it, under
// the GIL, converted to a Structure.
Dataset python_dataset(const std::string& fn_name, const Structure& fn_args,
                       const DatasetContext& ctx) {
  const DatasetContext copy = ctx;
  return Dataset::from_generator([fn_name, fn_args, copy]() -> Dataset::Generator {
    auto iterator = std::make_shared<PythonIterator>();
    auto make = [fn_name, fn_args, copy, iterator]() -> absl::Status {
      py::gil_scoped_acquire gil;
      current_dataset_context = &copy;
      try {
        py::object iterable =
            py::module_::import("psflow._steps")
                .attr("_make_dataset")(fn_name, structure_to_python(fn_args, true),
                                       copy.worker_index, copy.num_workers);
        iterator->it = py::iter(iterable);
      } catch (py::error_already_set& e) {
        current_dataset_context = nullptr;
        return status_of(e, absl::StrCat("Python dataset function '", fn_name, "'"));
      }
      current_dataset_context = nullptr;
      return absl::OkStatus();
    };
    return [fn_name, iterator, make]() -> absl::StatusOr<std::optional<Structure>> {
      if (!iterator->it.has_value()) {
        absl::Status made = make();
        if (!made.ok()) return made;
      }
      py::gil_scoped_acquire gil;
      try {
        PyObject* item = PyIter_Next(iterator->it->ptr());
        if (item == nullptr) {
          if (PyErr_Occurred()) throw py::error_already_set();
          return std::optional<Structure>();
        }
        py::object element = py::reinterpret_steal<py::object>(item);
        element = py::module_::import("psflow._steps").attr("_to_wire")(element);
        return std::optional<Structure>(structure_from_python(
            element, absl::StrCat("an element of Python dataset '", fn_name, "'")));
      } catch (py::error_already_set& e) {
        return status_of(e, absl::StrCat("Python dataset '", fn_name, "'"));
      } catch (const py::builtin_exception& e) {
        return absl::InvalidArgumentError(e.what());
      }
    };
  });
}

}  // namespace

OptimizerConfig optimizer_config_from_python(const std::string& kind, const py::dict& hyper) {
  OptimizerConfig config;
  if (kind == "sgd") {
    config.kind = OptimizerConfig::Kind::kSgd;
  } else if (kind == "momentum") {
    config.kind = OptimizerConfig::Kind::kMomentum;
  } else if (kind == "adagrad") {
    config.kind = OptimizerConfig::Kind::kAdagrad;
  } else if (kind == "adam") {
    config.kind = OptimizerConfig::Kind::kAdam;
  } else if (kind == "ftrl") {
    config.kind = OptimizerConfig::Kind::kFtrl;
  } else {
    raise_value_error(
        absl::StrCat("unknown optimizer '", kind, "'; use sgd, momentum, adagrad, adam or ftrl"));
  }
  auto get = [&](const char* key, double& out) {
    if (hyper.contains(key)) out = hyper[key].cast<double>();
  };
  get("momentum", config.momentum);
  get("initial_accumulator_value", config.initial_accumulator_value);
  get("epsilon", config.epsilon);
  get("beta_1", config.beta_1);
  get("beta_2", config.beta_2);
  get("learning_rate_power", config.learning_rate_power);
  get("l1_regularization_strength", config.l1_regularization_strength);
  get("l2_regularization_strength", config.l2_regularization_strength);
  get("beta", config.beta);
  if (hyper.contains("nesterov")) config.nesterov = hyper["nesterov"].cast<bool>();
  return config;
}

Optimizer optimizer_from_python(py::handle optimizer) {
  const OptimizerConfig config = optimizer_config_from_python(
      optimizer.attr("_kind").cast<std::string>(), optimizer.attr("_hyper").cast<py::dict>());
  const ShardedVariable* iterations = variable_of(optimizer.attr("iterations"));
  if (iterations == nullptr) raise_type_error("optimizer.iterations is not a psflow.Variable");
  OptimizerOptions options;
  options.iterations = *iterations;
  return value_or_raise(
      Optimizer::create(config, optimizer.attr("learning_rate").cast<double>(), options));
}

void init_python_steps(py::module_& m) {
  m.def("_register_python_function", &register_python_function, py::arg("name"));
  m.def("_in_step", [] { return current_context != nullptr; });
  m.def("_worker_index", [] {
    if (current_dataset_context != nullptr) return current_dataset_context->worker_index;
    return context_or_raise("the worker index").worker_index();
  });
  m.def("_num_workers", [] {
    if (current_dataset_context != nullptr) return current_dataset_context->num_workers;
    return context_or_raise("the number of workers").num_workers();
  });
  m.def("_apply_gradients", &apply_gradients, py::arg("kind"), py::arg("hyper"),
        py::arg("learning_rate"), py::arg("iterations"), py::arg("grads"), py::arg("vars"));
  m.attr("_PYTHON_DATASET_FUNCTION") = kPythonDatasetFunction;
  m.def(
      "read_values",
      [](const py::sequence& variables) {
        std::vector<ShardedVariable> vars;
        vars.reserve(variables.size());
        for (size_t i = 0; i < variables.size(); ++i) {
          const ShardedVariable* v = variable_of(variables[i]);
          if (v == nullptr) {
            raise_type_error(absl::StrCat("read_values: item ", i, " is not a psflow.Variable"));
          }
          vars.push_back(*v);
        }
        absl::StatusOr<std::vector<Tensor>> values;
        {
          py::gil_scoped_release release;
          values = psflow::read_values(vars);
        }
        py::list out;
        for (const Tensor& t : value_or_raise(std::move(values))) {
          out.append(array_from_tensor(t, true));
        }
        return out;
      },
      py::arg("variables"),
      "The values of many variables (numpy arrays, viewing the received buffers): one "
      "request per ps task, all in parallel, without the GIL.");

  py::class_<WorkerIterator>(m, "_WorkerIterator",
                             "This worker's per-worker iterator, inside a Python step.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](const WorkerIterator& it) {
             WorkerContext& ctx = context_or_raise("reading a per-worker iterator");
             absl::StatusOr<std::optional<Structure>> next;
             {
               py::gil_scoped_release release;
               next = ctx.get_next(it.handle);
             }
             std::optional<Structure> value = value_or_raise(std::move(next));
             if (!value.has_value()) throw py::stop_iteration();
             return worker_value(*value, ctx);
           })
      .def("get_next", [](const WorkerIterator& it) {
        WorkerContext& ctx = context_or_raise("reading a per-worker iterator");
        absl::StatusOr<Structure> next;
        {
          py::gil_scoped_release release;
          next = ctx.next(it.handle);
        }
        return worker_value(value_or_raise(std::move(next)), ctx);
      });

  // The task itself: `python3 -m psflow.server` serves until SIGTERM/SIGINT.
  m.def(
      "_run_task",
      [](std::vector<std::string> argv) {
        std::vector<char*> raw;
        raw.reserve(argv.size() + 1);
        for (std::string& a : argv) raw.push_back(a.data());
        raw.push_back(nullptr);
        std::optional<int> code;
        {
          py::gil_scoped_release release;
          code = run_task_if_started_as_one(static_cast<int>(argv.size()), raw.data());
        }
        return code.value_or(2);
      },
      py::arg("argv"));

  check(DatasetRegistry::global().register_dataset(
      kPythonDatasetFunction,
      [](const DatasetContext& ctx, const Structure& args) -> absl::StatusOr<Dataset> {
        if (!args.is_sequence() || args.size() != 2 || args[0].kind() != Structure::Kind::kString) {
          return absl::InvalidArgumentError(
              "psflow/python_dataset takes (python function name, args)");
        }
        return python_dataset(args[0].string_value(), args[1], ctx);
      }));
}

}  // namespace psflow::python
