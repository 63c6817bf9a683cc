// Command gen writes ../../groupcache/vectors.tsv: the peer golang/groupcache's
// consistenthash.Map returns for each key, with HTTPPool's default 50
// replicas and crc32.ChecksumIEEE (sets ending in -r3 use 3 replicas, -r1 one: C-r1 and D-r1 hold two peers
// whose points coincide, in both orders). Run
// from this directory:
//
//	go run . > ../../groupcache/vectors.tsv
package main

import (
	"fmt"
	"hash/crc32"
	"os"
	"strings"

	"github.com/golang/groupcache/consistenthash"
	"github.com/keyplace/chash/testdata/gen/internal/vectors"
)

func main() {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }, false)
	for _, s := range vectors.StandardSets(func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }, false) {
		s.Name += "-r3"
		sets = append(sets, s)
	}
	// Two peers whose only points (1 replica) coincide: groupcache keeps
	// the peer added last, so the two orders place every key differently.
	a, b := collision()
	sets = append(sets, vectors.Set{Name: "C-r1", IDs: []string{a, b, "http://10.0.0.1:8080"}, Weights: []int{1, 1, 1}},
		vectors.Set{Name: "D-r1", IDs: []string{b, a, "http://10.0.0.1:8080"}, Weights: []int{1, 1, 1}})
	maps := map[string]*consistenthash.Map{}
	for _, s := range sets {
		replicas := 50
		switch {
		case strings.HasSuffix(s.Name, "-r3"):
			replicas = 3
		case strings.HasSuffix(s.Name, "-r1"):
			replicas = 1
		}
		maps[s.Name] = consistenthash.New(replicas, nil)
		maps[s.Name].Add(s.IDs...)
	}
	err := vectors.Write(os.Stdout, "golang/groupcache consistenthash (v0.0.0-20241129210726-2c02b8208cf8), default hash, peers added in order.\nColumns: the index in each set of the peer Map.Get returns.", sets, vectors.Keys(2000, true),
		func(s vectors.Set, key string) (string, error) { return maps[s.Name].Get(key), nil })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// collision returns two peer names whose replica-0 points, the CRC-32 of
// "0" + name, are equal: the first such pair among peer-0, peer-1, ...
func collision() (string, string) {
	seen := map[uint32]string{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("http://peer-%d", i)
		h := crc32.ChecksumIEEE([]byte("0" + name))
		if prev, ok := seen[h]; ok {
			return prev, name
		}
		seen[h] = name
	}
}
