// The tuner's search: the auto-scheduler's schedule first, then a beam search over the
// GEMM tiling of each contraction site (and over the task block and micro-tile of each
// contraction on tile registers, AMX, and the factors of each `tile`), each candidate
// checked on sim, then timed; last, the fastest few and the auto schedule are timed
// again in interleaved rounds, so that on a noisy machine one lucky run does not pick
// the recorded best.
#include "tune/Tuner.h"

#include "ir/Diagnostic.h"
#include "runtime/Inputs.h"
#include "runtime/OutputCheck.h"
#include "schedule/AutoSchedule.h"
#include "schedule/Lower.h"
#include "schedule/MatrixUnit.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

namespace unitile {

namespace {

std::string prim_text(const Primitive& p) {
  return to_text(Schedule{{p}});
}

// Where the primitives `block` sit, in order and contiguous, inside `s`.
std::optional<size_t> find_block(const Schedule& s, const std::vector<Primitive>& block) {
  if (block.empty() || block.size() > s.primitives.size())
    return std::nullopt;
  for (size_t at = 0; at + block.size() <= s.primitives.size(); ++at) {
    bool same = true;
    for (size_t n = 0; n < block.size() && same; ++n)
      same = prim_text(s.primitives[at + n]) == prim_text(block[n]);
    if (same)
      return at;
  }
  return std::nullopt;
}

Schedule replace_block(const Schedule& s, size_t at, size_t length,
                       const std::vector<Primitive>& with) {
  Schedule out;
  out.primitives.assign(s.primitives.begin(), s.primitives.begin() + static_cast<long>(at));
  out.primitives.insert(out.primitives.end(), with.begin(), with.end());
  out.primitives.insert(out.primitives.end(), s.primitives.begin() + static_cast<long>(at + length),
                        s.primitives.end());
  return out;
}

using TilingId =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, bool, int64_t>;
TilingId id_of(const GemmTiling& t) {
  return {t.mr, t.nr, t.kc, t.mc, t.nc, t.mg, t.ng, t.pack_a, t.pack_b, t.a_whole, t.ku};
}

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

// Keep a tiling consistent with its site: mg, ng (parallel blocks) multiples of mr, nr
// and no larger than the rounded-up extent; mc, nc multiples of mr, nr and no larger
// than mg, ng; kc no larger than K.
GemmTiling normalized(GemmTiling t, const GemmSite& s) {
  t.mr = std::clamp<int64_t>(t.mr, 1, std::max<int64_t>(1, s.M));
  t.kc = std::clamp<int64_t>(t.kc, 1, std::max<int64_t>(1, s.K));
  t.mg = std::clamp(round_up(std::max<int64_t>(t.mg, 1), t.mr), t.mr, round_up(s.M, t.mr));
  t.ng = std::clamp(round_up(std::max<int64_t>(t.ng, 1), t.nr), t.nr, round_up(s.N, t.nr));
  t.mc = std::clamp(round_up(std::max<int64_t>(t.mc, 1), t.mr), t.mr, t.mg);
  t.nc = std::clamp(round_up(std::max<int64_t>(t.nc, 1), t.nr), t.nr, t.ng);
  return t;
}

// One step along each parameter: mr by one row, nr by one vector, kc, mc, nc and the
// parallel block's mg and ng by a factor of two, each packing and the loop order switched,
// the reduction loop's unroll factor by two.
std::vector<GemmTiling> neighbours(const GemmTiling& t, const GemmSite& s, int lanes) {
  std::vector<GemmTiling> out;
  auto add = [&](auto change) {
    GemmTiling n = t;
    change(n);
    out.push_back(normalized(n, s));
  };
  add([](GemmTiling& n) { n.mr += 1; });
  add([](GemmTiling& n) { n.mr -= 1; });
  add([&](GemmTiling& n) { n.nr += lanes; });
  if (t.nr > lanes)
    add([&](GemmTiling& n) { n.nr -= lanes; });
  add([](GemmTiling& n) { n.kc *= 2; });
  add([](GemmTiling& n) { n.kc = std::max<int64_t>(4, n.kc / 2); });
  add([](GemmTiling& n) { n.mc *= 2; });
  add([](GemmTiling& n) { n.mc /= 2; });
  add([](GemmTiling& n) { n.nc *= 2; });
  add([](GemmTiling& n) { n.nc /= 2; });
  add([](GemmTiling& n) { n.mg *= 2; });
  add([](GemmTiling& n) { n.mg /= 2; });
  add([](GemmTiling& n) { n.ng *= 2; });
  add([](GemmTiling& n) { n.ng /= 2; });
  add([](GemmTiling& n) { n.pack_a = !n.pack_a; });
  add([](GemmTiling& n) { n.pack_b = !n.pack_b; });
  add([](GemmTiling& n) { n.a_whole = !n.a_whole; });
  add([](GemmTiling& n) { n.ku = std::min<int64_t>(8, n.ku * 2); });
  add([](GemmTiling& n) { n.ku = std::max<int64_t>(1, n.ku / 2); });
  return out;
}

// A tile-register launch's tiling (task block bm x bn, tm x tn accumulator tiles) made
// consistent with its site: tm, tn in {1, 2} (the 8 tile registers hold at most 2 x 2
// accumulators beside the operands), bm and bn multiples of the micro-tile and no larger
// than the rounded-up extents. So every candidate is one the launch accepts.
// A vector pair launch (pair_unit) has tm rows x tn vectors of accumulators instead: tn in
// 1..4, tm from 1 to what the vector registers hold beside them.
MatrixTiles normalized(MatrixTiles t, const MatrixSite& s, const hcd::Hcd& h) {
  t.bk = s.unit.k;
  if (pair_unit(s.unit)) {
    t.warps_n = std::clamp<int64_t>(t.warps_n, 1, 4);
    t.warps_m = std::clamp<int64_t>(t.warps_m, 1, std::max<int64_t>(1, pair_max_rows(t.warps_n, h)));
  } else {
    t.warps_m = std::clamp<int64_t>(t.warps_m, 1, 2);
    t.warps_n = std::clamp<int64_t>(t.warps_n, 1, 2);
  }
  const int64_t mm = t.warps_m * s.unit.m, mn = t.warps_n * s.unit.n;
  t.bm = std::clamp(round_up(std::max<int64_t>(t.bm, 1), mm), mm, round_up(s.M, mm));
  t.bn = std::clamp(round_up(std::max<int64_t>(t.bn, 1), mn), mn, round_up(s.N, mn));
  return t;
}

// One step along each: the task's rows and columns by a factor of two, the accumulator
// grid's rows and columns switched between one and two tiles (a vector pair micro-tile:
// two rows and one vector more or fewer).
std::vector<MatrixTiles> neighbours(const MatrixTiles& t, const MatrixSite& s, const hcd::Hcd& h) {
  std::vector<MatrixTiles> out;
  auto add = [&](auto change) {
    MatrixTiles n = t;
    change(n);
    out.push_back(normalized(n, s, h));
  };
  add([](MatrixTiles& n) { n.bm *= 2; });
  add([](MatrixTiles& n) { n.bm /= 2; });
  add([](MatrixTiles& n) { n.bn *= 2; });
  add([](MatrixTiles& n) { n.bn /= 2; });
  if (pair_unit(s.unit)) {
    add([](MatrixTiles& n) { n.warps_m += 2; });
    add([](MatrixTiles& n) { n.warps_m -= 2; });
    add([](MatrixTiles& n) { n.warps_n += 1; });
    add([](MatrixTiles& n) { n.warps_n -= 1; });
  } else {
    add([](MatrixTiles& n) { n.warps_m = 3 - n.warps_m; });
    add([](MatrixTiles& n) { n.warps_n = 3 - n.warps_n; });
  }
  return out;
}

class Search {
public:
  Search(Session& device, Session& sim, TuningDatabase& db, const Kernel& k, const ShapeBindings& b,
         const ParamValues& params, const TuneOptions& o,
         const std::function<void(const TuneProgress&)>& progress)
      : device_(device), sim_(sim), db_(db), k_(k), b_(b), params_(params), o_(o),
        progress_(progress), start_(std::chrono::steady_clock::now()) {
    key_ = tuning_key(k, b, device.device().hcd());
    ShapeBindings small;
    const std::vector<std::string> spec = specialisation_params(k);
    for (const auto& [name, v] : b)
      small[name] =
          std::find(spec.begin(), spec.end(), name) != spec.end() ? v : std::min(v, o.check_extent);
    small_ = bind_shapes(k, {}, small);
    small_inputs_ = complete_inputs(k, small_, {}, o.seed);
    inputs_ = complete_inputs(k, b, {}, o.seed);
    for (const TensorDecl* t : k.outputs())
      order_.push_back(t->name);
  }

