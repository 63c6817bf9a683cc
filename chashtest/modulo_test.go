package chashtest_test

import (
	"testing"

	"github.com/keyplace/chash/chashtest"
)

// TestContractModulo runs the contract on the example's placer, as its
// own package's test would.
func TestContractModulo(t *testing.T) { chashtest.TestPlacer(t, moduloSpec) }
