#include "data/text_readers.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/dataset.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TextReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("text_readers_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::string write_gz(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    gzclose(f);
    return path;
  }

  std::filesystem::path dir_;
};

// ---- CSV ----

TEST_F(TextReadersTest, CsvWithHeaderAndLastColumnLabel) {
  absl::StatusOr<CsvData> d =
      read_csv(write("iris.csv", "sepal,petal,class\n5.1,1.4,0\n4.9,-1.5e1,1\n\n+7,3,2\n"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->features, Tensor::from_vector<float>({5.1f, 1.4f, 4.9f, -15, 7, 3}, {3, 2}));
  EXPECT_EQ(d->labels, Tensor::from_vector<float>({0, 1, 2}));
  EXPECT_THAT(d->feature_names, ElementsAre("sepal", "petal"));
}

TEST_F(TextReadersTest, CsvLabelByNameOrIndexOrNone) {
  const std::string path = write("t.csv", "a,label,b\r\n1,10,2\r\n3,30,4\r\n");  // CRLF line ends
  CsvOptions by_name;
  by_name.label_name = "label";
  absl::StatusOr<CsvData> d = read_csv(path, by_name);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->features, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(d->labels, Tensor::from_vector<float>({10, 30}));
  EXPECT_THAT(d->feature_names, ElementsAre("a", "b"));

  CsvOptions by_index;
  by_index.label_column = -2;
  d = read_csv(path, by_index);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels, Tensor::from_vector<float>({10, 30}));

  CsvOptions no_label;
  no_label.label_column = std::nullopt;
  d = read_csv(path, no_label);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->features.shape(), (Shape{2, 3}));
  EXPECT_FALSE(d->labels.valid());
}

TEST_F(TextReadersTest, CsvHeaderlessQuotedTabSeparatedAndGzip) {
  CsvOptions o;
  o.has_header = false;
  o.label_column = 0;
  o.delimiter = '\t';
  absl::StatusOr<CsvData> d = read_csv(write_gz("q.tsv.gz", "1\t\"2.5\"\t 3 \n0\t4\t\"5\"\n"), o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->features, Tensor::from_vector<float>({2.5f, 3, 4, 5}, {2, 2}));
  EXPECT_EQ(d->labels, Tensor::from_vector<float>({1, 0}));
  EXPECT_THAT(d->feature_names, ElementsAre("column_1", "column_2"));
}

TEST_F(TextReadersTest, CsvFeedsADataset) {
  absl::StatusOr<CsvData> d = read_csv(write("d.csv", "x,y,l\n1,2,0\n3,4,1\n5,6,0\n"));
  ASSERT_TRUE(d.ok()) << d.status();
  DatasetIterator it = Dataset::from_tensor_slices(Structure::tuple({d->features, d->labels}))
                           .batch(2)
                           .make_iterator();
  auto batch = it.get_next();
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_EQ((**batch)[0].tensor(), Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ((**batch)[1].tensor(), Tensor::from_vector<float>({0, 1}));
}

TEST_F(TextReadersTest, CsvBadCellNamesFileLineAndColumn) {
  const std::string path = write("bad.csv", "a,b,c\n1,2,3\n4,abc,6\n");
  absl::StatusOr<CsvData> d = read_csv(path);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr(path + ":3: column 1 ('b')"));
  EXPECT_THAT(d.status().message(), HasSubstr("'abc'"));

  d = read_csv(write("empty_cell.csv", "a,b\n1,\n"));
  EXPECT_THAT(d.status().message(), HasSubstr("empty_cell.csv:2: column 1 ('b'): empty cell"));

  d = read_csv(write("ragged.csv", "a,b\n1,2\n3\n"));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("ragged.csv:3: 1 columns, but the header has 2"));

  d = read_csv(write("quote.csv", "a,b\n1,\"2\n"));
  EXPECT_THAT(d.status().message(), HasSubstr("quote.csv:2: column 1: unterminated quote"));

  d = read_csv(write("trailing.csv", "a\n1.5x\n"));
  EXPECT_THAT(d.status().message(), HasSubstr("'1.5x'"));
}

