// Whether each op works on each device, as its tests last found: the file the op test
// suite (tests/ops) writes and `unitile ops` reads. Nothing here is kept by hand.
#pragma once

#include <map>
#include <string>

namespace unitile::ops {

struct OpStatus {
  std::string path;
  bool found = false;   // the file exists (the op tests have run)
  std::string written;  // when the tests wrote it (UTC, ISO 8601)
  /// device -> op -> "ok" or why not ("failed: ...", "error: ...").
  std::map<std::string, std::map<std::string, std::string>> results;
};

/// $UNITILE_OPS_STATUS, else <dir of the executable>/../share/unitile/ops-status.json
/// (the build tree and the install tree alike).
std::string default_op_status_path();

/// Reads the file; a missing file gives found = false, a malformed one a UserError.
OpStatus read_op_status(const std::string& path);

/// What `unitile ops` says for one op on one device.
std::string device_status(const OpStatus& status, const std::string& device, const std::string& op);

} // namespace unitile::ops
