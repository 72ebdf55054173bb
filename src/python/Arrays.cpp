// Device tensors from Python: NumPy and DLPack in (copied, or shared without a copy on
// devices whose buffers are host memory), NumPy and DLPack out, and moves between devices.
#include "Bindings.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

namespace unitile::python {

namespace {

namespace dl = nb::dlpack;

std::optional<DType> from_dlpack_dtype(dl::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  using C = dl::dtype_code;
  const auto code = static_cast<C>(t.code);
  if (code == C::Float && t.bits == 16) return DType::F16;
  if (code == C::Float && t.bits == 32) return DType::F32;
  if (code == C::Float && t.bits == 64) return DType::F64;
  if (code == C::Bfloat && t.bits == 16) return DType::BF16;
  if (code == C::Int && t.bits == 8) return DType::I8;
  if (code == C::Int && t.bits == 16) return DType::I16;
  if (code == C::Int && t.bits == 32) return DType::I32;
  if (code == C::Int && t.bits == 64) return DType::I64;
  if (code == C::UInt && t.bits == 8) return DType::U8;
  if (code == C::Bool && t.bits == 8) return DType::Bool;
  return std::nullopt;
}

dl::dtype to_dlpack_dtype(DType t) {
  using C = dl::dtype_code;
  auto make = [](C c, int bits) { return dl::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1}; };
  switch (t) {
  case DType::F16: return make(C::Float, 16);
  case DType::BF16: return make(C::Bfloat, 16);
  case DType::F32: return make(C::Float, 32);
  case DType::F64: return make(C::Float, 64);
  case DType::I8: return make(C::Int, 8);
  case DType::I16: return make(C::Int, 16);
  case DType::I32: return make(C::Int, 32);
  case DType::I64: return make(C::Int, 64);
  case DType::U8: return make(C::UInt, 8);
  case DType::Bool: return make(C::Bool, 8);
  }
  throw InternalError("to_dlpack_dtype: unknown dtype");
}

std::string dlpack_dtype_text(dl::dtype t) {
  return fmt::format("DLPack dtype (code {}, {} bits, {} lanes)", t.code, t.bits, t.lanes);
}

// Whether the strides (in elements, as DLPack gives them) are a dense C-order layout.
template <typename A> bool is_c_contiguous(const A& a) {
  int64_t expected = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(d));
  }
  return true;
}

template <typename A> std::vector<int64_t> shape_of(const A& a) {
  std::vector<int64_t> s;
  for (size_t d = 0; d < a.ndim(); ++d) s.push_back(static_cast<int64_t>(a.shape(d)));
  return s;
}

} // namespace

DType dtype_from_name(const std::string& name) {
  if (auto t = parse_dtype(name)) return *t;
  throw UserError(fmt::format("error: unknown dtype '{}' (f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool)", name));
}

PyTensor PyTensor::from_array(const std::shared_ptr<PyDevice>& device, nb::ndarray<nb::ro> array, bool share) {
  const std::optional<DType> dtype = from_dlpack_dtype(array.dtype());
  if (!dtype)
    throw UserError(fmt::format("error: unsupported array dtype: {}; Unitile has f16, bf16, f32, f64, i8, i16, "
                                "i32, i64, u8 and bool",
                                dlpack_dtype_text(array.dtype())));
  if (array.device_type() != nb::device::cpu::value)
    throw UserError(fmt::format("error: the array lives on DLPack device type {}; Unitile imports host (CPU) "
                                "arrays, copy it to the host first",
                                array.device_type()));
  if (!is_c_contiguous(array))
    throw UserError("error: the array is not C-contiguous; pass a contiguous copy (numpy.ascontiguousarray)");
  PyTensor t;
  t.device = device;
  t.tensor.dtype = *dtype;
  t.tensor.shape = shape_of(array);
  const size_t bytes = t.tensor.nbytes();
  const Device& dev = device->session->device();
  auto* data = static_cast<uint8_t*>(const_cast<void*>(static_cast<const void*>(array.data())));
  if (share && dev.shares_host_memory() && reinterpret_cast<uintptr_t>(data) % 8 == 0 && bytes > 0) {
    t.tensor.buffer = std::make_shared<DeviceBuffer>(dev.wrap_host(data, bytes));
    t.owner = nb::cast(array); // the array's memory must outlive the buffer
  } else {
    auto b = std::make_shared<DeviceBuffer>(dev.alloc(bytes));
    dev.copy_in(*b, data, bytes);
    t.tensor.buffer = std::move(b);
  }
  return t;
}

nb::ndarray<nb::numpy> PyTensor::numpy() const {
  const size_t bytes = tensor.nbytes();
  auto* host = new uint8_t[std::max<size_t>(bytes, 1)];
  nb::capsule owner(host, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  device->session->device().copy_out(host, *tensor.buffer, bytes);
  std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
  return nb::ndarray<nb::numpy>(host, shape.size(), shape.data(), owner, nullptr, to_dlpack_dtype(tensor.dtype));
}

nb::ndarray<> PyTensor::host_view(nb::handle self) const {
  const Device& dev = device->session->device();
  std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
  if (dev.shares_host_memory()) {
    void* data = dev.host_pointer(*tensor.buffer);
    return nb::ndarray<>(data, shape.size(), shape.data(), self, nullptr, to_dlpack_dtype(tensor.dtype));
  }
  // Another device's memory is not addressable here: export a host copy.
  nb::ndarray<nb::numpy> copy = numpy();
  return nb::ndarray<>(copy.data(), shape.size(), shape.data(), nb::cast(copy), nullptr,
                       to_dlpack_dtype(tensor.dtype));
}

PyTensor PyTensor::to(const std::shared_ptr<PyDevice>& target) const {
  if (target.get() == device.get()) return *this;
  const size_t bytes = tensor.nbytes();
  std::vector<uint8_t> host(bytes);
  device->session->device().copy_out(host.data(), *tensor.buffer, bytes);
  PyTensor t;
  t.device = target;
  t.tensor.dtype = tensor.dtype;
  t.tensor.shape = tensor.shape;
  auto b = std::make_shared<DeviceBuffer>(target->session->device().alloc(bytes));
  target->session->device().copy_in(*b, host.data(), bytes);
  t.tensor.buffer = std::move(b);
  return t;
}

void bind_arrays(nb::module_& m) {
  nb::class_<PyTensor>(m, "DeviceTensor", "A dense C-order tensor in one device's memory")
      .def_static("from_array", &PyTensor::from_array, nb::arg("device"), nb::arg("array"), nb::arg("share"),
                  "Copy a host array (anything with DLPack or the buffer protocol) to the device; with share, "
                  "a device whose buffers are host memory uses the array's memory itself")
      .def_prop_ro("dtype", [](const PyTensor& t) { return std::string(dtype_name(t.tensor.dtype)); })
      .def_prop_ro("shape", [](const PyTensor& t) { return t.tensor.shape; })
      .def_prop_ro("device", [](const PyTensor& t) { return t.device; })
      .def_prop_ro("shares_memory", [](const PyTensor& t) { return t.owner.is_valid(); },
                   "whether the tensor uses a host array's memory (no copy was made)")
      .def("numpy", &PyTensor::numpy, "A NumPy copy of the tensor")
      .def(
          "dlpack_capsule", [](nb::handle self) { return nb::cast<const PyTensor&>(self).host_view(self); },
          "A DLPack capsule over host memory: the tensor's own on host-memory devices, else a copy")
      .def("to", &PyTensor::to, nb::arg("device"), "The tensor on another device (a copy through the host)");
}

} // namespace unitile::python
