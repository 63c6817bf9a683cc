package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Registration is a node's announcement under a prefix, kept alive by a
// lease until Close. Its methods are safe for concurrent use. A nil or zero
// Registration announces nothing: build one with Register.
type Registration struct {
	c      *clientv3.Client
	id     string
	key    string
	cfg    config
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	value  string
	lease  clientv3.LeaseID
	closed bool
}

// Register announces m under prefix: it puts the JSON of m at prefix + "/"
// + m.ID (one trailing "/" of prefix is implied) with a lease of the TTL
// set by WithTTL (default DefaultTTL), and keeps the lease alive in the
// background until Close. ctx bounds only this first registration.
//
// If the lease is lost (etcd was down, or this process cut off, for longer
// than the TTL), the registration grants a new lease and puts the same key
// again, retrying with backoff up to 2 s apart and reporting each failure
// through WithErrorHook: the node's ID, and so its keys, never change with
// a lease. Meanwhile the node is absent from the views of watchers that saw
// its key expire.
//
// It fails if c is nil, prefix is empty, m is not a valid Member (its ID
// may not hold a "/": see Source on nested prefixes) or etcd does not
// answer before ctx ends. Registering the same ID twice makes the
// two registrations overwrite each other: give each process its own ID.
func Register(ctx context.Context, c *clientv3.Client, prefix string, m Member, opts ...Option) (*Registration, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil etcd client", chash.ErrInvalidOption)
	}
	p, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	value, err := encode(m)
	if err != nil {
		return nil, err
	}
	r := &Registration{c: c, id: m.ID, key: p + m.ID, cfg: newConfig(opts), value: value, done: make(chan struct{})}
	run, cancel := context.WithCancel(context.Background())
	ka, err := r.establish(ctx, run)
	if err != nil {
		cancel()
		return nil, err
	}
	r.cancel = cancel
	go r.keep(run, ka)
	return r, nil
}

// encode checks m and returns its value.
func encode(m Member) (string, error) {
	if err := checkID(m); err != nil {
		return "", err
	}
	b, err := member.EncodeJSON(m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Key returns the etcd key the node is announced under.
func (r *Registration) Key() string { return r.key }

// testHookPut, when set by a test, is called by establish between taking
// the value and putting it: the window in which an Update used to be lost.
var testHookPut func()

// establish grants a lease, puts the key under it and starts its
// keepalives, which last as long as run. ctx bounds the grant and put.
//
// The value is taken and put under r.mu, as Update puts under it, so that
// the last Update wins whatever the interleaving: an Update that comes
// while the key is being put again waits for that put, then puts its own
// value under the new lease.
func (r *Registration) establish(ctx, run context.Context) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	ttl := int64(math.Ceil(r.cfg.ttl.Seconds()))
	lease, err := r.c.Grant(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("etcd: register %s: grant lease: %w", r.key, err)
	}
	if err := r.put(ctx, lease.ID); err != nil {
		return nil, err
	}
	ka, err := r.c.KeepAlive(run, lease.ID)
	if err != nil {
		return nil, fmt.Errorf("etcd: register %s: keepalive: %w", r.key, err)
	}
	return ka, nil
}

// put puts the registration's value under lease, which becomes its lease.
func (r *Registration) put(ctx context.Context, lease clientv3.LeaseID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lease = lease
	if testHookPut != nil {
		testHookPut()
	}
	if _, err := r.c.Put(ctx, r.key, r.value, clientv3.WithLease(lease)); err != nil {
		return fmt.Errorf("etcd: register %s: put: %w", r.key, err)
	}
	return nil
}

// keep drains the keepalive responses and, when they stop while the
// registration is open, registers again.
func (r *Registration) keep(run context.Context, ka <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(r.done)
	for {
		for range ka {
		}
		if run.Err() != nil {
			return
		}
		r.cfg.report(fmt.Errorf("etcd: register %s: lease lost; registering again", r.key))
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
			ctx, cancel := context.WithTimeout(run, 5*time.Second)
			next, err := r.establish(ctx, run)
			cancel()
			if err == nil {
				ka = next
				break
			}
			if run.Err() != nil {
				return
			}
			r.cfg.report(err)
			select {
			case <-run.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// Update announces m, which must have the registration's ID, in place of
// the member announced so far, under the same key and lease. The last
// Update wins, also when it comes while the registration is putting its
// key again after a lost lease (it waits for that put). If the put fails,
// m is still what the registration announces when it next registers again
// after a lost lease.
func (r *Registration) Update(ctx context.Context, m Member) error {
	value, err := encode(m)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("etcd: update %s: registration closed", r.key)
	case m.ID != r.id:
		return fmt.Errorf("%w: update %s with ID %q: the ID cannot change", ErrBadMember, r.key, m.ID)
	}
	r.value = value
	if _, err := r.c.Put(ctx, r.key, value, clientv3.WithLease(r.lease)); err != nil {
		return fmt.Errorf("etcd: update %s: %w", r.key, err)
	}
	return nil
}

// Close stops the keepalives and revokes the lease, which deletes the key
// at once, so the node leaves every view without waiting for its TTL. It
// waits up to 5 s for etcd; if etcd does not answer the key still expires
// with the lease. Closing again does nothing and returns nil.
func (r *Registration) Close() error {
	if r == nil || r.cancel == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	<-r.done
	r.mu.Lock()
	lease := r.lease
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.c.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("etcd: close %s: revoke lease: %w", r.key, err)
	}
	return nil
}
