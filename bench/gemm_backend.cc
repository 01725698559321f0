// One MLP forward and backward pass (784-256-10, the GEMMs of
// src/nn/dense.cc on row-major Eigen maps) timed at a batch size, built
// twice by bench/CMakeLists.txt: with Eigen's own GEMM and with
// EIGEN_USE_BLAS (OpenBLAS). bench/gemm_backend.py runs both in one
// benchmark run, alternating. Prints one JSON line:
// {"backend", "batch", "ms_per_pass"} (the median of `rounds` rounds).
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef PSFLOW_OPENBLAS
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s BATCH ROUNDS\n", argv[0]);
    return 2;
  }
  const long batch = std::strtol(argv[1], nullptr, 10);
  const long rounds = std::strtol(argv[2], nullptr, 10);
  if (batch < 1 || batch > 65536 || rounds < 1 || rounds > 1000) {
    std::fprintf(stderr, "BATCH must be in [1, 65536] and ROUNDS in [1, 1000]\n");
    return 2;
  }
#ifdef PSFLOW_OPENBLAS
  openblas_set_num_threads(1);  // as psflow's processes run it (src/nn/dense.cc)
  const char* backend = "openblas";
#else
  const char* backend = "eigen";
#endif
  const Matrix x = Matrix::Random(batch, 784);
  const Matrix w1 = Matrix::Random(784, 256);
  const Matrix w2 = Matrix::Random(256, 10);
  const Matrix dy = Matrix::Random(batch, 10);
  Matrix h(batch, 256), y(batch, 10), dw2(256, 10), dh(batch, 256), dw1(784, 256);
  auto pass = [&] {
    h.noalias() = x * w1;
    h = h.cwiseMax(0.0f);
    y.noalias() = h * w2;
    dw2.noalias() = h.transpose() * dy;
    dh.noalias() = dy * w2.transpose();
    dh = dh.cwiseProduct((h.array() > 0.0f).cast<float>().matrix());
    dw1.noalias() = x.transpose() * dh;
  };
  // About 50 ms of work per round.
  const long per_round = std::max(1L, 50L * 64 / batch);
  for (long i = 0; i < per_round; ++i) pass();
  std::vector<double> ms;
  for (long r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < per_round; ++i) pass();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    ms.push_back(took.count() / static_cast<double>(per_round));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"backend\": \"%s\", \"batch\": %ld, \"ms_per_pass\": %.4f, \"check\": %.3f}\n",
              backend, batch, ms[ms.size() / 2], static_cast<double>(dw1.sum() + y.sum()));
  return 0;
}
