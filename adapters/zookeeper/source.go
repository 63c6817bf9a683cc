package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
)

// Source follows the members of a fleet znode: a member.Source. Watch runs
// one for you. Its Run is not called concurrently with itself by a
// Watcher; a connection can serve any number of Sources.
type Source struct {
	conn *zk.Conn
	path string
	cfg  config

	mu      sync.Mutex // a Run that ended may still be finishing a read
	version int64
	last    string // the content of the last snapshot handed over
}

// NewSource returns a source of the fleet at path, read through conn. It
// fails with ErrPath for a path that cannot name a fleet, and if conn is
// nil.
func NewSource(conn *zk.Conn, path string, opts ...Option) (*Source, error) {
	if conn == nil {
		return nil, errNilConn
	}
	p, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	return &Source{conn: conn, path: p, cfg: newConfig(opts)}, nil
}

// Watch follows the fleet at path and returns once it serves the first
// view: it waits until a placeable member has registered (and the fleet's
// znode exists) or ctx ends, then fails with member.ErrNoMembers wrapping
// ctx's error and the last fault. build makes the placers; nil builds with
// the spec published at path (Publish). The silence bound is three
// intervals.
func Watch(ctx context.Context, conn *zk.Conn, path string, build member.Builder, opts ...Option) (*member.Watcher, error) {
	src, err := NewSource(conn, path, opts...)
	if err != nil {
		return nil, err
	}
	all := append([]member.Option{member.WithSilence(3 * src.cfg.interval)}, src.cfg.watch...)
	w, err := member.Follow(ctx, src, build, all...)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: watch %s: %w", path, err)
	}
	return w, nil
}

// Run reads the fleet with watches and hands over the complete member set,
// then re-reads what each watch event names and hands over each change,
// confirming the view every interval, until ctx ends. It returns an error
// when the watches are lost (the session expired) or a read fails, so
// that the watcher starts it again from a fresh read.
func (s *Source) Run(ctx context.Context, sink member.Sink) error {
	if s == nil || s.conn == nil {
		return fmt.Errorf("%w: zookeeper: a nil or zero Source (build one with NewSource)", chash.ErrInvalidOption)
	}
	f := &follower{Source: s, ctx: ctx, sink: sink, events: make(chan zk.Event, 64), children: map[string]child{}}
	done := make(chan error, 1)
	go func() { done <- f.run() }()
	select {
	case <-ctx.Done():
		// The client's calls take no context: a read under way ends
		// on its own (the client fails it when its connection does),
		// and hands nothing over once ctx has ended.
		return nil
	case err := <-done:
		return err
	}
}

// follower is one Run's state.
type follower struct {
	*Source
	ctx      context.Context
	sink     member.Sink
	events   chan zk.Event
	children map[string]child
	pzxid    int64 // the fleet znode's
	mzxid    int64
	spec     *member.Spec
}

// child is a member znode as last read.
type child struct {
	data  string
	mzxid int64
	m     member.Member
	err   error
}

func (f *follower) run() error {
	for waiting := false; ; waiting = true {
		ok, _, ch, err := f.conn.ExistsW(f.path)
		if err != nil {
			return fmt.Errorf("zookeeper: %s: %w", f.path, err)
		}
		f.forward(ch)
		if ok {
			break
		}
		if !waiting {
			f.report(fmt.Errorf("%w: zookeeper: %s does not exist: waiting for it", member.ErrNoMembers, f.path))
		}
		f.heard()
		if err := f.await(); err != nil || f.ctx.Err() != nil {
			return err
		}
	}
	if err := f.readAll(); err != nil {
		return err
	}
	return f.follow()
}

// await waits for a watch event, confirming every interval.
func (f *follower) await() error {
	tick := time.NewTicker(f.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return nil
		case ev := <-f.events:
			if ev.Type == zk.EventNotWatching {
				return fmt.Errorf("zookeeper: %s: watch lost: %w", f.path, ev.Err)
			}
			return nil
		case <-tick.C:
			f.confirm()
		}
	}
}

// forward passes the event of a watch to f.events.
func (f *follower) forward(ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	go func() {
		select {
		case ev, ok := <-ch:
			if ok {
				select {
				case f.events <- ev:
				case <-f.ctx.Done():
				}
			}
		case <-f.ctx.Done():
		}
	}()
}

// readAll reads the spec, the children and their data, with watches, and
// hands the set over.
func (f *follower) readAll() error {
	if err := f.readSpec(); err != nil {
		return err
	}
	if err := f.readChildren(); err != nil {
		return err
	}
	f.hand()
	return nil
}

// readSpec reads the fleet znode's data: the published spec.
func (f *follower) readSpec() error {
	data, st, ch, err := f.conn.GetW(f.path)
	if err != nil {
		return fmt.Errorf("zookeeper: %s: %w", f.path, err)
	}
	f.forward(ch)
	f.mzxid = max(f.mzxid, st.Mzxid)
	f.spec = nil
	if len(data) > 0 {
		var s member.Spec
		if err := json.Unmarshal(data, &s); err != nil {
			f.report(fmt.Errorf("zookeeper: %s: published spec: %w", f.path, specErr(err)))
			return nil
		}
		f.spec = &s
	}
	return nil
}