  // The search's share of the budget; the rest is for re-timing its leaders.
  static constexpr double kSearchShare = 0.7;

  bool done() const {
    if (o_.trials > 0 && result.trials >= o_.trials)
      return true;
    const double share = o_.confirm_rounds > 0 ? kSearchShare : 1.0;
    return o_.budget_s > 0 && elapsed() >= share * o_.budget_s;
  }

  // Time the leaders again, interleaved with the auto-scheduler's schedule `auto_s`, and
  // set result.best from the database (each schedule's median over its rows).
  void retime(const Schedule& auto_s) {
    std::vector<const Measured*> leaders;
    for (const auto& [json, m] : measured_)
      leaders.push_back(&m);
    std::stable_sort(leaders.begin(), leaders.end(),
                     [](const Measured* a, const Measured* b) { return a->best_ms < b->best_ms; });
    if (leaders.size() > o_.confirm_top)
      leaders.resize(o_.confirm_top);
    if (auto it = measured_.find(to_json(auto_s)); it != measured_.end() &&
        std::find(leaders.begin(), leaders.end(), &it->second) == leaders.end())
      leaders.push_back(&it->second);
    if (leaders.size() >= 2) {
      for (int round = 0; round < o_.confirm_rounds; ++round) {
        if (round > 0 && o_.budget_s > 0 && elapsed() >= o_.budget_s)
          break;
        for (size_t n = 0; n < leaders.size(); ++n) {
          // Rotate the order each round, so no schedule always runs right after another.
          const Measured& m = *leaders[(n + static_cast<size_t>(round)) % leaders.size()];
          TuningRecord r;
          r.key = key_;
          r.kernel_name = k_.name;
          r.schedule_json = to_json(m.schedule);
          r.detail = fmt::format("re-timed, round {} of {}", round + 1, o_.confirm_rounds);
          try {
            auto real = device_.compile(k_, b_, m.schedule);
            RunResult timed = device_.run(*real, inputs_, params_, std::max(1, o_.repeat));
            r.median_ms = timed.timing->median_ms;
          } catch (const UserError& e) {
            continue; // it compiled and ran before; a failure now changes nothing recorded
          }
          db_.insert(r);
          ++result.retimed;
          TuneProgress p;
          p.trial = result.trials;
          p.trials = o_.trials;
          p.elapsed_s = elapsed();
          p.retimed = result.retimed;
          if (auto b = db_.best(key_))
            p.best_ms = b->median_ms;
          p.last = &r;
          if (progress_)
            progress_(p);
        }
      }
    }
    if (auto b = db_.best(key_))
      result.best = *b;
  }

