package conformance

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

var update = flag.Bool("update", false, "rewrite golden placement files in testdata/golden")

// Golden pins p's placement: the top 3 nodes of 1,000 fixed keys, kept in
// testdata/golden/NAME.txt. The test fails if any placement differs from
// the file. Run the tests with -update to rewrite the file, which is a
// deliberate act: a changed placement remaps the keys of every fleet that
// uses it, so it belongs in the release notes.
func Golden(t *testing.T, name string, p chash.Placer) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# placement of %d nodes: key, then the top 3 node IDs in order\n", p.Len())
	buf := make([]chash.Node, 0, 3)
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("golden-%d", i)
		buf = p.AppendTopKString(buf[:0], k, 3)
		fmt.Fprintf(&b, "%s\t%s\n", k, strings.Join(measure.IDs(buf), ","))
	}
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	got := b.Bytes()
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	changed := 0
	for i := range gl {
		if i >= len(wl) || gl[i] != wl[i] {
			if changed < 5 {
				w := ""
				if i < len(wl) {
					w = wl[i]
				}
				t.Errorf("placement changed: got %q, golden %q", gl[i], w)
			}
			changed++
		}
	}
	t.Fatalf("%s: %d of 1000 placements differ from the golden file; a placement change remaps users' fleets", path, changed)
}
