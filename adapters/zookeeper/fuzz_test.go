package zookeeper_test

import (
	"context"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/zookeeper"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
)

// Any znode data is a valid member named by its znode, or an error
// wrapping member.ErrBadMember; never a panic.
func FuzzParse(f *testing.F) {
	f.Add("a", []byte(`{"id":"a","weight":2,"zone":"z"}`))
	f.Add("a", []byte(`{"id":"b"}`))
	f.Add("a", []byte(`{"id":"a","weight":-1}`))
	f.Add("a", []byte(`{"id":"a"} trailing`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		m, err := zookeeper.Parse(name, data)
		if err != nil {
			assert.ErrorIs(t, err, member.ErrBadMember)
			return
		}
		assert.NoError(t, m.Check())
		assert.Equal(t, name, m.ID)
	})
}

// The zero Source fails to run, and a nil Registration closes, without a
// panic.
func TestZeroValues(t *testing.T) {
	assert.ErrorIs(t, new(zookeeper.Source).Run(context.Background(), nil), chash.ErrInvalidOption)
	var r *zookeeper.Registration
	assert.NoError(t, r.Close())
	assert.NoError(t, new(zookeeper.Registration).Close())
	assert.Error(t, new(zookeeper.Registration).Update(member.Member{ID: "a"}))
}
