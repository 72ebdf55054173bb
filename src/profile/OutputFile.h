// Writing report files all or nothing: each file goes to a temporary name beside it and
// is renamed into place only when every file of the set was written, so a failed or
// interrupted profile never leaves a half-written trace or report behind.
#pragma once

#include <string>
#include <vector>

namespace unitile::profile {

/// A UserError naming `what` if `path` cannot be created: its folder is missing, is not
/// a folder or is not writable, or `path` is a folder. Checked before a long run.
void check_writable(const std::string& path, const std::string& what);

class StagedOutputs {
public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs(); // removes temporaries that were not committed

  /// Write `content` to a temporary file next to `path`; UserError on failure.
  void add(const std::string& path, const std::string& content, const std::string& what);
  /// Rename every temporary into place.
  void commit();

private:
  struct Staged {
    std::string path, temp, what;
  };
  std::vector<Staged> staged_;
};

/// One file, all or nothing.
void write_output_file(const std::string& path, const std::string& content,
                       const std::string& what);

} // namespace unitile::profile
