// Package zookeeper shares one view of a fleet between processes that
// place keys with chash, through Apache ZooKeeper (with the client
// github.com/go-zookeeper/zk): each node registers itself with [Register]
// as an ephemeral znode, each process follows the fleet with [Watch] and
// places keys with the member.Watcher it returns, which is a chash.Placer.
//
//	conn, _, err := zk.Connect([]string{"zk-1:2181"}, 10*time.Second)
//	reg, err := zookeeper.Register(ctx, conn, "/fleets/cache", member.Member{ID: "cache-1", Addr: "10.0.0.1:11211"})
//	w, err := zookeeper.Watch(ctx, conn, "/fleets/cache", nil) // nil: the published spec
//	owner := w.LookupString("user:42")
//
// # Layout
//
// A fleet is a znode, its path given to every call. Each member is a child
// named by its ID, whose data is the member's JSON (member.EncodeJSON):
// the ID is the placement identity, so a node that restarts or loses its
// session comes back under the same path and owns the same keys. Member
// IDs may not hold a "/" nor be "." or "..": ZooKeeper cannot name a
// child so. The fleet's placement spec (member.Spec) is the data of the
// fleet's znode itself, as its JSON ([Publish]): beside the members, in a
// place no member's name can take. Children whose data is not a member
// or names another ID are reported (member.ErrBadMember) and left out.
//
// # Views
//
// A source reads the fleet's znode and every child with a watch, and
// re-reads what each watch event names, handing over the complete set.
// Its version is ZooKeeper's own: the largest of the fleet znode's pzxid
// (raised when a child is created or deleted) and mzxid (raised when the
// spec changes) and its children's mzxids (raised when a member's data
// changes). zxids only grow, so processes that serve the same version
// serve the same members.
//
// Every interval (WithInterval) the source asks the server for the fleet's
// znode; ZooKeeper delivers watch events before the answers to later
// reads, so an answer with no event pending confirms the view current
// (member.Sink.Heard). Watch sets the silence bound to three intervals.
// A connection that fails is reported, and the client reconnects with its
// session, keeping its watches; when the session expires the watches are
// lost, and the source starts again from a fresh read. The last view
// keeps serving meanwhile.
package zookeeper
