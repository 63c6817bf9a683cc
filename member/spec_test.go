package member_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecText(t *testing.T) {
	for _, text := range []string{
		"maglev",
		"maglev table-size=1009 seed=cache-seed",
		"ring vnodes=200 weight-unit=1073741824",
		"bounded partitions=16384 load-factor=1.5",
		"rendezvous",
		"jump reshuffle=true",
		"memento seed=s reshuffle=true",
	} {
		s, err := member.ParseSpec(text)
		require.NoError(t, err, text)
		assert.Equal(t, text, s.String())
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back member.Spec
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		assert.Equal(t, s, back)
	}
	s, err := member.ParseSpec("  HRW  ")
	require.NoError(t, err)
	assert.Equal(t, chash.AlgorithmRendezvous, s.Algorithm)
	var fromText member.Spec
	require.NoError(t, json.Unmarshal([]byte(`"maglev table-size=7"`), &fromText))
	assert.Equal(t, member.Spec{Algorithm: chash.AlgorithmMaglev, TableSize: 7}, fromText)
	for _, bad := range []string{"", "nope", "maglev table-size=8", "ring vnodes=x", "ring vnodes=1 vnodes=2",
		"ring color=red", "ring seed=a\x01b", "bounded load-factor=0.5", "ring weight-unit=NaN", "ring novalue",
		"jump", "flip", "memento", "anchor", "dx", "choosek", "jump reshuffle=yes"} {
		_, err := member.ParseSpec(bad)
		assert.ErrorIs(t, err, member.ErrBadSpec, "%q", bad)
	}
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"algorithm":"nope"}`), &fromText), member.ErrBadSpec)
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"algorithm":"ring","vnodes":-1}`), &fromText), member.ErrBadSpec)
}

// A spec builds what chash.New builds with the same options, and a seed
// is resolved by name, never carried.
func TestSpecBuild(t *testing.T) {
	ns := nodes(10, 1)
	s := member.Spec{Algorithm: chash.AlgorithmMaglev, TableSize: 1009}
	p, err := s.Build(ns)
	require.NoError(t, err)
	want, err := chash.NewMaglev(ns, chash.WithTableSize(1009))
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(want), chash.Fingerprint(p))

	s.Seed = "cache-seed"
	_, err = s.Build(ns)
	assert.ErrorIs(t, err, member.ErrSeed, "a named seed needs a SeedFunc")
	seeds := func(name string) (uint64, error) {
		if name == "cache-seed" {
			return 42, nil
		}
		return 0, errors.New("unknown")
	}
	p, err = s.Builder(seeds)(ns)
	require.NoError(t, err)
	want, err = chash.NewMaglev(ns, chash.WithTableSize(1009), chash.WithHasher(chash.XXHashSeed(42)))
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(want), chash.Fingerprint(p), "the fingerprint covers the seed's effect")
	s.Seed = "other"
	_, err = s.Builder(seeds)(ns)
	assert.ErrorIs(t, err, member.ErrSeed)
	_, err = member.Spec{}.Build(ns)
	assert.ErrorIs(t, err, member.ErrBadSpec)
}

func FuzzParseSpec(f *testing.F) {
	f.Add("maglev table-size=1009 seed=x")
	f.Add("ring vnodes=65536 weight-unit=1e-300")
	f.Add("bounded partitions=1 load-factor=1.0000001")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := member.ParseSpec(text)
		if err != nil {
			require.ErrorIs(t, err, member.ErrBadSpec)
			return
		}
		back, err := member.ParseSpec(s.String())
		require.NoError(t, err, s.String())
		require.Equal(t, s, back)
		if s.Seed == "" {
			_, err := s.Build(nodes(3, 1))
			if err != nil {
				require.True(t, errors.Is(err, chash.ErrInvalidOption) || errors.Is(err, chash.ErrTooLarge) ||
					errors.Is(err, chash.ErrInvalidWeight), "%v", err)
			}
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"id":"a","weight":2,"zone":"z","addr":"x:1","meta":{"k":"v"}}`))
	f.Add([]byte(`{"id":"","weight":-1}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		m, err := member.DecodeJSON(value, 0)
		if err != nil {
			require.ErrorIs(t, err, member.ErrBadMember)
			return
		}
		require.NoError(t, m.Check())
		b, err := member.EncodeJSON(m)
		require.NoError(t, err)
		back, err := member.DecodeJSON(b, 1<<20)
		require.NoError(t, err)
		require.True(t, m.Equal(back))
	})
}

// A positional or stateful algorithm is refused without Reshuffle, since a
// watcher rebuilds each view from the members in ID order: with it, every
// process agrees, and a member leaving from the middle moves most keys,
// as Reshuffle's documentation says.
func TestSpecReshuffle(t *testing.T) {
	for _, a := range chash.Algorithms() {
		s := member.Spec{Algorithm: a}
		err := s.Check()
		if a.Positional() || a.Stateful() {
			require.ErrorIs(t, err, member.ErrBadSpec, "%v", a)
			require.ErrorIs(t, err, chash.ErrInvalidOption, "%v", a)
			s.Reshuffle = true
			require.NoError(t, s.Check(), "%v", a)
		} else {
			require.NoError(t, err, "%v", a)
		}
	}
	ns := nodes(10, 1)
	s := member.Spec{Algorithm: chash.AlgorithmJump, Reshuffle: true}
	before, err := s.Build(ns)
	require.NoError(t, err)
	after, err := s.Build(append(ns[:4:4], ns[5:]...))
	require.NoError(t, err)
	moved := 0
	keys := chashtest.Keys(10000)
	for _, k := range keys {
		if before.LookupString(k).ID != after.LookupString(k).ID {
			moved++
		}
	}
	t.Logf("jump over 10 members, the fifth in ID order leaves: %d of %d keys move", moved, len(keys))
	assert.Greater(t, moved, len(keys)/2, "the trade Reshuffle documents")
}
