// The tuning database: every measured configuration as one row of an SQLite table, kept
// across runs and machines (export/import), and the best schedule per tuning key.
//
// Rows are only ever added: a new candidate, a new tuner or a re-run adds rows and
// never invalidates earlier ones, and the schema holds no list of candidates. Each row
// is its own transaction in WAL mode, so a tuner killed mid-run (even by SIGKILL) leaves
// a readable database with every row whose insert returned.
#pragma once

#include "schedule/Schedule.h"
#include "tune/TuningKey.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace unitile {

/// What became of a measured candidate.
enum class TrialStatus { Ok, WrongResult, CompileError };
const char* trial_status_name(TrialStatus s); // "ok", "wrong result", "compile error"

struct TuningRecord {
  TuningKey key;
  std::string kernel_name;   // for people reading the table; not part of the key
  std::string schedule_json; // to_json(Schedule)
  double median_ms = 0;      // of the real shape; 0 unless status is ok
  TrialStatus status = TrialStatus::Ok;
  std::string detail;  // why it was rejected, when it was
  std::string created; // UTC time of the measurement, ISO 8601 with microseconds
  int measurements = 1; // from best(): how many ok rows of this schedule median_ms summarises
};

class TuningDatabase {
public:
  /// Open (creating when `create`) the database at `path`. An unreadable or foreign
  /// file is a UserError naming the path.
  TuningDatabase(const std::filesystem::path& path, bool create = true);
  ~TuningDatabase();
  TuningDatabase(const TuningDatabase&) = delete;
  TuningDatabase& operator=(const TuningDatabase&) = delete;

  /// $UNITILE_TUNING_DB, else <kernel cache dir>/tuning.sqlite; none without either.
  static std::optional<std::filesystem::path> default_path();

  const std::filesystem::path& path() const { return path_; }

  /// Append one row in its own transaction; `created` is filled in when empty.
  void insert(TuningRecord r);
  /// Append rows from elsewhere (import) in one transaction, skipping rows already
  /// present (same key, schedule and time). Returns how many were new.
  size_t insert_new(const std::vector<TuningRecord>& rows);

  /// The best schedule for `key`, if any ok row exists: the one whose ok rows have the
  /// lowest median (each row is one measurement's median), ties to the earliest; the
  /// record is its latest row with median_ms set to that median.
  std::optional<TuningRecord> best(const TuningKey& key) const;
  /// The HCD hashes other than `key`'s under which `key`'s kernel, shape and dtype have
  /// ok rows, each with its count of rows, in hash order: records made for another
  /// description of a device (another machine, or a changed HCD) that `best` skips.
  std::vector<std::pair<std::string, int>> other_hcds(const TuningKey& key) const;
  /// Every row of `key` (all rows when null), oldest first.
  std::vector<TuningRecord> rows(const TuningKey* key = nullptr) const;

private:
  void exec(const char* sql) const;
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

/// One record as a JSON object (the export format is one object per line), and back;
/// a malformed object is a UserError naming `where`.
std::string record_to_json(const TuningRecord& r);
TuningRecord record_from_json(const std::string& line, const std::string& where);

} // namespace unitile
