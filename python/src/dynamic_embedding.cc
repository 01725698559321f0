// psflow.dynamic_embedding: DynamicEmbedding tables (include/psflow/
// dynamic_embedding.h) defined by the chief through a strategy, looked up
// and updated from the chief, and listed by the strategy for checkpoints.
#include "psflow/dynamic_embedding.h"

#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "psflow/strategy.h"
#include "train_bindings.h"

namespace psflow::python {
namespace {

DynamicEmbeddingInitializer initializer_from_name(const std::string& name) {
  if (name == "zeros") return DynamicEmbeddingInitializer::kZeros;
  if (name == "uniform") return DynamicEmbeddingInitializer::kUniform;
  if (name == "normal") return DynamicEmbeddingInitializer::kNormal;
  raise_value_error(absl::StrCat("get_variable: unknown initializer '", name,
                                 "'; use 'zeros', 'uniform' or 'normal'"));
}

// 1-D int64 keys; other integer arrays are converted, anything else is a
// TypeError naming `what`.
Tensor keys_tensor(py::handle keys, const char* what) {
  py::module_ np = py::module_::import("numpy");
  py::array array = np.attr("asarray")(keys);
  if (array.dtype().kind() != 'i' && array.dtype().kind() != 'u') {
    raise_type_error(absl::StrCat(what, ": keys must be integers, got dtype ",
                                  std::string(py::str(array.dtype()))));
  }
  if (array.ndim() != 1) {
    raise_value_error(absl::StrCat(what, ": keys must be 1-D, got ", array.ndim(),
                                   " dimensions; pass keys.reshape(-1)"));
  }
  array = array.attr("astype")(np.attr("int64"));
  return tensor_from_python(array, what);
}

py::dict stats_to_python(const DynamicEmbeddingStats& s) {
  py::dict d;
  d["rows"] = s.rows;
  d["clock"] = s.clock;
  d["created"] = s.created;
  d["evicted_ttl"] = s.evicted_ttl;
  d["evicted_capacity"] = s.evicted_capacity;
  d["not_admitted"] = s.not_admitted;
  d["dropped_gradients"] = s.dropped_gradients;
  d["applies"] = s.applies;
  d["bytes"] = s.bytes;
  d["sketch_bytes"] = s.sketch_bytes;
  return d;
}

}  // namespace

void init_dynamic_embedding(py::module_& m) {
  py::class_<DynamicEmbedding>(m, "_DynamicEmbedding")
      .def_static(
          "get_variable",
          [](const ParameterServerStrategy& strategy, const std::string& name, int64_t dim,
             uint64_t seed, const std::string& initializer, double init_scale,
             const std::string& optimizer, const py::dict& optimizer_hyper,
             int64_t capacity_per_shard, int64_t ttl_steps, int64_t admit_after,
             int64_t sketch_width, double admit_probability) {
            DynamicEmbeddingOptions o;
            o.dim = dim;
            o.seed = seed;
            o.initializer = initializer_from_name(initializer);
            o.init_scale = init_scale;
            o.optimizer = optimizer_config_from_python(optimizer, optimizer_hyper);
            o.capacity_per_shard = capacity_per_shard;
            o.ttl_steps = ttl_steps;
            o.admit_after = admit_after;
            o.sketch_width = sketch_width;
            o.admit_probability = admit_probability;
            absl::StatusOr<DynamicEmbedding> table;
            {
              py::gil_scoped_release release;
              table = DynamicEmbedding::get_variable(strategy, name, o);
            }
            return value_or_raise(std::move(table));
          },
          py::arg("strategy"), py::arg("name"), py::arg("dim"), py::arg("seed"),
          py::arg("initializer"), py::arg("init_scale"), py::arg("optimizer"),
          py::arg("optimizer_hyper"), py::arg("capacity_per_shard"), py::arg("ttl_steps"),
          py::arg("admit_after"), py::arg("sketch_width"), py::arg("admit_probability"))
      .def_property_readonly("name", &DynamicEmbedding::name)
      .def_property_readonly("dim", [](const DynamicEmbedding& t) { return t.options().dim; })
      .def_property_readonly("num_shards", &DynamicEmbedding::num_shards)
      .def(
          "lookup",
          [](const DynamicEmbedding& t, py::handle keys, int64_t step) {
            Tensor k = keys_tensor(keys, "DynamicEmbedding.lookup");
            absl::StatusOr<Tensor> rows;
            {
              py::gil_scoped_release release;
              rows = t.lookup(k, step);
            }
            return array_from_tensor(value_or_raise(std::move(rows)), true);
          },
          py::arg("keys"), py::arg("step"))
      .def(
          "apply_gradients",
          [](const DynamicEmbedding& t, py::handle keys, py::handle grads, double learning_rate,
             int64_t step) {
            Tensor k = keys_tensor(keys, "DynamicEmbedding.apply_gradients");
            py::array g = py::module_::import("numpy").attr("asarray")(
                grads, py::arg("dtype") = py::module_::import("numpy").attr("float32"));
            Tensor gt = tensor_from_python(g, "DynamicEmbedding.apply_gradients: grads");
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = t.apply_gradients(k, gt, learning_rate, step);
            }
            check(status);
          },
          py::arg("keys"), py::arg("grads"), py::arg("learning_rate"), py::arg("step"))
      .def("stats",
           [](const DynamicEmbedding& t) {
             absl::StatusOr<DynamicEmbeddingStats> s;
             {
               py::gil_scoped_release release;
               s = t.stats();
             }
             return stats_to_python(value_or_raise(std::move(s)));
           })
      .def("stats_per_shard", [](const DynamicEmbedding& t) {
        absl::StatusOr<std::vector<DynamicEmbeddingStats>> s;
        {
          py::gil_scoped_release release;
          s = t.stats_per_shard();
        }
        py::list out;
        for (const DynamicEmbeddingStats& one : value_or_raise(std::move(s))) {
          out.append(stats_to_python(one));
        }
        return out;
      });

  m.def(
      "_strategy_dynamic_embeddings",
      [](const ParameterServerStrategy& strategy) { return strategy.dynamic_embeddings(); },
      py::arg("strategy"));
}

}  // namespace psflow::python
