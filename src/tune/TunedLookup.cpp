// Looking up the best recorded schedule of a kernel in the tuning database.
#include "tune/TunedLookup.h"

#include "tune/TuningDatabase.h"

#include <fmt/core.h>

#include <iostream>
#include <memory>

namespace unitile {

ScheduleLookup tuning_database_lookup(std::optional<std::filesystem::path> path) {
  struct State {
    std::optional<std::filesystem::path> path;
    std::unique_ptr<TuningDatabase> db;
    bool tried = false;
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
    if (!best)
      return std::nullopt;
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
