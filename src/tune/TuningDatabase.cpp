// The SQLite tuning database: schema, one-transaction-per-row inserts, best-row queries,
// and the JSON form of a record used by export and import.
#include "tune/TuningDatabase.h"

#include "ir/Diagnostic.h"
#include "runtime/KernelCache.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdlib>
#include <ctime>

namespace unitile {

namespace {

// The table holds measurements only; nothing in it depends on which candidates exist.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY,
  kernel_hash TEXT NOT NULL,
  shape TEXT NOT NULL,
  dtype TEXT NOT NULL,
  hcd_hash TEXT NOT NULL,
  kernel_name TEXT NOT NULL,
  schedule TEXT NOT NULL,
  median_ms REAL NOT NULL,
  status TEXT NOT NULL,
  detail TEXT NOT NULL,
  created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS measurements_by_key ON measurements (kernel_hash, shape, dtype, hcd_hash);
CREATE UNIQUE INDEX IF NOT EXISTS measurements_unique ON measurements (kernel_hash, shape, dtype, hcd_hash, schedule, created);
)sql";

constexpr const char* kColumns = "kernel_hash, shape, dtype, hcd_hash, kernel_name, schedule, "
                                 "median_ms, status, detail, created";

std::string now_utc() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const auto us = duration_cast<microseconds>(now.time_since_epoch()).count() % 1000000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}

TrialStatus status_from_name(const std::string& s, const std::string& where) {
  for (TrialStatus t : {TrialStatus::Ok, TrialStatus::WrongResult, TrialStatus::CompileError})
    if (s == trial_status_name(t))
      return t;
  throw UserError(
      fmt::format("error: {}: unknown status '{}' (ok, wrong result, compile error)", where, s));
}

// A prepared statement, finalized on every path.
class Statement {
public:
  Statement(sqlite3* db, const std::string& sql, const std::filesystem::path& path)
      : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
      throw UserError(
          fmt::format("error: tuning database {}: {}", path.string(), sqlite3_errmsg(db)));
  }
  ~Statement() { sqlite3_finalize(st_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void text(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.c_str(), -1, SQLITE_TRANSIENT);
  }
  void real(int i, double v) { sqlite3_bind_double(st_, i, v); }
  // SQLITE_ROW or SQLITE_DONE; anything else is an error.
  int step() {
    const int rc = sqlite3_step(st_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      throw UserError(
          fmt::format("error: tuning database {}: {}", path_.string(), sqlite3_errmsg(db_)));
    return rc;
  }
  std::string column_text(int i) const {
    const unsigned char* t = sqlite3_column_text(st_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double column_real(int i) const { return sqlite3_column_double(st_, i); }
  int64_t column_int64(int i) const { return sqlite3_column_int64(st_, i); }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }

private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  const std::filesystem::path& path_;
};

// One spelling per schedule (keys sorted), so the same schedule imported twice is one row.
std::string canonical_json(const std::string& json) {
  return nlohmann::json::parse(json).dump();
}

void bind_record(Statement& st, const TuningRecord& r) {
  st.text(1, r.key.kernel_hash);
  st.text(2, r.key.shape);
  st.text(3, r.key.dtype);
  st.text(4, r.key.hcd_hash);
  st.text(5, r.kernel_name);
  st.text(6, canonical_json(r.schedule_json));
  st.real(7, r.median_ms);
  st.text(8, trial_status_name(r.status));
  st.text(9, r.detail);
  st.text(10, r.created);
}

TuningRecord read_record(const Statement& st, const std::string& where) {
  TuningRecord r;
  r.key.kernel_hash = st.column_text(0);
  r.key.shape = st.column_text(1);
  r.key.dtype = st.column_text(2);
  r.key.hcd_hash = st.column_text(3);
  r.kernel_name = st.column_text(4);
  r.schedule_json = st.column_text(5);
  r.median_ms = st.column_real(6);
  r.status = status_from_name(st.column_text(7), where);
  r.detail = st.column_text(8);
  r.created = st.column_text(9);
  return r;
}

} // namespace

const char* trial_status_name(TrialStatus s) {
  switch (s) {
  case TrialStatus::Ok:
    return "ok";
  case TrialStatus::WrongResult:
    return "wrong result";
  case TrialStatus::CompileError:
    return "compile error";
  }
  return "?";
}

std::optional<std::filesystem::path> TuningDatabase::default_path() {
  if (const char* p = std::getenv("UNITILE_TUNING_DB"); p && *p)
    return std::filesystem::path(p);
  if (auto dir = KernelCache::default_dir())
    return *dir / "tuning.sqlite";
  return std::nullopt;
}

TuningDatabase::TuningDatabase(const std::filesystem::path& path, bool create) : path_(path) {
  if (create && path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
  }
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("error: tuning database {}: cannot open ({})", path.string(), why));
  }
  sqlite3_busy_timeout(db_, 10000); // another tuner may be writing
  try {
    // WAL: a writer killed mid-transaction leaves the last committed state; FULL makes
    // each committed row durable across power loss too.
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    exec(kSchema);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

TuningDatabase::~TuningDatabase() {
  sqlite3_close(db_);
}

void TuningDatabase::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw UserError(fmt::format("error: tuning database {}: {}", path_.string(), why));
  }
}

void TuningDatabase::insert(TuningRecord r) {
  if (r.created.empty())
    r.created = now_utc();
  // A single INSERT outside BEGIN is one transaction of its own.
  Statement st(db_,
               fmt::format("INSERT INTO measurements ({}) VALUES (?,?,?,?,?,?,?,?,?,?)", kColumns),
               path_);
  bind_record(st, r);
  st.step();
}

