// Command gen writes ../vectors.tsv: the peer golang/groupcache's
// consistenthash.Map returns for each key, with HTTPPool's default 50
// replicas and crc32.ChecksumIEEE (sets ending in -r3 use 3 replicas). Run
// from this directory:
//
//	go run . > ../vectors.tsv
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/golang/groupcache/consistenthash"
	"github.com/keyplace/chash/testdata/internal/vectors"
)

func main() {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }, false)
	for _, s := range vectors.StandardSets(func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }, false) {
		s.Name += "-r3"
		sets = append(sets, s)
	}
	maps := map[string]*consistenthash.Map{}
	for _, s := range sets {
		replicas := 50
		if strings.HasSuffix(s.Name, "-r3") {
			replicas = 3
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