TEST_F(TextReadersTest, CsvBadOptionsAndMissingFile) {
  const std::string path = write("o.csv", "a,b\n1,2\n");
  CsvOptions o;
  o.label_column = 2;
  absl::StatusOr<CsvData> d = read_csv(path, o);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("label_column 2 is out of range for 2 columns"));

  o = CsvOptions();
  o.label_name = "nope";
  EXPECT_THAT(read_csv(path, o).status().message(), HasSubstr("no column is named 'nope'"));
  o.has_header = false;
  EXPECT_THAT(read_csv(path, o).status().message(), HasSubstr("needs has_header"));

  EXPECT_THAT(read_csv(write("empty.csv", "")).status().message(), HasSubstr("no header"));
  EXPECT_EQ(read_csv((dir_ / "missing.csv").string()).status().code(), absl::StatusCode::kNotFound);
}

// ---- LIBSVM ----

TEST_F(TextReadersTest, LibsvmOneBasedToCsr) {
  absl::StatusOr<LibsvmData> d = read_libsvm(
      write("a.svm", "1 1:0.5 3:2  # comment\n-1\t2:1\n\n# only a comment\n0\n+1 4:-3e-1\n"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels, Tensor::from_vector<float>({1, -1, 0, 1}));
  EXPECT_EQ(d->row_splits, Tensor::from_vector<int64_t>({0, 2, 3, 3, 4}));
  EXPECT_EQ(d->indices, Tensor::from_vector<int64_t>({0, 2, 1, 3}));
  EXPECT_EQ(d->values, Tensor::from_vector<float>({0.5f, 2, 1, -0.3f}));
  EXPECT_EQ(d->num_features, 4);

  absl::StatusOr<Tensor> dense = libsvm_to_dense(*d);
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(*dense, Tensor::from_vector<float>({0.5f, 0, 2, 0,  //
                                                0, 1, 0, 0,     //
                                                0, 0, 0, 0,     //
                                                0, 0, 0, -0.3f},
                                               {4, 4}));
  dense = libsvm_to_dense(*d, 6);
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(dense->shape(), (Shape{4, 6}));
  EXPECT_EQ(libsvm_to_dense(*d, 3).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TextReadersTest, LibsvmZeroBasedAndEmptyFile) {
  LibsvmOptions o;
  o.zero_based = true;
  absl::StatusOr<LibsvmData> d = read_libsvm(write("z.svm", "2 0:1 5:2\n"), o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->indices, Tensor::from_vector<int64_t>({0, 5}));
  EXPECT_EQ(d->num_features, 6);

  d = read_libsvm(write("e.svm", ""));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels.shape(), (Shape{0}));
  EXPECT_EQ(d->row_splits, Tensor::from_vector<int64_t>({0}));
}

TEST_F(TextReadersTest, LibsvmBadTokensNameFileAndLine) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"1 1:2\nx 1:2\n", ":2: token 'x' is not a number"},
      {"1 1:2\n1 3\n", ":2: token '3' is not index:value"},
      {"1 a:2\n", ":1: token 'a:2' does not start with an integer index"},
      {"1 1:b\n", ":1: token '1:b' does not end with a numeric value"},
      {"1 0:1\n", "below the index base 1 (pass zero_based = true"},
      {"1 3:1 2:1\n", "token '2:1' has an index not above the previous one"},
      {"1 2:1 2:5\n", "token '2:5' has an index not above the previous one"},
      {"1,2 1:1\n", "token '1,2' is not a number"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = write("bad" + std::to_string(i) + ".svm", cases[i].text);
    absl::StatusOr<LibsvmData> d = read_libsvm(path);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << cases[i].text;
    EXPECT_THAT(d.status().message(), HasSubstr(path)) << cases[i].text;
    EXPECT_THAT(d.status().message(), HasSubstr(cases[i].expected)) << cases[i].text;
  }
  EXPECT_EQ(read_libsvm((dir_ / "missing.svm").string()).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace psflow::internal