  // Check `s` on the small shape, then time it on the real one; record the row.
  std::optional<double> measure(const Schedule& s) {
    TuningRecord r;
    r.key = key_;
    r.kernel_name = k_.name;
    r.schedule_json = to_json(s);
    try {
      auto small = device_.compile(k_, small_, s);
      RunResult got = device_.run(*small, small_inputs_, params_, 0);
      const CheckReport check = compare_outputs(order_, got.outputs, reference().outputs,
                                                longest_reduction_extent(k_, small_));
      if (!check.ok()) {
        r.status = TrialStatus::WrongResult;
        r.detail = check.message();
      } else {
        auto real = device_.compile(k_, b_, s);
        RunResult timed = device_.run(*real, inputs_, params_, std::max(1, o_.repeat));
        r.median_ms = timed.timing->median_ms;
      }
    } catch (const UserError& e) {
      r.status = TrialStatus::CompileError;
      r.detail = e.what();
    }
    db_.insert(r);
    ++result.trials;
    if (r.status == TrialStatus::Ok) {
      if (!result.best || r.median_ms < result.best->median_ms)
        result.best = r;
      auto [it, fresh] = measured_.try_emplace(r.schedule_json, Measured{s, r.median_ms});
      if (!fresh)
        it->second.best_ms = std::min(it->second.best_ms, r.median_ms);
    }
    TuneProgress p;
    p.trial = result.trials;
    p.trials = o_.trials;
    p.elapsed_s = elapsed();
    if (result.best)
      p.best_ms = result.best->median_ms;
    p.last = &r;
    if (progress_)
      progress_(p);
    if (r.status != TrialStatus::Ok)
      return std::nullopt;
    return r.median_ms;
  }

