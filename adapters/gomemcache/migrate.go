package gomemcache

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash"
)

// Migration reads and writes memcached through two placements while a
// fleet moves from one to the other: typically from a Selector made with
// WithServerList (where the caches are warm) to a Selector with a
// consistent algorithm. Every key is read from its new owner first; on a
// miss, if the key lives elsewhere under the old placement, it is read from
// its old owner, and with back-fill written to the new owner (with Add, so
// a value set meanwhile wins). Writes go to the new owner, and delete the
// key's old copy so that a later fallback read cannot return it stale.
//
// Measured on five real memcached servers switching from ServerList to a
// ring (TestIntegrationMigration), reads after the switch hit about as
// often as before it with the fallback, and about 1 in 5 without.
//
// The placements are those of the two Selectors when NewMigration is
// called; do not call SetServers on them during the migration (build a new
// Migration instead). When the new owners are warm (Stats shows few
// fallback hits), switch the application to a plain client of the new
// Selector. A Migration is safe for concurrent use.
type Migration struct {
	route    *chash.Migration
	from, to *memcache.Client
	backfill bool
	stats    migrationCounters
}

type migrationCounters struct {
	hits, fallbackHits, misses, backfills atomic.Int64
}

// MigrationStats counts a Migration's reads since it was made.
type MigrationStats struct {
	Hits         int64 // found on the new owner
	FallbackHits int64 // missed on the new owner, found on the old one
	Misses       int64 // found on neither
	Backfills    int64 // fallback hits written back to the new owner
}

// NewMigration returns a Migration from the placement of from to that of
// to, each read through a memcache.Client of its own (see Clients). With
// backfill set, fallback hits are written back to the new owner. It fails,
// wrapping ErrNoServers, if either Selector has no servers.
func NewMigration(from, to *Selector, backfill bool) (*Migration, error) {
	if from == nil || to == nil || from.Placer() == nil || to.Placer() == nil {
		return nil, fmt.Errorf("%w: NewMigration needs two Selectors with servers", ErrNoServers)
	}
	route, err := chash.NewMigration(from.Placer(), to.Placer())
	if err != nil {
		return nil, fmt.Errorf("gomemcache: %w", err)
	}
	return &Migration{
		route:    route,
		from:     memcache.NewFromSelector(from),
		to:       memcache.NewFromSelector(to),
		backfill: backfill,
	}, nil
}

// Clients returns the clients of the old and the new placement, for
// settings such as Timeout and MaxIdleConns.
func (m *Migration) Clients() (from, to *memcache.Client) { return m.from, m.to }

// Route returns where key lives: its new owner, its old one, and whether
// they differ.
func (m *Migration) Route(key string) chash.Route { return m.route.RouteString(key) }

// Get reads key from its new owner and, on a miss, from its old owner if
// that is another server. It returns memcache.ErrCacheMiss if neither has
// the key, and the first other error met.
func (m *Migration) Get(key string) (*memcache.Item, error) {
	it, err := m.to.Get(key)
	if err == nil {
		m.stats.hits.Add(1)
		return it, nil
	}
	if !errors.Is(err, memcache.ErrCacheMiss) {
		return nil, err
	}
	if !m.route.RouteString(key).Moved {
		m.stats.misses.Add(1)
		return nil, err
	}
	it, err = m.from.Get(key)
	if errors.Is(err, memcache.ErrCacheMiss) {
		m.stats.misses.Add(1)
	}
	if err != nil {
		return nil, err
	}
	m.stats.fallbackHits.Add(1)
	if m.backfill {
		if err := m.to.Add(it); err == nil {
			m.stats.backfills.Add(1)
		} else if !errors.Is(err, memcache.ErrNotStored) {
			return it, fmt.Errorf("gomemcache: back-fill of %q: %w", key, err)
		}
	}
	return it, nil
}

// Set writes item to its key's new owner and, if the key moved, deletes
// the copy on its old owner.
func (m *Migration) Set(item *memcache.Item) error {
	if err := m.to.Set(item); err != nil {
		return err
	}
	return m.dropOld(item.Key)
}

// Delete deletes key from its new owner and, if the key moved, from its
// old owner. A key on neither gives memcache.ErrCacheMiss.
func (m *Migration) Delete(key string) error {
	err := m.to.Delete(key)
	if err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
		return err
	}
	if !m.route.RouteString(key).Moved {
		return err
	}
	oldErr := m.from.Delete(key)
	if oldErr == nil || err == nil {
		if oldErr != nil && !errors.Is(oldErr, memcache.ErrCacheMiss) {
			return oldErr
		}
		return nil
	}
	return oldErr
}

func (m *Migration) dropOld(key string) error {
	if !m.route.RouteString(key).Moved {
		return nil
	}
	if err := m.from.Delete(key); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
		return err
	}
	return nil
}

// Stats returns the read counts so far.
func (m *Migration) Stats() MigrationStats {
	return MigrationStats{
		Hits:         m.stats.hits.Load(),
		FallbackHits: m.stats.fallbackHits.Load(),
		Misses:       m.stats.misses.Load(),
		Backfills:    m.stats.backfills.Load(),
	}
}
