package main

import (
	"math"
	"strings"
	"testing"
)

// Every compatibility placement builds over a plain membership.
func TestCompatAlgos(t *testing.T) {
	for _, a := range compatAlgos() {
		found, err := findAlgo(a.name, nil)
		if err != nil || found.name != a.name {
			t.Fatalf("findAlgo(%q): %v %v", a.name, found.name, err)
		}
		p, err := a.build(synthNodes(5))
		if err != nil || p.Len() != 5 {
			t.Fatalf("%s: %v", a.name, err)
		}
	}
}

// Switching 5 servers from gomemcache's CRC-32 mod n to a ring moves
// about 4/5 of the keys.
func TestDiffSwitchPlacement(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "-algo", "gomemcache", "-new-algo", "ring", "-old", "a,b,c,d,e", "-new", "a,b,c,d,e")
	if rep.Algorithm != "gomemcache -> ring" || math.Abs(rep.Moved-0.8) > 0.01 {
		t.Fatalf("report %+v", rep)
	}
	runCode(t, 2, "diff", "-new-algo", "nope", "-old", "a", "-new", "a")
}

func TestPlanCompat(t *testing.T) {
	out, _ := runCode(t, 0, "plan", "-algo", "nginx-consistent", "-from", "4", "-to", "5", "-step", "1")
	if len(out) == 0 {
		t.Fatal("no output")
	}
}

// chash plan -switch-to: moving 20 servers from gomemcache's mod-N to a
// ring empties the cache without the fallback and not with it.
func TestPlanSwitch(t *testing.T) {
	var rep switchReport
	runJSON(t, &rep, "plan", "-algo", "gomemcache", "-switch-to", "ring", "-from", "20", "-rate", "200k", "-hit", "0.94", "-origin", "20k")
	if math.Abs(rep.Moved-0.95) > 0.01 || !rep.AtOnce.Over || rep.Fallback.Over || rep.Fallback.HitRate != 0.94 {
		t.Fatalf("report %+v", rep)
	}
	if want := 0.94 * (1 - rep.Moved); math.Abs(rep.AtOnce.HitRate-want) > 1e-9 {
		t.Errorf("hit rate at once %v, want %v", rep.AtOnce.HitRate, want)
	}
	out, _ := runCode(t, 0, "plan", "-algo", "goredis", "-switch-to", "rendezvous", "-from", "8")
	if !strings.Contains(out, "switch 8 nodes from goredis to rendezvous") {
		t.Errorf("output:\n%s", out)
	}
	runCode(t, 2, "plan", "-switch-to", "ring")
	runCode(t, 2, "plan", "-algo", "ring", "-switch-to", "nope")
}
