package memberlist

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keyplace/chash/member"
)

// Source follows the members a Node holds: a member.Source. Node.Watch
// runs one for you. Its Run is not safe to call concurrently with itself
// (a Watcher never does); a Node can feed any number of Sources.
type Source struct {
	n       *Node
	version int64
	last    string             // the content of the last snapshot handed over
	decoded map[string]decoded // by node name
}

// decoded is a node's metadata read as a member, or why it is not one.
type decoded struct {
	meta string
	m    member.Member
	err  error
}

// Source returns a new source of the members n holds. The source of a nil
// or zero Node fails to run.
func (n *Node) Source() *Source { return &Source{n: n, decoded: map[string]decoded{}} }

// Watch follows the members n holds and returns once it serves the first
// view: it waits until a placeable member has joined or ctx ends, then
// fails with member.ErrNoMembers wrapping ctx's error. build makes the
// placers; nil builds with the spec the cluster publishes (Publish). The
// silence bound is three probe intervals (member.WithSilence in opts
// overrides it).
func (n *Node) Watch(ctx context.Context, build member.Builder, opts ...member.Option) (*member.Watcher, error) {
	if !n.started() {
		return nil, errNoNode
	}
	all := append([]member.Option{member.WithSilence(3 * n.interval)}, opts...)
	w, err := member.Follow(ctx, n.Source(), build, all...)
	if err != nil {
		return nil, fmt.Errorf("memberlist: %s: watch: %w", n.name, err)
	}
	return w, nil
}

// Run hands over the members the node holds at once and after each
// change, until ctx ends; it confirms the view each time a peer answers
// the node (and on a timer while the node is alone). It fails only for a
// Source not made by Node.Source.
func (s *Source) Run(ctx context.Context, sink member.Sink) error {
	if s == nil || s.n == nil || s.n.peers == nil { // peers is set once, when the Node is made
		return errNoNode
	}
	n := s.n
	tick := time.NewTicker(n.interval)
	defer tick.Stop()
	var gen, heard uint64
	for first := true; ; first = false {
		n.mu.Lock()
		wake, g, h := n.wake, n.gen, n.heard
		var peers map[string]peer
		var spec *member.Spec
		if first || g != gen {
			peers, spec = maps.Clone(n.peers), n.spec.Spec
		}
		n.mu.Unlock()
		if peers != nil {
			s.hand(peers, spec, sink)
		}
		if !first && h != heard {
			sink.Heard()
		}
		gen, heard = g, h
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
			if n.numPeers() <= 1 {
				sink.Heard()
			}
		}
	}
}

// hand hands the members of peers over if they or spec differ from the
// last snapshot handed over.
func (s *Source) hand(peers map[string]peer, spec *member.Spec, sink member.Sink) {
	names := slices.Sorted(maps.Keys(peers))
	var key strings.Builder
	if spec != nil {
		key.WriteString(spec.String())
	}
	ms := make([]member.Member, 0, len(names))
	for _, name := range names {
		meta := peers[name].meta
		if meta == "" {
			continue // an observer
		}
		d, ok := s.decoded[name]
		if !ok || d.meta != meta {
			d = decode(name, meta)
			s.decoded[name] = d
			if d.err != nil {
				sink.Report(d.err)
			}
		}
		if d.err != nil {
			continue
		}
		ms = append(ms, d.m)
		key.WriteString("\x00" + name + "\x00" + meta)
	}
	for name := range s.decoded {
		if _, ok := peers[name]; !ok {
			delete(s.decoded, name)
		}
	}
	if s.version > 0 && key.String() == s.last {
		return
	}
	s.version++
	s.last = key.String()
	sink.Snapshot(member.Snapshot{Version: s.version, Members: ms, Spec: spec})
}

// decode reads the metadata of the node name as a member.
func decode(name, meta string) decoded {
	m, err := member.DecodeJSON([]byte(meta), 0)
	if err == nil && m.ID != name {
		err = fmt.Errorf("%w: memberlist: node %q announces member %q: a member's ID is its node's name", member.ErrBadMember, name, m.ID)
	}
	if err != nil {
		return decoded{meta: meta, err: fmt.Errorf("memberlist: node %q: %w", name, err)}
	}
	return decoded{meta: meta, m: m}
}
