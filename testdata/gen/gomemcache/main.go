// Command gen writes ../../gomemcache/vectors.tsv: the server gomemcache's
// ServerList.PickServer returns for each key. A server of weight w is
// listed w times in a row; set L lists a server twice, apart. Run from this
// directory:
//
//	go run . > ../../gomemcache/vectors.tsv
package main

import (
	"fmt"
	"log"
	"os"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash/testdata/gen/internal/vectors"
)

func main() {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) }, true)
	sets = append(sets, vectors.Set{Name: "L", IDs: []string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.1:11211", "10.0.0.3:11211"}, Weights: []int{1, 1, 1, 1}})
	lists := map[string]*memcache.ServerList{}
	for _, s := range sets {
		var servers []string
		for i, id := range s.IDs {
			for range s.Weights[i] {
				servers = append(servers, id)
			}
		}
		lists[s.Name] = new(memcache.ServerList)
		if err := lists[s.Name].SetServers(servers...); err != nil {
			log.Fatal(err)
		}
	}
	err := vectors.Write(os.Stdout, "gomemcache ServerList (bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c).\nA server of weight w is listed w times in a row. Columns: the first index in each set of the server PickServer returns.", sets, vectors.Keys(2000, true),
		func(s vectors.Set, key string) (string, error) {
			a, err := lists[s.Name].PickServer(key)
			if err != nil {
				return "", err
			}
			return a.String(), nil
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
