// Looking up the best recorded schedule of a kernel in the tuning database.
#include "tune/TunedLookup.h"

#include "tune/TuningDatabase.h"

#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <set>

namespace unitile {

ScheduleLookup tuning_database_lookup(std::optional<std::filesystem::path> path) {
  struct State {
    std::optional<std::filesystem::path> path;
    std::unique_ptr<TuningDatabase> db;
    bool tried = false;
    std::set<std::string> noted; // keys whose records for other HCDs were reported
  };
  auto state = std::make_shared<State>();
  state->path = std::move(path);
  return [state](const Kernel& k, const ShapeBindings& b,
                 const hcd::Hcd& hcd) -> std::optional<FoundSchedule> {
    if (!state->tried) {
      state->tried = true;
      std::error_code ec;
      if (state->path && std::filesystem::exists(*state->path, ec)) {
        try {
          state->db = std::make_unique<TuningDatabase>(*state->path, false);
        } catch (const UserError& e) {
          std::cerr << "unitile: note: " << e.what() << "; using the auto-scheduler\n";
        }
      }
    }
    if (!state->db)
      return std::nullopt;
    const TuningKey key = tuning_key(k, b, hcd);
    std::optional<TuningRecord> best;
    try {
      best = state->db->best(key);
    } catch (const UserError& e) {
      std::cerr << "unitile: note: " << e.what() << "; using the auto-scheduler\n";
      return std::nullopt;
    }
    if (!best) {
      // Records of this kernel and shape made for another description of the device (a
      // changed HCD, or another machine's) do not apply; say so once per key, since the
      // user who tuned would otherwise see the auto-scheduler's speed with no reason.
      std::vector<std::pair<std::string, int>> others;
      try {
        others = state->db->other_hcds(key);
      } catch (const UserError&) {
      }
      const std::string seen = key.kernel_hash + "|" + key.shape + "|" + key.dtype + "|" + key.hcd_hash;
      if (!others.empty() && state->noted.insert(seen).second) {
        int rows = 0;
        std::string hashes;
        for (const auto& [hash, n] : others) {
          rows += n;
          hashes += (hashes.empty() ? "" : ", ") + hash;
        }
        std::cerr << fmt::format(
            "unitile: note: {} has {} measurement{} of kernel {} at shape {} for other device descriptions "
            "(HCD hash {}) and none for {} (HCD hash {}); using the auto-scheduler (`unitile tune` on this "
            "device records schedules for it)\n",
            state->path->string(), rows, rows == 1 ? "" : "s", k.name, key.shape, hashes, hcd.name, key.hcd_hash);
      }
      return std::nullopt;
    }
    FoundSchedule found;
    found.schedule = schedule_from_json(best->schedule_json, state->path->string());
    found.reasons.push_back(
        fmt::format("tuned: the fastest measured schedule for shape {} in {} (median {:.4g} ms "
                    "over {} measurement{}, last {})",
                    key.shape, state->path->string(), best->median_ms, best->measurements,
                    best->measurements == 1 ? "" : "s", best->created));
    return found;
  };
}

} // namespace unitile
