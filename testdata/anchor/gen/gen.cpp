// Prints testdata/anchor/vectors.tsv: AnchorHash buckets computed by the
// authors' C++ AnchorHash of lower memory (anchorhash/cpp-anchorhash,
// mem/AnchorHash.cpp, ComputeBucket(key, seed)), after scenarios of
// removals and re-additions. See README.md beside this file.
//
// Output: for each scenario, a line
//   scenario <name> <capacity> <working> <ops>
// where ops are the operations after construction, in order: "r<b>" to
// remove bucket b, "a<b>" for an addition that returned b ("-" for none);
// then one line per key:
//   <name> <key_hex> <seed> <bucket>
// with key_i = (i+1)·0x9E3779B97F4A7C15 (mod 2^64) and seed 0, except
// every fourth key, whose seed is i·0x9E3779B1. Fields are separated by
// tabs.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mem/AnchorHash.hpp"

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Scenario {
  std::string name;
  uint32_t a, w;
  std::vector<long> ops; // b >= 0: remove b; -1: add
  int keys;
};

// randomOps appends count removals of working buckets chosen by a fixed
// sequence and adds re-additions, tracking which buckets work (an
// addition restores the last bucket removed, as the stack does).
static Scenario randomScenario(const std::string &name, uint32_t a, uint32_t w, int removals, int adds, uint64_t seed, int keys) {
  Scenario s{name, a, w, {}, keys};
  std::vector<bool> working(a, false);
  std::vector<uint32_t> stack;
  for (uint32_t i = a; i-- > w;) stack.push_back(i);
  for (uint32_t i = 0; i < w; i++) working[i] = true;
  for (int i = 0; i < removals; i++) {
    uint32_t b;
    do {
      b = splitmix64(seed) % a;
    } while (!working[b]);
    working[b] = false;
    stack.push_back(b);
    s.ops.push_back(b);
  }
  for (int i = 0; i < adds; i++) {
    working[stack.back()] = true;
    stack.pop_back();
    s.ops.push_back(-1);
  }
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

int main() {
  std::vector<Scenario> scenarios = {
      {"a1w1", 1, 1, {}, 50},
      {"a10w10", 10, 10, {}, 200},
      {"a16w10", 16, 10, {}, 200},
      {"a16w10-add", 16, 10, {-1}, 100},
      {"a16w10-add-add-add", 16, 10, {-1, -1, -1}, 100},
      {"a16w10-rm3", 16, 10, {3}, 200},
      {"a16w10-rm3-rm7", 16, 10, {3, 7}, 200},
      {"a16w10-rm7-rm3", 16, 10, {7, 3}, 200},
      {"a16w10-rm3-rm7-add", 16, 10, {3, 7, -1}, 100},
      {"a10w10-rm0-rm5", 10, 10, {0, 5}, 200},
      {"a10w10-rm0-rm5-add-add", 10, 10, {0, 5, -1, -1}, 100},
      {"a10w10-rm0..8", 10, 10, range(0, 8), 50},
      {"a1000w1000-rm0..499", 1000, 1000, range(0, 499), 200},
      {"a1000w1000-rm999..500", 1000, 1000, range(999, 500), 100},
      randomScenario("a1000w1000-rand100", 1000, 1000, 100, 0, 11, 200),
      randomScenario("a1000w1000-rand500", 1000, 1000, 500, 0, 12, 200),
      randomScenario("a1000w1000-rand900", 1000, 1000, 900, 0, 13, 200),
      randomScenario("a1000w1000-rand999", 1000, 1000, 999, 0, 14, 50),
      randomScenario("a1024w600-rand250-add100", 1024, 600, 250, 100, 15, 200),
      randomScenario("a20000w20000-rand2000", 20000, 20000, 2000, 0, 16, 200),
  };
  for (auto &s : scenarios) {
    AnchorHash e(s.a, s.w);
    std::string ops;
    for (long op : s.ops) {
      if (!ops.empty()) ops += ",";
      if (op < 0) {
        ops += "a" + std::to_string(e.UpdateNewBucket());
      } else {
        e.UpdateRemoval(op);
        ops += "r" + std::to_string(op);
      }
    }
    if (ops.empty()) ops = "-";
    printf("scenario\t%s\t%u\t%u\t%s\n", s.name.c_str(), s.a, s.w, ops.c_str());
    for (int i = 0; i < s.keys; i++) {
      uint64_t key = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL;
      uint64_t seed = i % 4 == 3 ? (uint64_t)i * 0x9E3779B1ULL : 0;
      printf("%s\t%016llx\t%llu\t%u\n", s.name.c_str(), (unsigned long long)key, (unsigned long long)seed, e.ComputeBucket(key, seed));
    }
  }
  return 0;
}
