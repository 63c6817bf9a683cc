package main

// chash members talks to etcd through its JSON gateway (the v3 API over
// HTTP that etcd 3.4 and later serve on the client port), with net/http and
// encoding/json only, so that the chash module keeps no dependency beyond
// xxhash. The member rules are those of the adapters/etcd package, whose
// tests run this command against a real etcd and check that both agree.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyplace/chash"
	fleet "github.com/keyplace/chash/member"
)

const membersHelp = `usage: chash members -prefix PREFIX [flags]

The live members that adapters/etcd registrations announce under PREFIX in
etcd, with the revision read and the fingerprint of the placement they make
(chash.Fingerprint: equal to what every watcher of that revision reports).
The placement is the one the fleet publishes beside its members (its spec,
at PREFIX/, as etcd.Publish writes it), so that the fingerprint is the one
the fleet's watchers show; -algo and the library flags replace it, and a
difference from the published spec is reported. A spec that names its
hasher seed needs the seed's value with -seed. Without a published spec the
placement is -algo's, ring by default.

Values that are not valid members are listed as skipped, and members the
placer refuses (a weight it cannot honour) as refused, as watchers skip and
refuse them; everyone else is listed and placed.

With -watch it keeps following PREFIX and prints a line for each change:
the revision, who joined (+), left (-) or changed weight (~), and the
fraction of keys the change moved. Stop it with Ctrl-C.

examples:
  chash members -prefix /fleet/cache
  chash members -endpoints 10.0.0.5:2379,10.0.0.6:2379 -prefix /fleet/cache -algo maglev -watch
  chash members -prefix /fleet/cache -json

flags:
`

// maxMemberValue is the largest member value accepted, as in adapters/etcd.
const maxMemberValue = 16 << 10

