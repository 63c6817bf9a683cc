// Prints testdata/memento/vectors.tsv: MementoHash buckets computed by the
// authors' C++ MementoEngine (slashdotted/cpp-consistent-hashing-algorithms,
// memento/mementoengine.h, with std::unordered_map as its table), after
// scenarios of removals and re-additions. See README.md beside this file.
//
// Output: for each scenario, a line
//   scenario <name> <n> <ops>
// where n is the initial bucket count and ops the operations in order,
// "r<b>" to remove bucket b and "a<b>" for an addition that returned b
// ("-" for none), then one line per key:
//   <name> <key> <bucket>
// with keys "key-0", "key-1", ... hashed by the engine (XXH64). Fields are
// separated by tabs.
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "memento/mementoengine.h"

using Engine = MementoEngine<std::unordered_map>;

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Scenario {
  std::string name;
  uint32_t n;
  std::vector<long> ops; // b >= 0: remove b; -1: add
  int keys;
};

// randomRemovals appends count removals of working buckets chosen by a
// fixed sequence, tracking which are working.
static void randomRemovals(std::vector<long> &ops, std::vector<bool> &working, uint64_t &seed, int count) {
  uint32_t size = working.size();
  for (int i = 0; i < count; i++) {
    uint32_t b;
    do {
      b = splitmix64(seed) % size;
    } while (!working[b]);
    working[b] = false;
    ops.push_back(b);
  }
}

static Scenario randomScenario(const std::string &name, uint32_t n, int removals, int adds, int more, uint64_t seed, int keys) {
  Scenario s{name, n, {}, keys};
  std::vector<bool> working(n, true);
  randomRemovals(s.ops, working, seed, removals);
  for (int i = 0; i < adds; i++) s.ops.push_back(-1);
  // Re-additions restore the last removed buckets, in reverse order.
  for (int i = 0; i < adds; i++) working[s.ops[removals - 1 - i]] = true;
  randomRemovals(s.ops, working, seed, more);
  return s;
}

int main() {
  std::vector<Scenario> scenarios = {
      {"n1", 1, {}, 50},
      {"n2", 2, {}, 100},
      {"n10", 10, {}, 200},
      {"n10-rm7", 10, {7}, 200},
      {"n10-rm3-rm7", 10, {3, 7}, 200},
      {"n10-rm7-rm3", 10, {7, 3}, 200},
      {"n10-rm9", 10, {9}, 100},
      {"n10-rm9-rm8", 10, {9, 8}, 100},
      {"n10-rm3-rm7-rm0-rm9", 10, {3, 7, 0, 9}, 200},
      {"n10-rm1..8", 10, {1, 2, 3, 4, 5, 6, 7, 8}, 100},
      {"n10-rm7-add", 10, {7, -1}, 100},
      {"n10-rm3-rm7-add-add", 10, {3, 7, -1, -1}, 100},
      {"n10-rm9-add-add", 10, {9, -1, -1}, 100},
      {"n10-rm9-rm3-add-rm5", 10, {9, 3, -1, 5}, 100},
      {"n10-rm0..8", 10, {0, 1, 2, 3, 4, 5, 6, 7, 8}, 50},
      randomScenario("n1000-rand100", 1000, 100, 0, 0, 1, 200),
      randomScenario("n1000-rand500", 1000, 500, 0, 0, 2, 200),
      randomScenario("n1000-rand900", 1000, 900, 0, 0, 3, 200),
      randomScenario("n1000-rand999", 1000, 999, 0, 0, 4, 50),
      randomScenario("n1000-rand500-add200-rand100", 1000, 500, 200, 100, 5, 200),
      randomScenario("n20000-rand2000", 20000, 2000, 0, 0, 6, 200),
  };
  for (auto &s : scenarios) {
    Engine e(s.n, s.n);
    std::string ops;
    for (long op : s.ops) {
      if (!ops.empty()) ops += ",";
      if (op < 0) {
        ops += "a" + std::to_string(e.addBucket());
      } else {
        e.removeBucket(op);
        ops += "r" + std::to_string(op);
      }
    }
    if (ops.empty()) ops = "-";
    printf("scenario\t%s\t%u\t%s\n", s.name.c_str(), s.n, ops.c_str());
    for (int i = 0; i < s.keys; i++) {
      std::string key = "key-" + std::to_string(i);
      printf("%s\t%s\t%u\n", s.name.c_str(), key.c_str(), e.getBucket(key));
    }
  }
  return 0;
}