// specErr makes err wrap member.ErrBadSpec.
func specErr(err error) error {
	if errors.Is(err, member.ErrBadSpec) {
		return err
	}
	return fmt.Errorf("%w: %v", member.ErrBadSpec, err)
}

// readChildren lists the children with a watch, forgets those gone and
// reads those new.
func (f *follower) readChildren() error {
	names, st, ch, err := f.conn.ChildrenW(f.path)
	if err != nil {
		return fmt.Errorf("zookeeper: %s: children: %w", f.path, err)
	}
	f.forward(ch)
	f.pzxid = max(f.pzxid, st.Pzxid)
	now := map[string]bool{}
	var fresh []string
	for _, name := range names {
		now[name] = true
		if _, ok := f.children[name]; !ok {
			fresh = append(fresh, name)
		}
	}
	maps.DeleteFunc(f.children, func(name string, _ child) bool { return !now[name] })
	return f.readData(fresh)
}

// readData reads the data of the children names with watches, sixteen at
// a time: a child deleted meanwhile is skipped (the children watch tells
// of it).
func (f *follower) readData(names []string) error {
	type result struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
		err  error
	}
	results := make([]result, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &results[i]
			r.data, r.st, r.ch, r.err = f.conn.GetW(f.path + "/" + name)
		})
	}
	wg.Wait()
	var errs []error
	for i, r := range results {
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			delete(f.children, names[i])
		case r.err != nil:
			errs = append(errs, r.err)
		default:
			f.forward(r.ch)
			f.children[names[i]] = f.parse(names[i], r.data, r.st.Mzxid)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("zookeeper: %s: %d members unread: %w", f.path, len(errs), errs[0])
	}
	return nil
}

// parse reads a child's data as a member, reporting it if it is not one.
func (f *follower) parse(name string, data []byte, mzxid int64) child {
	if old, ok := f.children[name]; ok && old.data == string(data) {
		old.mzxid = mzxid
		return old
	}
	c := child{data: string(data), mzxid: mzxid}
	c.m, c.err = member.DecodeJSON(data, 0)
	if c.err == nil && c.m.ID != name {
		c.err = fmt.Errorf("%w: znode %q holds member %q: a member's ID is its znode's name", member.ErrBadMember, name, c.m.ID)
	}
	if c.err != nil {
		c.err = fmt.Errorf("zookeeper: %s/%s: %w", f.path, name, c.err)
		f.report(c.err)
	}
	return c
}

// follow applies watch events as they come and confirms every interval.
func (f *follower) follow() error {
	tick := time.NewTicker(f.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return nil
		case ev := <-f.events:
			for more := true; more; {
				if err := f.apply(ev); err != nil {
					return err
				}
				select {
				case ev = <-f.events:
				default:
					more = false
				}
			}
			f.hand()
		case <-tick.C:
			f.confirm()
		}
	}
}

// apply re-reads what ev names.
func (f *follower) apply(ev zk.Event) error {
	switch {
	case ev.Type == zk.EventNotWatching:
		return fmt.Errorf("zookeeper: %s: watches lost (%v): reading afresh", f.path, ev.Err)
	case ev.Path == f.path && ev.Type == zk.EventNodeDataChanged:
		return f.readSpec()
	case ev.Path == f.path && ev.Type == zk.EventNodeChildrenChanged:
		return f.readChildren()
	case ev.Path == f.path && ev.Type == zk.EventNodeDeleted:
		return fmt.Errorf("zookeeper: %s: deleted: waiting for it again", f.path)
	case strings.HasPrefix(ev.Path, f.path+"/"):
		name := ev.Path[len(f.path)+1:]
		if ev.Type == zk.EventNodeDeleted {
			delete(f.children, name)
			return nil
		}
		return f.readData([]string{name})
	}
	return nil
}

// confirm asks the server for the fleet znode: an answer with no watch
// event pending confirms the view, since ZooKeeper sends a watch's event
// before the answer to any later read.
func (f *follower) confirm() {
	if _, _, err := f.conn.Exists(f.path); err != nil {
		f.report(fmt.Errorf("zookeeper: %s: confirm: %w; retrying", f.path, err))
		return
	}
	if len(f.events) == 0 {
		f.heard()
	}
}

// hand hands the set over if it differs from the last handed over, and
// confirms it otherwise. Its version is the largest zxid read, or one
// above the last version when the content changed without a larger zxid
// read (a read that raced a change).
func (f *follower) hand() {
	var key strings.Builder
	if f.spec != nil {
		key.WriteString(f.spec.String())
	}
	version := max(f.pzxid, f.mzxid)
	names := slices.Sorted(maps.Keys(f.children))
	ms := make([]member.Member, 0, len(names))
	for _, name := range names {
		c := f.children[name]
		version = max(version, c.mzxid)
		if c.err == nil {
			ms = append(ms, c.m)
			key.WriteString("\x00" + name + "\x00" + c.data)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return
	}
	if f.version > 0 && key.String() == f.last {
		f.sink.Heard()
		return
	}
	f.version = max(version, f.version+1)
	f.last = key.String()
	f.sink.Snapshot(member.Snapshot{Version: f.version, Members: ms, Spec: f.spec})
}

func (f *follower) heard() {
	if f.ctx.Err() == nil {
		f.sink.Heard()
	}
}

func (f *follower) report(err error) {
	if f.ctx.Err() == nil {
		f.sink.Report(err)
	}
}
