package membertest

import (
	"context"
	"slices"
	"sync"

	"github.com/keyplace/chash/member"
)

// Memory is a member set held in memory, with the sources that follow
// it: a Fleet for tests of code that takes a member.Source, and the
// reference the contract test's own tests run against. Its zero value is
// an empty fleet, ready to use; its methods are safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	version int64
	members []member.Member
	spec    *member.Spec
	changed chan struct{} // closed and replaced on each change
	silent  bool
}

var (
	_ Fleet         = (*Memory)(nil)
	_ SpecPublisher = (*Memory)(nil)
	_ Breaker       = (*Memory)(nil)
)

// Set replaces the member set and raises its version.
func (m *Memory) Set(members []member.Member) error {
	m.mu.Lock()
	m.members = slices.Clone(members)
	m.bump()
	m.mu.Unlock()
	return nil
}

// Publish replaces the published spec (nil removes it) and raises the
// version.
func (m *Memory) Publish(s *member.Spec) error {
	m.mu.Lock()
	if s != nil {
		c := *s
		s = &c
	}
	m.spec = s
	m.bump()
	m.mu.Unlock()
	return nil
}

// Break makes every source of m silent: Run hands over nothing and
// confirms nothing until Restore, as over a connection that stopped
// answering.
func (m *Memory) Break() error {
	m.mu.Lock()
	m.silent = true
	m.bump()
	m.mu.Unlock()
	return nil
}

// Restore ends Break.
func (m *Memory) Restore() error {
	m.mu.Lock()
	m.silent = false
	m.bump()
	m.mu.Unlock()
	return nil
}

// bump raises the version and wakes the sources; m.mu is held.
func (m *Memory) bump() {
	m.version++
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// Source returns a source that follows m.
func (m *Memory) Source() member.Source { return memorySource{m} }

type memorySource struct{ m *Memory }

// Run hands over the member set at each change until ctx ends.
func (s memorySource) Run(ctx context.Context, sink member.Sink) error {
	m := s.m
	for {
		m.mu.Lock()
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		changed, silent := m.changed, m.silent
		snap := member.Snapshot{Version: m.version, Members: slices.Clone(m.members), Spec: m.spec}
		m.mu.Unlock()
		if !silent {
			sink.Snapshot(snap)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