type member struct {
	ID     string            `json:"id"`
	Weight float64           `json:"weight,omitempty"`
	Zone   string            `json:"zone,omitempty"`
	Addr   string            `json:"addr,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
}

type skipped struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// membersView is the member set at one revision.
type membersView struct {
	Revision    int64       `json:"revision"`
	Fingerprint string      `json:"fingerprint"`
	Members     []member    `json:"members"`
	Skipped     []skipped   `json:"skipped,omitempty"`
	Refused     []skipped   `json:"refused,omitempty"` // valid members the placer refuses
	Spec        *fleet.Spec `json:"spec,omitempty"`    // the placement spec the fleet publishes
	Moved       *float64    `json:"moved,omitempty"`   // since the previous view, with -watch
	placer      chash.Placer
}

func runMembers(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("members", stderr)
	endpoints := fs.String("endpoints", "127.0.0.1:2379", "etcd client addresses, comma-separated")
	prefix := fs.String("prefix", "", "the key prefix the members are registered under (required)")
	algoName := fs.String("algo", "", "the algorithm the clients build, for the fingerprint and moves\n"+
		"(default: the fleet's published spec, else ring)")
	watch := fs.Bool("watch", false, "follow the prefix and print each change")
	timeout := fs.Duration("timeout", 5*time.Second, "time allowed for each etcd request")
	asJSON := fs.Bool("json", false, "print JSON (one object a line with -watch)")
	var lib libFlags
	lib.register(fs)
	var pos []string
	if code, stop := parse(fs, args, membersHelp, stdout, &pos); stop {
		return code
	}
	p := strings.TrimRight(*prefix, "/")
	switch {
	case len(pos) > 0:
		return usageError(stderr, "members", "unexpected argument %q", pos[0])
	case p == "":
		return usageError(stderr, "members", "-prefix is required")
	case *timeout <= 0:
		return usageError(stderr, "members", "-timeout %v: want more than 0", *timeout)
	}
	opts, err := lib.options()
	if err != nil {
		return usageError(stderr, "members", "%v", err)
	}
	g := &gateway{endpoints: strings.Split(*endpoints, ","), timeout: *timeout, prefix: p + "/", stderr: stderr, seed: lib.seed}
	g.opts = opts
	if *algoName != "" || lib.shapes() {
		a, err := findAlgo(cmp.Or(*algoName, "ring"), opts)
		if err != nil {
			return usageError(stderr, "members", "-algo: %v", err)
		}
		g.build, g.local = a.build, localSpec(a.name, lib)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := g.show(ctx, *watch, *asJSON, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "chash members: %v\n", err)
		return exitFail
	}
	return exitOK
}

// gateway reads and watches a prefix through etcd's JSON gateway.
type gateway struct {
	endpoints []string
	timeout   time.Duration
	prefix    string
	build     func([]chash.Node) (chash.Placer, error) // nil: the published spec's
	local     *fleet.Spec                              // the spec of -algo and the flags, if one
	seed      uint64                                   // -seed, the value of a spec's named seed
	opts      []chash.Option                           // the library flags, without a published spec
	stderr    io.Writer
	differs   string // the published spec last reported as differing
}

// shapes reports whether a library flag other than -seed was given: one
// that makes a placement other than a published spec's. (-seed alone
// gives the value of the seed a spec names.)
func (l *libFlags) shapes() bool { return l.vnodes != 0 || l.tableSize != 0 || l.partitions != 0 }

// localSpec returns the spec of algorithm name with the library flags, or
// nil if name is not a core algorithm (the compat placers have none).
func localSpec(name string, l libFlags) *fleet.Spec {
	a, err := chash.ParseAlgorithm(name)
	if err != nil {
		return nil
	}
	s := fleet.Spec{Algorithm: a, Vnodes: l.vnodes, TableSize: l.tableSize, Partitions: l.partitions}
	if l.seed != 0 {
		s.Seed = "-seed"
	}
	return &s
}

// builder returns the build for a view published with spec.
func (g *gateway) builder(spec *fleet.Spec) (func([]chash.Node) (chash.Placer, error), error) {
	if spec != nil && g.local != nil && !sameSpec(*spec, *g.local) && spec.String() != g.differs {
		g.differs = spec.String()
		fmt.Fprintf(g.stderr, "chash members: the fleet publishes the spec %q; placing with -algo and the flags instead\n", spec)
	}
	switch {
	case g.build != nil:
		return g.build, nil
	case spec == nil:
		a, err := findAlgo("ring", g.opts)
		return a.build, err
	case spec.Seed != "" && g.seed == 0:
		return nil, fmt.Errorf("the fleet's spec %q names the hasher seed %q: give its value with -seed", spec, spec.Seed)
	}
	return spec.Builder(func(string) (uint64, error) { return g.seed, nil }), nil
}

// sameSpec compares a published spec with a local one, whose seed is
// named "-seed" when given: any named seed matches it.
func sameSpec(published, local fleet.Spec) bool {
	if published.Seed != "" && local.Seed != "" {
		published.Seed = local.Seed
	}
	return published == local
}

// show prints the view at the latest revision and, if watch is set, every
// view after it.
func (g *gateway) show(ctx context.Context, watch, asJSON bool, w io.Writer) error {
	v, err := g.view(ctx, 0)
	if err != nil {
		return err
	}
	v.print(w, asJSON)
	for watch && ctx.Err() == nil {
		err := g.follow(ctx, v.Revision, func(rev int64) error {
			next, err := g.view(ctx, rev)
			if err != nil {
				return err
			}
			next.moved(v)
			next.printChange(w, v, asJSON)
			v = next
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		// A compacted revision or a broken stream: read afresh, go on.
		fmt.Fprintf(g.stderr, "chash members: %v; reading afresh\n", err)
		time.Sleep(time.Second)
		next, err := g.view(ctx, 0)
		if err != nil {
			continue
		}
		next.moved(v)
		next.printChange(w, v, asJSON)
		v = next
	}
	return nil
}

// post sends a gateway request to the first endpoint that answers and
// returns its response; the caller closes the body.
func (g *gateway) post(ctx context.Context, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ep := range g.endpoints {
		url := "http://" + strings.TrimPrefix(strings.TrimSpace(ep), "http://") + path
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			err = fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(msg))
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// i64 is an int64 that the gateway writes as a JSON string.
type i64 int64

func (n *i64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	*n = i64(v)
	return err
}

type kv struct {
	Key   []byte `json:"key"` // base64 in JSON, as the gateway writes it
	Value []byte `json:"value"`
}

type header struct {
	Revision i64 `json:"revision"`
}

// view reads the prefix at rev (0: the latest) and builds its view.
func (g *gateway) view(ctx context.Context, rev int64) (*membersView, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	resp, err := g.post(ctx, "/v3/kv/range", map[string]any{
		"key": []byte(g.prefix), "range_end": []byte(prefixEnd(g.prefix)), "revision": strconv.FormatInt(rev, 10),
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", g.prefix, err)
	}
	defer resp.Body.Close()
	var r struct {
		Header header `json:"header"`
		Kvs    []kv   `json:"kvs"`
	}
	body := &cappedReader{r: resp.Body, left: maxReply}
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		if body.over {
			return nil, fmt.Errorf("read %s: the endpoint's reply exceeds %s", g.prefix, bytesize(maxReply))
		}
		return nil, fmt.Errorf("read %s: %w", g.prefix, err)
	}
	if rev == 0 {
		rev = int64(r.Header.Revision)
	}
	return g.newView(rev, r.Kvs)
}

// maxReply bounds what members reads of one reply: 64 MiB holds a few
// hundred thousand members, and a hostile or broken endpoint that streams
// without end is cut off there instead of filling memory. (A variable so
// that a test can lower it.)
var maxReply int64 = 64 << 20

// cappedReader reads at most left bytes of r, then fails and sets over.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errors.New("reply too large")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// prefixEnd returns the end of the key range of prefix.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// newView applies the member rules to kvs and builds the placer, as
// adapters/etcd's watchers do: with member.Place, which leaves out the
// members the placer refuses.
func (g *gateway) newView(rev int64, kvs []kv) (*membersView, error) {
	v := &membersView{Revision: rev, Members: []member{}, Fingerprint: chash.FingerprintNone}
	for _, e := range kvs {
		name := strings.TrimPrefix(string(e.Key), g.prefix)
		switch {
		case strings.Contains(name, "/"): // a member of a nested prefix
			continue
		case name == "": // the fleet's placement spec
			var spec fleet.Spec
			if err := json.Unmarshal(e.Value, &spec); err != nil {
				v.Skipped = append(v.Skipped, skipped{Key: string(e.Key), Reason: err.Error()})
			} else {
				v.Spec = &spec
			}
			continue
		}
		m, err := parseMemberValue(name, e.Value)
		if err != nil {
			v.Skipped = append(v.Skipped, skipped{Key: string(e.Key), Reason: err.Error()})
			continue
		}
		v.Members = append(v.Members, m)
	}
	slices.SortFunc(v.Members, func(a, b member) int { return cmp.Compare(a.ID, b.ID) })
	if len(v.Members) == 0 {
		return v, nil
	}
	build, err := g.builder(v.Spec)
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", rev, err)
	}
	nodes := make([]chash.Node, len(v.Members))
	for i, m := range v.Members {
		nodes[i] = chash.Node{ID: m.ID, Weight: m.Weight, Zone: m.Zone}
	}
	p, refused, err := fleet.Place(build, nodes)
	for _, r := range refused {
		v.Refused = append(v.Refused, skipped{Key: g.prefix + r.Member.ID, Reason: r.Err.Error()})
		v.Members = slices.DeleteFunc(v.Members, func(m member) bool { return m.ID == r.Member.ID })
	}
	if err != nil {
		v.Members = []member{}
		return v, nil
	}
	v.placer, v.Fingerprint = p, chash.Fingerprint(p)
	return v, nil
}

// parseMemberValue applies the rules of adapters/etcd's ParseMember
// (member.DecodeJSON, and an ID equal to the key's name).
func parseMemberValue(name string, value []byte) (member, error) {
	m, err := fleet.DecodeJSON(value, maxMemberValue)
	switch {
	case err != nil:
		return member{}, errors.New(strings.TrimPrefix(err.Error(), "member: bad member: "))
	case m.ID != name:
		return member{}, fmt.Errorf("holds ID %q: a member's ID must be its key's name", m.ID)
	}
	return member{ID: m.ID, Weight: m.Weight, Zone: m.Zone, Addr: m.Addr, Meta: m.Meta}, nil
}

// follow watches the prefix from rev + 1 and calls fn with the revision
// of each change, until the stream or fn fails.
func (g *gateway) follow(ctx context.Context, rev int64, fn func(rev int64) error) error {
	resp, err := g.post(ctx, "/v3/watch", map[string]any{"create_request": map[string]any{
		"key": []byte(g.prefix), "range_end": []byte(prefixEnd(g.prefix)), "start_revision": strconv.FormatInt(rev+1, 10),
	}})
	if err != nil {
		return fmt.Errorf("watch %s: %w", g.prefix, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var msg struct {
			Result struct {
				Canceled        bool   `json:"canceled"`
				CompactRevision i64    `json:"compact_revision"`
				CancelReason    string `json:"cancel_reason"`
				Events          []struct {
					Kv struct {
						ModRevision i64 `json:"mod_revision"`
					} `json:"kv"`
				} `json:"events"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return fmt.Errorf("watch %s: %w", g.prefix, err)
		}
		r := msg.Result
		switch {
		case msg.Error != nil:
			return fmt.Errorf("watch %s: %s", g.prefix, msg.Error.Message)
		case r.CompactRevision != 0:
			return fmt.Errorf("watch %s: revision %d was compacted", g.prefix, rev+1)
		case r.Canceled:
			return fmt.Errorf("watch %s: cancelled: %s", g.prefix, r.CancelReason)
		case len(r.Events) == 0:
			continue
		}
		rev = int64(r.Events[len(r.Events)-1].Kv.ModRevision)
		if err := fn(rev); err != nil {
			return err
		}
	}
}

