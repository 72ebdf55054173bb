// The benchmark suites of `unitile bench` (issue 3's targets): which kernel, which
// shapes, which baselines, what tolerance, how many bytes count as moved.
#pragma once

#include "harness/BenchRunner.h"

#include <string>
#include <vector>

namespace unitile::bench {

struct SuiteInfo {
  std::string name;        // the --op name
  std::string shape_form;  // how --shape is read for this suite, for --help
  std::vector<std::string> dtypes;
};

/// Every suite, in the order `unitile bench` runs them.
const std::vector<SuiteInfo>& suites();

/// UserError unless every text in `shapes` is a shape every suite in `names` can read.
void check_shapes(const std::vector<std::string>& names, const std::vector<std::string>& shapes);

/// Run suite `name` under the runner's options (its --shape list, or the suite's
/// defaults: the targets, or small shapes with --quick). A malformed --shape or
/// an unsupported dtype is a UserError.
void run_suite(BenchRunner& runner, const std::string& name);

} // namespace unitile::bench
