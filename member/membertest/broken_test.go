package membertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
)

// broken wraps a Memory fleet's sources with a fault.
type broken struct {
	membertest.Memory
	fault func(member.Snapshot) member.Snapshot
}

func (b *broken) Source() member.Source { return faulty{b.Memory.Source(), b.fault} }

type faulty struct {
	src   member.Source
	fault func(member.Snapshot) member.Snapshot
}

func (f faulty) Run(ctx context.Context, sink member.Sink) error {
	return f.src.Run(ctx, faultySink{sink, f.fault})
}

type faultySink struct {
	member.Sink
	fault func(member.Snapshot) member.Snapshot
}

func (s faultySink) Snapshot(snap member.Snapshot) { s.Sink.Snapshot(s.fault(snap)) }

// The broken sources the suite must fail, by the name of their fault.
var faults = map[string]func(member.Snapshot) member.Snapshot{
	// Drops every member's zone, as the etcd adapter once did.
	"zone": func(s member.Snapshot) member.Snapshot {
		for i := range s.Members {
			s.Members[i].Zone = ""
		}
		return s
	},
	// Hands every snapshot over at version 1.
	"version": func(s member.Snapshot) member.Snapshot { s.Version = 1; return s },
	// Hands over a member twice.
	"duplicate": func(s member.Snapshot) member.Snapshot {
		if len(s.Members) > 0 {
			s.Members = append(s.Members, s.Members[0])
		}
		return s
	},
}

// TestBrokenChild runs the suite on the broken source its parent names.
func TestBrokenChild(t *testing.T) {
	fault := os.Getenv("MEMBERTEST_FAULT")
	if fault == "" {
		t.Skip("run by TestBroken")
	}
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(*testing.T) membertest.Fleet { return &broken{fault: faults[fault]} },
		Silence:  200 * time.Millisecond,
		Settle:   time.Second,
	})
}

// The suite fails a source that breaks the contract: each broken source
// runs in a child process, which must fail.
func TestBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for name := range faults {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenChild$/^(Snapshot|Changes)$", "-test.count=1", "-test.failfast")
			cmd.Env = append(os.Environ(), "MEMBERTEST_FAULT="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a source with the %s fault:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL") {
				t.Errorf("the child failed without a failing case:\n%s", out)
			}
		})
	}
}