// moved sets the fraction of keys moved since prev.
func (v *membersView) moved(prev *membersView) {
	f := 0.0
	switch {
	case prev.placer == nil && v.placer == nil:
	case prev.placer == nil || v.placer == nil:
		f = 1
	default:
		m, err := chash.DiffSummary(prev.placer, v.placer)
		if err != nil {
			return
		}
		f = m.Moved
	}
	v.Moved = &f
}

func (v *membersView) print(w io.Writer, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(v)
		return
	}
	fmt.Fprintf(w, "revision %d  fingerprint %s  %d members\n", v.Revision, v.Fingerprint, len(v.Members))
	if v.Spec != nil {
		fmt.Fprintf(w, "spec %s\n", v.Spec)
	}
	t := newTable("ID", ">WEIGHT", "ZONE", "ADDR")
	for _, m := range v.Members {
		t.add(m.ID, strconv.FormatFloat(cmp.Or(m.Weight, 1), 'g', -1, 64), m.Zone, m.Addr)
	}
	t.write(w)
	for _, s := range v.Refused {
		fmt.Fprintf(w, "refused %s: %s\n", s.Key, s.Reason)
	}
	for _, s := range v.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Key, s.Reason)
	}
}

// printChange prints one line: what changed since prev and what it moved.
func (v *membersView) printChange(w io.Writer, prev *membersView, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(v)
		return
	}
	old := map[string]float64{}
	for _, m := range prev.Members {
		old[m.ID] = cmp.Or(m.Weight, 1)
	}
	var changes []string
	for _, m := range v.Members {
		wt, ok := old[m.ID]
		switch {
		case !ok:
			changes = append(changes, "+"+m.ID)
		case wt != cmp.Or(m.Weight, 1):
			changes = append(changes, fmt.Sprintf("~%s=%g", m.ID, cmp.Or(m.Weight, 1)))
		}
		delete(old, m.ID)
	}
	for id := range old {
		changes = append(changes, "-"+id)
	}
	slices.Sort(changes)
	if len(changes) == 0 {
		changes = []string{"(no member change)"}
	}
	bad := ""
	if len(v.Skipped) > 0 {
		bad = fmt.Sprintf(" (%d bad values skipped)", len(v.Skipped))
	}
	fmt.Fprintf(w, "revision %d  %s  %d members%s  moved %s  fingerprint %s\n",
		v.Revision, strings.Join(changes, " "), len(v.Members), bad, percent(*v.Moved), v.Fingerprint)
}
