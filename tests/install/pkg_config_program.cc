// A one-file program built with `pkg-config --cflags --libs psflow` against
// an installed psflow (tests/install/install_test.py): the runtime's entry
// points, the command line through psflow_main, and a tensor (whose header
// needs Eigen's, from eigen3 in psflow.pc's Requires).
#include <iostream>
#include <optional>
#include <vector>

#include "psflow/main.h"
#include "psflow/tensor.h"

int main(int argc, char** argv) {
  if (std::optional<int> code = psflow::run_task_if_started_as_one(argc, argv)) return *code;
  const psflow::Tensor t = psflow::Tensor::from_vector<float>({1.5f, 2.5f}, {2});
  std::cout << "tensor of " << t.num_elements() << " elements\n" << std::flush;
  char program[] = "psflow";
  char command[] = "version";
  char* args[] = {program, command, nullptr};
  return psflow::psflow_main(2, args);
}