size_t TuningDatabase::insert_new(const std::vector<TuningRecord>& rows) {
  exec("BEGIN IMMEDIATE");
  size_t added = 0;
  try {
    Statement st(db_,
                 fmt::format("INSERT OR IGNORE INTO measurements ({}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                             kColumns),
                 path_);
    for (const TuningRecord& r : rows) {
      bind_record(st, r);
      st.step();
      added += static_cast<size_t>(sqlite3_changes(db_));
      st.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return added;
}

std::vector<std::pair<std::string, int>> TuningDatabase::other_hcds(const TuningKey& key) const {
  Statement st(db_,
               "SELECT hcd_hash, COUNT(*) FROM measurements WHERE kernel_hash=? AND shape=? AND dtype=? AND "
               "hcd_hash<>? AND status='ok' GROUP BY hcd_hash ORDER BY hcd_hash",
               path_);
  st.text(1, key.kernel_hash);
  st.text(2, key.shape);
  st.text(3, key.dtype);
  st.text(4, key.hcd_hash);
  std::vector<std::pair<std::string, int>> out;
  while (st.step() == SQLITE_ROW) out.emplace_back(st.column_text(0), static_cast<int>(st.column_int64(1)));
  return out;
}

std::optional<TuningRecord> TuningDatabase::best(const TuningKey& key) const {
  // A schedule measured several times (the tuner re-times its leaders, interleaved with
  // the auto-scheduler's schedule) is judged by the median of its measurements, so one
  // lucky run on a noisy machine does not make it the best.
  Statement st(db_,
               fmt::format("SELECT {} FROM measurements WHERE kernel_hash=? AND shape=? AND "
                           "dtype=? AND hcd_hash=? AND status='ok' ORDER BY id ASC",
                           kColumns),
               path_);
  st.text(1, key.kernel_hash);
  st.text(2, key.shape);
  st.text(3, key.dtype);
  st.text(4, key.hcd_hash);
  struct Group {
    TuningRecord latest;
    std::vector<double> ms;
    size_t first = 0; // order of the schedule's first measurement: ties go to the earlier
  };
  std::map<std::string, Group> groups;
  size_t order = 0;
  while (st.step() == SQLITE_ROW) {
    TuningRecord r = read_record(st, path_.string());
    auto [it, fresh] = groups.try_emplace(r.schedule_json);
    if (fresh)
      it->second.first = order;
    it->second.ms.push_back(r.median_ms);
    it->second.latest = std::move(r);
    ++order;
  }
  const Group* best = nullptr;
  double best_ms = 0;
  for (auto& [schedule, g] : groups) {
    std::vector<double> v = g.ms;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (!best || m < best_ms || (m == best_ms && g.first < best->first)) {
      best = &g;
      best_ms = m;
    }
  }
  if (!best)
    return std::nullopt;
  TuningRecord out = best->latest;
  out.median_ms = best_ms;
  out.measurements = static_cast<int>(best->ms.size());
  return out;
}

std::vector<TuningRecord> TuningDatabase::rows(const TuningKey* key) const {
  std::string sql = fmt::format("SELECT {} FROM measurements", kColumns);
  if (key)
    sql += " WHERE kernel_hash=? AND shape=? AND dtype=? AND hcd_hash=?";
  sql += " ORDER BY id ASC";
  Statement st(db_, sql, path_);
  if (key) {
    st.text(1, key->kernel_hash);
    st.text(2, key->shape);
    st.text(3, key->dtype);
    st.text(4, key->hcd_hash);
  }
  std::vector<TuningRecord> out;
  while (st.step() == SQLITE_ROW)
    out.push_back(read_record(st, path_.string()));
  return out;
}

std::string record_to_json(const TuningRecord& r) {
  nlohmann::json j = {{"kernel_hash", r.key.kernel_hash},
                      {"shape", r.key.shape},
                      {"dtype", r.key.dtype},
                      {"hcd_hash", r.key.hcd_hash},
                      {"kernel", r.kernel_name},
                      {"schedule", nlohmann::json::parse(r.schedule_json)},
                      {"median_ms", r.median_ms},
                      {"status", trial_status_name(r.status)},
                      {"detail", r.detail},
                      {"created", r.created}};
  return j.dump();
}

TuningRecord record_from_json(const std::string& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("error: {}: not JSON ({})", where, e.what()));
  }
  if (!j.is_object())
    throw UserError(fmt::format("error: {}: a record must be a JSON object", where));
  auto text = [&](const char* field) {
    if (!j.contains(field) || !j[field].is_string())
      throw UserError(
          fmt::format("error: {}: field '{}' is missing or not a string", where, field));
    return j[field].get<std::string>();
  };
  TuningRecord r;
  r.key.kernel_hash = text("kernel_hash");
  r.key.shape = text("shape");
  r.key.dtype = text("dtype");
  r.key.hcd_hash = text("hcd_hash");
  r.kernel_name = text("kernel");
  r.status = status_from_name(text("status"), where);
  r.detail = text("detail");
  r.created = text("created");
  if (!j.contains("median_ms") || !j["median_ms"].is_number())
    throw UserError(fmt::format("error: {}: field 'median_ms' is missing or not a number", where));
  r.median_ms = j["median_ms"].get<double>();
  if (!j.contains("schedule"))
    throw UserError(fmt::format("error: {}: field 'schedule' is missing", where));
  r.schedule_json = j["schedule"].dump();
  schedule_from_json(r.schedule_json, where); // refuse a schedule that would not load later
  return r;
}

} // namespace unitile