  TuneResult result;

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  const RunResult& reference() {
    if (!reference_) {
      auto ref = sim_.compile(k_, small_, Schedule{}); // the plain default lowering
      reference_ = sim_.run(*ref, small_inputs_, params_, 0);
    }
    return *reference_;
  }

  Session& device_;
  Session& sim_;
  TuningDatabase& db_;
  const Kernel& k_;
  const ShapeBindings& b_;
  const ParamValues& params_;
  const TuneOptions& o_;
  const std::function<void(const TuneProgress&)>& progress_;
  std::chrono::steady_clock::time_point start_;
  TuningKey key_;
  ShapeBindings small_;
  std::map<std::string, Tensor> small_inputs_, inputs_;
  std::vector<std::string> order_;
  std::optional<RunResult> reference_;
  struct Measured {
    Schedule schedule;
    double best_ms;
  };
  std::map<std::string, Measured> measured_; // ok schedules by JSON: the re-timing's pool
};

// A beam search from `start` (measured at `start_ms`, 1e300 when it was not): each round
// measures the neighbours of the beam not seen before (`next(t)` lists a tiling's,
// already filtered to those that fit) as the schedules `build(t)`, and keeps the `width`
// fastest. Returns the beam, fastest first, when the budget ends or nothing new is left.
template <class Tiling, class Key, class Next, class Build>
std::vector<std::pair<Tiling, double>> beam_search(Search& search, const Tiling& start, double start_ms,
                                                   size_t width, Key key, Next next, Build build) {
  std::vector<std::pair<Tiling, double>> beam{{start, start_ms}};
  std::set<decltype(key(start))> seen{key(start)};
  while (!search.done()) {
    std::vector<Tiling> round;
    for (const auto& b : beam)
      for (const Tiling& n : next(b.first))
        if (seen.insert(key(n)).second)
          round.push_back(n);
    if (round.empty())
      break;
    std::vector<std::pair<Tiling, double>> scored = beam;
    for (const Tiling& t : round) {
      if (search.done())
        break;
      if (auto ms = search.measure(build(t)))
        scored.emplace_back(t, *ms);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& c) { return a.second < c.second; });
    if (scored.size() > width)
      scored.resize(width);
    beam = scored;
  }
  return beam;
}

} // namespace

