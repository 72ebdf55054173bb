// stream: an output written with streaming (non-temporal) stores.
//
// Why: an ordinary store to a line that is not in the cache first reads the line from
// memory (write-allocate), so a kernel that writes an output of N bytes moves 2N bytes
// for it; when the output is larger than the last-level cache it cannot stay there
// anyway. A streaming store writes whole lines without reading them: a row op that reads
// X and writes Y moves 2 instead of 3 bytes per counted 2. The mark is a property of
// the buffer; the printer decides per dialect how (and whether) to emit such stores.
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

LoopProgram stream_output(const LoopProgram& p, const std::string& buffer) {
  LoopProgram r = p;
  for (LoopBuffer& b : r.buffers) {
    if (b.name != buffer) continue;
    if (b.role != TensorRole::Output)
      throw UserError(fmt::format("error: schedule: stream {}: {} is not an output (only outputs are written "
                                  "with streaming stores)",
                                  buffer, buffer));
    b.stream = true;
    return r;
  }
  throw UserError(fmt::format("error: schedule: stream {}: kernel '{}' has no buffer '{}'", buffer, p.kernel, buffer));
}

} // namespace unitile
