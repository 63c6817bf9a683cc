package zookeeper

import (
	"context"

	"github.com/keyplace/chash/member"
)

// Parse reads data as the member znode name of a fleet, as a source does.
func Parse(name string, data []byte) (member.Member, error) {
	f := &follower{Source: &Source{path: "/fleet"}, ctx: context.Background(), sink: discard{}, children: map[string]child{}}
	c := f.parse(name, data, 1)
	return c.m, c.err
}

type discard struct{}

func (discard) Snapshot(member.Snapshot) {}
func (discard) Heard()                   {}
func (discard) Report(error)             {}
