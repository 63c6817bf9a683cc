package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keyplace/chash/member"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Publish stores the fleet's placement spec beside its members, at the key
// prefix + "/" (which no member can have), as its JSON form; a nil spec
// deletes it. Watchers built with a nil Builder then build with it, so
// every process places alike, and watchers given another spec (WithSpec)
// report the difference. The spec names the hasher seed, never the secret.
func Publish(ctx context.Context, c *clientv3.Client, prefix string, spec *member.Spec) error {
	if c == nil {
		return fmt.Errorf("etcd: publish: nil etcd client")
	}
	p, err := cleanPrefix(prefix)
	if err != nil {
		return err
	}
	if spec == nil {
		_, err := c.Delete(ctx, p+specName)
		return wrapPublish(p, err)
	}
	if err := spec.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", member.ErrBadSpec, err)
	}
	_, err = c.Put(ctx, p+specName, string(b))
	return wrapPublish(p, err)
}

func wrapPublish(prefix string, err error) error {
	if err != nil {
		return fmt.Errorf("etcd: publish spec at %s: %w", prefix, err)
	}
	return nil
}

// parseSpec reads a published spec.
func parseSpec(value []byte) (member.Spec, error) {
	var s member.Spec
	err := json.Unmarshal(value, &s)
	return s, err
}
