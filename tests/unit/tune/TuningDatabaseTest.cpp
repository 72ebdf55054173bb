// The tuning database: rows, best(), export/import round trip, and surviving a writer
// killed by SIGKILL mid-run.
#include "tune/TuningDatabase.h"

#include "ir/Diagnostic.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace unitile {
namespace {

namespace fs = std::filesystem;

// A fresh database path in its own temporary directory, removed after the test.
struct TempDb {
  explicit TempDb(const std::string& name)
      : dir(fs::temp_directory_path() /
            ("unitile-tuning-test-" + std::to_string(getpid()) + "-" + name)),
        path(dir / "tuning.sqlite") {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDb() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path dir, path;
};

TuningRecord record(const std::string& shape, double ms, TrialStatus status,
                    const std::string& schedule) {
  TuningRecord r;
  r.key = {"00000000000000aa", shape, "f32", "00000000000000bb"};
  r.kernel_name = "MatrixMul";
  r.schedule_json = schedule;
  r.median_ms = ms;
  r.status = status;
  return r;
}

const char* kSplit = R"({"primitives":[{"op":"split","vars":["i"],"factors":[8]}]})";
const char* kEmpty = R"({"primitives":[]})";

TEST(TuningDatabase, BestIsTheFastestOkRowOfItsKey) {
  const TempDb tmp("best");
  const fs::path& path = tmp.path;
  TuningDatabase db(path);
  db.insert(record("M=64", 2.0, TrialStatus::Ok, kEmpty));
  db.insert(record("M=64", 0.5, TrialStatus::WrongResult, kEmpty)); // fast but wrong: never best
  db.insert(record("M=64", 1.0, TrialStatus::Ok, kSplit));
  db.insert(record("M=128", 0.1, TrialStatus::Ok, kEmpty)); // another shape bucket
  const TuningKey key = record("M=64", 0, TrialStatus::Ok, kEmpty).key;
  auto best = db.best(key);
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(best->median_ms, 1.0);
  EXPECT_EQ(schedule_from_json(best->schedule_json, "test").primitives.size(), 1u);
  EXPECT_EQ(db.rows(&key).size(), 3u);
  EXPECT_EQ(db.rows().size(), 4u);
  TuningKey other = key;
  other.hcd_hash = "00000000000000cc";
  EXPECT_FALSE(db.best(other));
  // Rows survive reopening, and adding more never removes any.
  TuningDatabase again(path);
  again.insert(record("M=64", 3.0, TrialStatus::CompileError, kEmpty));
  EXPECT_EQ(again.rows().size(), 5u);
  EXPECT_DOUBLE_EQ(again.best(key)->median_ms, 1.0);
}

// A schedule measured several times is judged by the median of its rows: one lucky run
// (0.5 ms among 3.0s) loses to a schedule that is steadily 2.0 ms.
TEST(TuningDatabase, BestIsTheLowestMedianOverEachSchedulesRows) {
  const TempDb tmp("median");
  TuningDatabase db(tmp.path);
  db.insert(record("M=64", 0.5, TrialStatus::Ok, kSplit));
  db.insert(record("M=64", 2.1, TrialStatus::Ok, kEmpty));
  db.insert(record("M=64", 3.0, TrialStatus::Ok, kSplit));
  db.insert(record("M=64", 1.9, TrialStatus::Ok, kEmpty));
  db.insert(record("M=64", 3.2, TrialStatus::Ok, kSplit));
  const TuningKey key = record("M=64", 0, TrialStatus::Ok, kEmpty).key;
  auto best = db.best(key);
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(best->median_ms, 2.0); // (1.9 + 2.1) / 2
  EXPECT_EQ(best->measurements, 2);
  EXPECT_TRUE(schedule_from_json(best->schedule_json, "test").primitives.empty());
  // Two more fast runs of the split schedule (0.5, 0.6, 0.7, 3.0, 3.2): its median, 0.7,
  // is now the lower.
  db.insert(record("M=64", 0.6, TrialStatus::Ok, kSplit));
  db.insert(record("M=64", 0.7, TrialStatus::Ok, kSplit));
  best = db.best(key);
  EXPECT_DOUBLE_EQ(best->median_ms, 0.7);
  EXPECT_EQ(best->measurements, 5);
  EXPECT_EQ(schedule_from_json(best->schedule_json, "test").primitives.size(), 1u);
}

TEST(TuningDatabase, ExportImportRoundTrip) {
  const TempDb a_tmp("export"), b_tmp("import");
  TuningDatabase from(a_tmp.path);
  from.insert(record("M=64", 1.5, TrialStatus::Ok, kSplit));
  from.insert(record("M=64", 0, TrialStatus::WrongResult, kEmpty));
  std::vector<TuningRecord> moved;
  for (const TuningRecord& r : from.rows())
    moved.push_back(record_from_json(record_to_json(r), "test"));
  TuningDatabase to(b_tmp.path);
  EXPECT_EQ(to.insert_new(moved), 2u);
  EXPECT_EQ(to.insert_new(moved), 0u); // importing twice adds nothing
  const std::vector<TuningRecord> a = from.rows(), b = to.rows();
  ASSERT_EQ(a.size(), b.size());
  for (size_t n = 0; n < a.size(); ++n) {
    EXPECT_EQ(a[n].key, b[n].key);
    EXPECT_EQ(a[n].schedule_json, b[n].schedule_json);
    EXPECT_EQ(a[n].median_ms, b[n].median_ms);
    EXPECT_EQ(a[n].status, b[n].status);
    EXPECT_EQ(a[n].created, b[n].created);
  }
  EXPECT_THROW(record_from_json("{\"shape\": 1}", "line 1"), UserError);
  EXPECT_THROW(record_from_json("not json", "line 2"), UserError);
}

TEST(TuningDatabase, ForeignFileIsAUserError) {
  const TempDb tmp("foreign");
  const fs::path& path = tmp.path;
  {
    std::ofstream(path)
        << "this is not an SQLite database, but it is long enough to have a header page...";
  }
  EXPECT_THROW(TuningDatabase db(path), UserError);
}

// A child inserts rows in a loop and reports each one whose insert returned through a
// pipe; it is killed with SIGKILL mid-run. Every reported row must be in the database,
// and the database must pass SQLite's integrity check.
TEST(TuningDatabase, SurvivesAWriterKilledBySigkill) {
  const TempDb tmp("sigkill");
  const fs::path& path = tmp.path;
  { TuningDatabase create(path); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    try {
      TuningDatabase db(path);
      for (int n = 0;; ++n) {
        db.insert(record("M=" + std::to_string(n), 1.0 + n, TrialStatus::Ok, kSplit));
        if (write(fds[1], &n, sizeof n) != sizeof n)
          _exit(3);
      }
    } catch (...) {
      _exit(2);
    }
  }
  close(fds[1]);
  std::set<int> confirmed;
  int n = 0;
  while (confirmed.size() < 40 && read(fds[0], &n, sizeof n) == sizeof n)
    confirmed.insert(n);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer ended on its own: " << status;
  while (read(fds[0], &n, sizeof n) == sizeof n)
    confirmed.insert(n); // reported before the kill
  close(fds[0]);
  ASSERT_GE(confirmed.size(), 40u);

  TuningDatabase db(path);
  std::set<std::string> shapes;
  for (const TuningRecord& r : db.rows())
    shapes.insert(r.key.shape);
  for (int c : confirmed)
    EXPECT_TRUE(shapes.count("M=" + std::to_string(c))) << "row " << c << " is lost";

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

} // namespace
} // namespace unitile
