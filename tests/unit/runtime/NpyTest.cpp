// .npy round trips for every dtype, and the reader's refusal of malformed headers.
#include "runtime/Npy.h"

#include "ir/Diagnostic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace unitile {
namespace {

using ::testing::HasSubstr;

constexpr DType kAllDTypes[] = {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8,
                                DType::I16, DType::I32,  DType::I64, DType::U8,  DType::Bool};

// A .npy file with a hand-written header dict (padded like NumPy's writer).
std::string npy_with_header(const std::string& dict, std::string_view data, int major = 1) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + std::string(data);
}

std::string error_of(const std::string& bytes, std::optional<DType> as = std::nullopt) {
  try {
    decode_npy(bytes, "t.npy", as);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Npy, RoundTripsEveryDType) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor a = random_tensor(t, {3, 5, 2}, 7);
    const std::string bytes = encode_npy(a);
    EXPECT_EQ((bytes.size() - a.nbytes()) % 64, 0u) << "data must start 64-byte aligned";
    Tensor b = decode_npy(bytes, "mem", t);
    EXPECT_EQ(b.dtype, t);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(Npy, RoundTripsScalarsOneDimAndEmpty) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, {7}, {0, 4}}) {
    Tensor a = random_tensor(DType::F32, shape, 1);
    Tensor b = decode_npy(encode_npy(a), "mem");
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(Npy, WritesNumPyHeaderText) {
  Tensor a = Tensor::zeros(DType::I32, {2, 3});
  const std::string bytes = encode_npy(a);
  EXPECT_THAT(bytes, HasSubstr("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_THAT(encode_npy(Tensor::zeros(DType::F64, {4})), HasSubstr("'shape': (4,)"));
  EXPECT_THAT(encode_npy(Tensor::zeros(DType::Bool, {})), HasSubstr("'descr': '|b1'"));
  EXPECT_THAT(encode_npy(Tensor::zeros(DType::BF16, {1})), HasSubstr("'descr': '<u2'"));
}

TEST(Npy, ReadsVersion2AndDoubleQuotesAndTrailingCommaInShape) {
  const float v[2] = {1.5f, -2.0f};
  std::string data(reinterpret_cast<const char*>(v), sizeof v);
  Tensor t = decode_npy(npy_with_header(R"({"descr": "<f4", "fortran_order": False, "shape": (1, 2,)})", data, 2),
                        "mem");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.get(1), -2.0);
}

TEST(Npy, U2IsBf16OnlyWhenAskedFor) {
  std::string data("\x80\x3f", 2); // bf16 1.0
  std::string bytes = npy_with_header("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", data);
  Tensor t = decode_npy(bytes, "mem", DType::BF16);
  EXPECT_EQ(t.dtype, DType::BF16);
  EXPECT_EQ(t.get(0), 1.0);
  EXPECT_THAT(error_of(bytes), HasSubstr("<u2 is read only as the raw bits of a bf16 tensor"));
}

TEST(Npy, RejectsMalformedFiles) {
  const std::string four(4, '\0');
  struct Case {
    std::string bytes;
    std::string message;
  } cases[] = {
      {"not a npy file at all", "missing the \\x93NUMPY magic"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four).replace(6, 1, "\x03"),
       "format version 3.0"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", four), "fortran_order is True"},
      {npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four), "big-endian"},
      {npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", four), "unsupported dtype descr '<c8'"},
      {npy_with_header("{'descr': '<f4', 'shape': (1,), }", four), "must give 'descr', 'fortran_order' and 'shape'"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four), "unexpected key 'x'"},
      {npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", four), "appears twice"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four), "needs 8 data bytes, the file has 4"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four + "xx"), "the file has 6"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", four), "must be written (n,)"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", four), "non-negative integer"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", four), "True or False"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", four), "after the header dict"},
      {npy_with_header("{'descr: '<f4'}", four), "header"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "truncated header"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const std::string err = error_of(c.bytes);
    EXPECT_THAT(err, HasSubstr("t.npy: error: not a valid .npy file"));
    EXPECT_THAT(err, HasSubstr(c.message));
  }
}

TEST(Npy, FileRoundTripAndMissingFile) {
  const auto path = std::filesystem::temp_directory_path() / ("unitile-npy-test-" + std::to_string(::getpid()) + ".npy");
  Tensor a = random_tensor(DType::I16, {4, 4}, 3);
  write_npy(path.string(), a);
  EXPECT_EQ(read_npy(path.string()).data, a.data);
  std::filesystem::remove(path);
  try {
    read_npy(path.string());
    FAIL() << "reading a missing file must fail";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open file"));
  }
}

} // namespace
} // namespace unitile
