// libFuzzer target for the HCD loader: any input may be rejected, but only with a
// UserError; whatever loads must write back to TOML that loads to the same device.
//
// Build by hand (it is not part of the default build). Link Debian's compiled toml++ as
// the real build does: its header-only form keeps debug assertions that fire on some
// malformed input (e.g. a lone "[" before a newline) where the library reports a
// parse_error.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined \
//     -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -Isrc -Ibuild/src/hcd \
//     tests/fuzz/hcd_fuzz.cpp src/hcd/*.cpp build/src/hcd/BuiltinFiles.cpp \
//     src/ir/Type.cpp src/ir/Diagnostic.cpp -ltomlplusplus -lxxhash -o hcd_fuzz
//   ./hcd_fuzz -max_total_time=60 src/hcd/devices
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    unitile::hcd::Hcd h = unitile::hcd::load_string(text, "fuzz.toml");
    unitile::hcd::Hcd back = unitile::hcd::load_string(unitile::hcd::to_toml(h), "again.toml");
    if (back.hash() != h.hash()) std::abort();
    (void)unitile::hcd::summary(h);
  } catch (const unitile::UserError&) {
    // rejected with a diagnostic: the expected outcome for most inputs
  }
  return 0;
}