TuneResult tune_kernel(Session& device, Session& sim, TuningDatabase& db, const Kernel& k,
                       const ShapeBindings& b, const ParamValues& params,
                       const TuneOptions& options,
                       const std::function<void(const TuneProgress&)>& progress) {
  const hcd::Hcd& hcd = device.device().hcd();
  Search search(device, sim, db, k, b, params, options, progress);
  const Schedule auto_s = auto_schedule(k, b, hcd).schedule;
  Schedule current = auto_s;
  std::optional<double> current_ms = search.measure(current);
  const std::vector<GemmSite> sites = gemm_sites(k, b, hcd);
  search.result.gemm_sites = static_cast<int>(sites.size());

  for (const GemmSite& site : sites) {
    // The auto-scheduler's block for this site: packed, else unpacked; a site it could
    // not register-block is not searched.
    GemmTiling start = site.tiling;
    std::optional<size_t> at = find_block(current, gemm_schedule(site, start));
    if (!at) {
      start.pack_a = start.pack_b = false;
      at = find_block(current, gemm_schedule(site, start));
    }
    if (!at)
      continue;
    const size_t length = gemm_schedule(site, start).size();
    const int lanes = std::max(1, hcd.lanes_for(site.dtype));

    auto fits = [&](const GemmTiling& t) {
      std::vector<GemmTiling> out;
      for (const GemmTiling& n : neighbours(t, site, lanes))
        if (gemm_tiling_fits(site, n, hcd, nullptr))
          out.push_back(n);
      return out;
    };
    const auto beam = beam_search(
        search, start, current_ms ? *current_ms : 1e300, options.beam, id_of, fits,
        [&](const GemmTiling& t) { return replace_block(current, *at, length, gemm_schedule(site, t)); });
    // Later sites are searched with this one at its best tiling.
    if (!beam.empty() && beam.front().second < 1e300) {
      const std::vector<Primitive> best = gemm_schedule(site, beam.front().first);
      current = replace_block(current, *at, length, best);
      current_ms = beam.front().second;
    }
  }
  // Contractions on tile registers: `matrix_unit C tiles BM BN BK TM TN` around the
  // analytic tiling (the primitive's own tiles when the schedule gives them).
  if (tile_registers_launch(hcd)) {
    for (size_t at = 0; at < current.primitives.size() && !search.done(); ++at) {
      const Primitive& prim = current.primitives[at];
      if (prim.kind != PrimitiveKind::MatrixUnit)
        continue;
      std::optional<MatrixSite> site;
      try {
        site = matrix_site(k, b, hcd, prim.buffer, !prim.vars.empty());
      } catch (const UserError&) {
        // an unbound range: nothing to search
      }
      if (!site)
        continue;
      ++search.result.matrix_sites;
      MatrixTiles start = prim.factors.size() == 5 ? MatrixTiles{prim.factors[0], prim.factors[1], prim.factors[2],
                                                                 prim.factors[3], prim.factors[4]}
                                                   : matrix_tiles(*site, hcd);
      auto with = [&](const MatrixTiles& t) {
        Schedule s = current;
        s.primitives[at].factors = {t.bm, t.bn, t.bk, t.warps_m, t.warps_n};
        return s;
      };
      auto id = [](const MatrixTiles& t) { return std::make_tuple(t.bm, t.bn, t.bk, t.warps_m, t.warps_n); };
      const auto beam = beam_search(
          search, normalized(start, *site, hcd), current_ms ? *current_ms : 1e300, options.beam, id,
          [&](const MatrixTiles& t) { return neighbours(t, *site, hcd); }, with);
      if (!beam.empty() && beam.front().second < (current_ms ? *current_ms : 1e300)) {
        current = with(beam.front().first);
        current_ms = beam.front().second;
      }
    }
  }
  // Tiled nests (`tile a Fa, b Fb`, a transposing map's): each factor doubled or halved
  // around the auto-scheduler's, from one up to the loop's extent (a larger factor is the
  // same tile as the extent).
  for (size_t at = 0; at < current.primitives.size() && !search.done(); ++at) {
    const Primitive& prim = current.primitives[at];
    if (prim.kind != PrimitiveKind::Tile)
      continue;
    ++search.result.tiled_nests;
    using Factors = std::vector<int64_t>;
    auto with = [&](const Factors& f) {
      Schedule s = current;
      s.primitives[at].factors = f;
      return s;
    };
    auto next = [](const Factors& f) {
      std::vector<Factors> out;
      for (size_t d = 0; d < f.size(); ++d)
        for (int64_t n : {f[d] * 2, f[d] / 2})
          if (n >= 1 && n <= 4096) {
            Factors g = f;
            g[d] = n;
            out.push_back(g);
          }
      return out;
    };
    const auto beam = beam_search(
        search, prim.factors, current_ms ? *current_ms : 1e300, options.beam, [](const Factors& f) { return f; }, next,
        with);
    if (!beam.empty() && beam.front().second < (current_ms ? *current_ms : 1e300)) {
      current = with(beam.front().first);
      current_ms = beam.front().second;
    }
  }
  search.retime(auto_s);
  return search.result;
}

} // namespace unitile
