// Loading a measurement baseline library (bench/baselines/) with dlopen and calling its
// C interface; a library that is missing or broken is reported, never fatal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct ub_op;

namespace unitile::bench {

struct BaselineApi; // the resolved ub_* entry points

/// One prepared operation of a baseline library; released on destruction.
class BaselineOp {
public:
  BaselineOp(std::shared_ptr<const BaselineApi> api, ub_op* op);
  ~BaselineOp();
  BaselineOp(const BaselineOp&) = delete;
  BaselineOp& operator=(const BaselineOp&) = delete;

  /// Which implementation the library chose.
  std::string impl() const;
  /// Run once; the error text on failure.
  std::optional<std::string> run(const std::vector<const void*>& inputs,
                                 const std::vector<void*>& outputs);

private:
  std::shared_ptr<const BaselineApi> api_;
  ub_op* op_;
};

class BaselineLibrary {
public:
  /// Open libunitile-baseline-NAME.so from baseline_dir(); nullopt with `why` set when
  /// it is absent or does not export the interface.
  static std::optional<BaselineLibrary> open(const std::string& name, std::string* why);

  const std::string& name() const { return name_; }
  /// Version and threading runtime, as the library describes itself.
  std::string describe() const;
  /// Set the library's threads; returns the count it reports in effect.
  int set_threads(int threads) const;
  /// Prepare an operation; nullptr with `why` set when the library cannot.
  std::unique_ptr<BaselineOp> create(const std::string& op, const std::string& dtype,
                                     const std::vector<int64_t>& dims,
                                     const std::vector<double>& params, std::string* why) const;

private:
  BaselineLibrary(std::string name, std::shared_ptr<const BaselineApi> api);
  std::string name_;
  std::shared_ptr<const BaselineApi> api_;
};

/// Where the baseline libraries live: $UNITILE_BASELINE_DIR, else lib/unitile/baselines
/// beside the running executable's bin/ (the build tree and the install tree alike).
std::string baseline_dir();

} // namespace unitile::bench
