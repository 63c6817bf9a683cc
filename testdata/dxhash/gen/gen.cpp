// Prints testdata/dxhash/vectors.tsv: DxHash nodes computed by the
// authors' C++ DxHash (ChaosD/DxHash, src/DxHash.cpp, class DxHash:
// DxHash(n_total, n_working), updateRemoval, updateAddition, getNodeID),
// after scenarios of removals and additions. See README.md beside this
// file.
//
// Output: for each scenario, a line
//   scenario <name> <total> <working> <ops> <size>
// where ops are the operations after construction, in order: "r<b>" to
// remove node b, "a<b>" for an addition that returned b ("-" for none),
// and size the node array's size after them; then one line per key:
//   <name> <key> <node>
// with 32-bit keys, key_i = i·421757 + 1 for even i and the high half of
// SplitMix64's i-th output for odd i. A node of 4294967295 is the
// reference's -1: no working node found within its 4·size probes. Fields
// are separated by tabs.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "DxHash.h"

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Scenario {
  std::string name;
  uint32_t total, working;
  std::vector<long> ops; // b >= 0: remove b; -1: add
  int keys;
};

static Scenario randomScenario(const std::string &name, uint32_t total, uint32_t w, int removals, int adds, uint64_t seed, int keys) {
  Scenario s{name, total, w, {}, keys};
  std::vector<bool> working(total, false);
  for (uint32_t i = 0; i < w; i++) working[i] = true;
  for (int i = 0; i < removals; i++) {
    uint32_t b;
    do {
      b = splitmix64(seed) % total;
    } while (!working[b]);
    working[b] = false;
    s.ops.push_back(b);
  }
  for (int i = 0; i < adds; i++) s.ops.push_back(-1);
  return s;
}

static std::vector<long> range(long from, long to) { // inclusive, either direction
  std::vector<long> v;
  for (long i = from;; i += from <= to ? 1 : -1) {
    v.push_back(i);
    if (i == to) break;
  }
  return v;
}

static std::vector<long> cat(std::vector<long> a, const std::vector<long> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int main() {
  std::vector<Scenario> scenarios = {
      {"N1W1", 1, 1, {}, 50},
      {"N16W10", 16, 10, {}, 200},
      {"N16W10-add", 16, 10, {-1}, 100},
      {"N16W10-rm3-rm7", 16, 10, {3, 7}, 200},
      {"N16W10-rm7-rm3", 16, 10, {7, 3}, 200},
      {"N16W10-rm3-rm7-add-add", 16, 10, {3, 7, -1, -1}, 100},
      {"N16W16-rm0", 16, 16, {0}, 100},
      {"N16W16-add", 16, 16, {-1}, 100},
      {"N10W10-add-add", 10, 10, {-1, -1}, 100},
      {"N8W8-add9", 8, 8, std::vector<long>(9, -1), 100},
      {"N1024W1024-rm0..511", 1024, 1024, range(0, 511), 200},
      {"N1024W1024-rm0..511-add", 1024, 1024, cat(range(0, 511), {-1}), 100},
      {"N64W64-rm0..62", 64, 64, range(0, 62), 200},
      {"N64W64-rm63..1", 64, 64, range(63, 1), 100},
      randomScenario("N1000W1000-rand100", 1000, 1000, 100, 0, 21, 200),
      randomScenario("N1024W1024-rand512", 1024, 1024, 512, 0, 22, 200),
      randomScenario("N1024W1024-rand900", 1024, 1024, 900, 0, 23, 200),
      randomScenario("N1024W800-rand300-add200", 1024, 800, 300, 200, 24, 200),
      randomScenario("N16384W16384-rand1600", 16384, 16384, 1600, 0, 25, 200),
  };
  for (auto &s : scenarios) {
    DxHash e(s.total, s.working);
    std::string ops;
    for (long op : s.ops) {
      if (!ops.empty()) ops += ",";
      if (op < 0) {
        ops += "a" + std::to_string(e.updateAddition());
      } else {
        e.updateRemoval(op);
        ops += "r" + std::to_string(op);
      }
    }
    if (ops.empty()) ops = "-";
    printf("scenario\t%s\t%u\t%u\t%s\t%u\n", s.name.c_str(), s.total, s.working, ops.c_str(), e.getSize());
    uint64_t st = 0;
    for (int i = 0; i < s.keys; i++) {
      uint64_t r = splitmix64(st);
      uint32_t key = i % 2 == 0 ? (uint32_t)(i * 421757ULL + 1) : (uint32_t)(r >> 32);
      uint32_t probes = 0;
      printf("%s\t%u\t%u\n", s.name.c_str(), key, e.getNodeID(key, &probes));
    }
  }
  return 0;
}
