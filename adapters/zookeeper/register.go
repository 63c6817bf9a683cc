package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash/member"
)

// Registration is a node's ephemeral znode in a fleet, kept there until
// Close. Its methods are safe for concurrent use. A nil or zero
// Registration announces nothing: build one with Register.
type Registration struct {
	conn   *zk.Conn
	id     string
	node   string
	cfg    config
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	data   []byte
	closed bool
}

// Register announces m in the fleet at path: it creates the fleet's znode
// (and its parents) if missing, and the ephemeral znode path/m.ID holding
// the JSON of m, owned by conn's session, retrying until ctx ends while
// the znode is held by another session (the process's previous one,
// until it expires). Then it keeps the znode there in the background until
// Close: when the session expires and ZooKeeper deletes the znode, or the
// znode is deleted by anyone, it creates it again, under the same path,
// as soon as conn has a session, reporting each loss and failure through
// WithErrorHook.
//
// It fails if conn is nil, path cannot name a fleet (ErrPath), m is not a
// valid member or its ID cannot name a znode (member.ErrBadMember), or
// ctx ends first. Give each process its own ID: two registrations of one
// ID take the znode from each other only as their sessions end.
func Register(ctx context.Context, conn *zk.Conn, path string, m member.Member, opts ...Option) (*Registration, error) {
	if conn == nil {
		return nil, errNilConn
	}
	p, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	data, err := encode(m)
	if err != nil {
		return nil, err
	}
	r := &Registration{conn: conn, id: m.ID, node: p + "/" + m.ID, cfg: newConfig(opts), data: data, done: make(chan struct{})}
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		if err = r.establish(); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zookeeper: register %s: %w (last: %w)", r.node, ctx.Err(), err)
		case <-time.After(wait):
		}
	}
	run, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.keep(run)
	return r, nil
}

// encode checks m and returns its data.
func encode(m member.Member) ([]byte, error) {
	if err := checkID(m); err != nil {
		return nil, err
	}
	return member.EncodeJSON(m)
}

// Path returns the znode the member is announced at.
func (r *Registration) Path() string { return r.node }

// errHeld reports a znode held by another session.
var errHeld = errors.New("held by another session")

// establish creates the znode with the registration's data, owned by the
// connection's session, unless it is already: under r.mu, as Update sets
// under it, so that the last Update wins whatever the interleaving.
func (r *Registration) establish() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if err := createParents(r.conn, r.node); err != nil {
		return fmt.Errorf("zookeeper: register %s: %w", r.node, err)
	}
	_, err := r.conn.Create(r.node, r.data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNodeExists) {
		if err != nil {
			return fmt.Errorf("zookeeper: register %s: %w", r.node, err)
		}
		return nil
	}
	data, st, err := r.conn.Get(r.node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("zookeeper: register %s: deleted while registering", r.node)
	case err != nil:
		return fmt.Errorf("zookeeper: register %s: %w", r.node, err)
	case st.EphemeralOwner != r.conn.SessionID():
		return fmt.Errorf("zookeeper: register %s: %w (session %#x)", r.node, errHeld, st.EphemeralOwner)
	case string(data) != string(r.data):
		if _, err := r.conn.Set(r.node, r.data, st.Version); err != nil {
			return fmt.Errorf("zookeeper: register %s: %w", r.node, err)
		}
	}
	return nil
}

// createParents creates the persistent znodes above node that are
// missing.
func createParents(conn *zk.Conn, node string) error {
	for i := 1; i < len(node); i++ {
		if node[i] != '/' {
			continue
		}
		if _, err := conn.Create(node[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// keep watches the znode and creates it again when it goes, until run
// ends.
func (r *Registration) keep(run context.Context) {
	defer close(r.done)
	wait := 20 * time.Millisecond
	for run.Err() == nil {
		ok, st, ch, err := r.conn.ExistsW(r.node)
		if err == nil && ok && st.EphemeralOwner == r.conn.SessionID() {
			// Ours: wait for a change, a deletion or the session's end
			// (EventNotWatching).
			wait = 20 * time.Millisecond
			select {
			case <-run.Done():
				return
			case <-ch:
			}
			continue
		}
		if err != nil {
			r.cfg.report(fmt.Errorf("zookeeper: register %s: %w; retrying", r.node, err))
		} else {
			if !ok {
				r.cfg.report(fmt.Errorf("zookeeper: register %s: the znode is gone (session expired?): creating it again", r.node))
			}
			if err := r.establish(); err == nil {
				continue
			} else {
				r.cfg.report(err)
			}
		}
		if !r.pause(run, wait) {
			return
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// pause waits d or until run ends, which it reports as false.
func (r *Registration) pause(run context.Context, d time.Duration) bool {
	select {
	case <-run.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Update announces m, which must have the registration's ID, in place of
// the member announced so far. The last Update wins, also when it comes
// while the registration is creating its znode again (it waits for that).
// If the znode is missing or the write fails (the server cannot be
// reached), m is still what the registration creates when it next puts
// its znode back.
func (r *Registration) Update(m member.Member) error {
	data, err := encode(m)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("zookeeper: update %s: registration closed", r.node)
	case m.ID != r.id:
		return fmt.Errorf("%w: zookeeper: update %s with ID %q: the ID cannot change", member.ErrBadMember, r.node, m.ID)
	}
	r.data = data
	if _, err := r.conn.Set(r.node, data, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: update %s: %w", r.node, err)
	}
	return nil
}

// Close stops keeping the znode and deletes it if this session owns it,
// so that watchers see the member leave at once. Closing again does
// nothing.
func (r *Registration) Close() error {
	if r == nil || r.cancel == nil {
		return nil
	}
	r.mu.Lock()
	was := r.closed
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	<-r.done
	if was {
		return nil
	}
	_, st, err := r.conn.Get(r.node)
	if err == nil && st.EphemeralOwner == r.conn.SessionID() {
		err = r.conn.Delete(r.node, st.Version)
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: close %s: %w", r.node, err)
	}
	return nil
}

// Publish stores the fleet's placement spec as the data of the fleet's
// znode at path (created if missing), as its JSON; a nil spec clears it.
// Watchers built with a nil Builder then build with it, and watchers
// given another spec (member.WithSpec) report the difference. The spec
// names the hasher seed, never the secret.
func Publish(conn *zk.Conn, path string, spec *member.Spec) error {
	if conn == nil {
		return errNilConn
	}
	p, err := checkPath(path)
	if err != nil {
		return err
	}
	var data []byte
	if spec != nil {
		if err := spec.Check(); err != nil {
			return err
		}
		if data, err = json.Marshal(spec); err != nil {
			return fmt.Errorf("%w: %v", member.ErrBadSpec, err)
		}
	}
	if err := createParents(conn, p+"/"); err != nil {
		return fmt.Errorf("zookeeper: publish spec at %s: %w", p, err)
	}
	if _, err := conn.Set(p, data, -1); err != nil {
		return fmt.Errorf("zookeeper: publish spec at %s: %w", p, err)
	}
	return nil
}
