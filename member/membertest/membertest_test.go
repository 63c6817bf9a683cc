package membertest_test

import (
	"testing"
	"time"

	"github.com/keyplace/chash/member/membertest"
)

// The in-memory fleet keeps the contract: the suite's own reference.
func TestMemory(t *testing.T) {
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(*testing.T) membertest.Fleet { return new(membertest.Memory) },
		Silence:  200 * time.Millisecond,
		Addr:     true,
		Meta:     true,
	})
}
