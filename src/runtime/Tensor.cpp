// Element access and seeded random contents of host tensors.
#include "runtime/Tensor.h"

#include "ir/Diagnostic.h"
#include "runtime/HalfFloat.h"

#include <cmath>
#include <cstring>
#include <random>

namespace unitile {

namespace {

template <typename T> T load(const std::vector<uint8_t>& data, size_t i) {
  T v;
  std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T> void put(std::vector<uint8_t>& data, size_t i, T v) {
  std::memcpy(data.data() + i * sizeof(T), &v, sizeof(T));
}

// Float-to-integer conversion without the undefined behaviour of an out-of-range cast:
// truncate toward zero, then wrap modulo 2^64 (NaN gives 0).
int64_t to_wrapped_int(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<int64_t>(t);
  double m = std::fmod(t, 18446744073709551616.0);
  if (m < 0) m += 18446744073709551616.0;
  uint64_t u = m >= 9223372036854775808.0
                   ? static_cast<uint64_t>(m - 9223372036854775808.0) + (uint64_t{1} << 63)
                   : static_cast<uint64_t>(m);
  return static_cast<int64_t>(u);
}

// Uniform double in [0, 1) from the top 53 bits: the same on every platform, unlike
// std::uniform_real_distribution whose algorithm the standard leaves open.
double unit_interval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1p-53; }

// Uniform integer in [0, n) by rejection, so there is no modulo bias.
uint64_t below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

} // namespace

Tensor Tensor::zeros(DType t, std::vector<int64_t> shape) {
  Tensor out;
  out.dtype = t;
  out.data.assign(shape_numel(shape) * static_cast<size_t>(dtype_bytes(t)), 0);
  out.shape = std::move(shape);
  return out;
}

size_t Tensor::numel() const { return shape_numel(shape); }

double Tensor::get(size_t i) const {
  switch (dtype) {
  case DType::F16: return f16_bits_to_f32(load<uint16_t>(data, i));
  case DType::BF16: return bf16_bits_to_f32(load<uint16_t>(data, i));
  case DType::F32: return load<float>(data, i);
  case DType::F64: return load<double>(data, i);
  case DType::I8: return load<int8_t>(data, i);
  case DType::I16: return load<int16_t>(data, i);
  case DType::I32: return load<int32_t>(data, i);
  case DType::I64: return static_cast<double>(load<int64_t>(data, i));
  case DType::U8: return load<uint8_t>(data, i);
  case DType::Bool: return load<uint8_t>(data, i) != 0 ? 1.0 : 0.0;
  }
  UT_INTERNAL_ASSERT(false, "unknown dtype");
}

int64_t Tensor::get_int(size_t i) const {
  switch (dtype) {
  case DType::I8: return load<int8_t>(data, i);
  case DType::I16: return load<int16_t>(data, i);
  case DType::I32: return load<int32_t>(data, i);
  case DType::I64: return load<int64_t>(data, i);
  case DType::U8: return load<uint8_t>(data, i);
  case DType::Bool: return load<uint8_t>(data, i) != 0 ? 1 : 0;
  default: return to_wrapped_int(get(i));
  }
}

void Tensor::set(size_t i, double v) {
  switch (dtype) {
  case DType::F16: return put(data, i, f32_to_f16_bits(static_cast<float>(v)));
  case DType::BF16: return put(data, i, f32_to_bf16_bits(static_cast<float>(v)));
  case DType::F32: return put(data, i, static_cast<float>(v));
  case DType::F64: return put(data, i, v);
  case DType::I8: return put(data, i, static_cast<int8_t>(to_wrapped_int(v)));
  case DType::I16: return put(data, i, static_cast<int16_t>(to_wrapped_int(v)));
  case DType::I32: return put(data, i, static_cast<int32_t>(to_wrapped_int(v)));
  case DType::I64: return put(data, i, to_wrapped_int(v));
  case DType::U8: return put(data, i, static_cast<uint8_t>(to_wrapped_int(v)));
  case DType::Bool: return put(data, i, static_cast<uint8_t>(v != 0 ? 1 : 0));
  }
  UT_INTERNAL_ASSERT(false, "unknown dtype");
}

size_t shape_numel(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) {
    UT_INTERNAL_ASSERT(d >= 0, "negative extent in a concrete shape");
    n *= static_cast<size_t>(d);
  }
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string index_string(const std::vector<int64_t>& shape, size_t flat) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<size_t>(shape[d]);
    if (extent == 0) continue;
    idx[d] = static_cast<int64_t>(flat % extent);
    flat /= extent;
  }
  return shape_string(idx);
}

Tensor random_tensor(DType t, std::vector<int64_t> shape, uint64_t seed, uint64_t stream) {
  Tensor out = Tensor::zeros(t, std::move(shape));
  // Mix seed and stream so neighbouring seeds do not give shifted copies of one stream.
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
  std::mt19937_64 rng(seq);
  const size_t n = out.numel();
  for (size_t i = 0; i < n; ++i) {
    if (is_float(t)) {
      out.set(i, 2.0 * unit_interval(rng()) - 1.0);
    } else if (t == DType::Bool) {
      out.set(i, static_cast<double>(rng() >> 63));
    } else if (t == DType::U8) {
      out.set(i, static_cast<double>(below(rng, 9)));
    } else {
      out.set(i, static_cast<double>(static_cast<int64_t>(below(rng, 17)) - 8));
    }
  }
  return out;
}

} // namespace unitile
