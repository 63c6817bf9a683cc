package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command's tests against a real etcd are in adapters/etcd, which
// builds this command and checks it agrees with the adapter's watchers.

func TestMembersUsage(t *testing.T) {
	for _, args := range [][]string{
		{"members"},
		{"members", "-prefix", "/"},
		{"members", "-prefix", "/p", "extra"},
		{"members", "-prefix", "/p", "-algo", "nope"},
		{"members", "-prefix", "/p", "-timeout", "0s"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, exitUsage, run(args, &out, &errOut), "%q", args)
		assert.Contains(t, errOut.String(), "chash members:")
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"members", "-h"}, &out, &errOut))
	assert.Contains(t, out.String(), "-watch")
}

func TestParseMemberValue(t *testing.T) {
	m, err := parseMemberValue("a", []byte(`{"id":"a","weight":2,"addr":"x:1"}`))
	require.NoError(t, err)
	assert.Equal(t, member{ID: "a", Weight: 2, Addr: "x:1"}, m)
	for name, value := range map[string]string{
		"a": `{"id":"b"}`, "": `{"id":""}`, "n": `{"id":"n","weight":-1}`, "j": `junk`,
		"big": `{"id":"big","addr":"` + strings.Repeat("x", maxMemberValue) + `"}`,
	} {
		_, err := parseMemberValue(name, []byte(value))
		assert.Error(t, err, name)
	}
}

func TestPrefixEnd(t *testing.T) {
	assert.Equal(t, "/fleet0", prefixEnd("/fleet/"))
	assert.Equal(t, "b", prefixEnd("a\xff"))
	assert.Equal(t, "\x00", prefixEnd("\xff"))
}

// A range response in the form etcd 3.4's gateway writes it (int64s as
// strings, keys and values in base64).
const rangeResponse = `{"header":{"cluster_id":"1","member_id":"2","revision":"3514","raft_term":"2"},
"kvs":[{"key":"L2RlbW8vYQ==","create_revision":"3514","mod_revision":"3514","version":"1","value":"eyJpZCI6ImEifQ=="},
{"key":"L2RlbW8veA==","mod_revision":"3515","value":"anVuaw=="}],"count":"2"}`

func TestMembersRange(t *testing.T) {
	var asked map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/v3/kv/range", r.URL.Path)
		require.NoError(t, json.NewDecoder(r.Body).Decode(&asked))
		w.Write([]byte(rangeResponse))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"members", "-endpoints", "127.0.0.1:1," + strings.TrimPrefix(srv.URL, "http://"), "-prefix", "/demo", "-algo", "maglev"}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	assert.Equal(t, "L2RlbW8v", asked["key"], "the prefix, base64")
	assert.Equal(t, "L2RlbW8w", asked["range_end"])
	p, err := chash.NewMaglev([]chash.Node{{ID: "a"}})
	require.NoError(t, err)
	assert.Contains(t, out.String(), "revision 3514  fingerprint "+chash.Fingerprint(p)+"  1 members")
	assert.Contains(t, out.String(), `skipped /demo/x: not a JSON member`)
}

// gatewayOf serves a range response holding kvs at revision 7.
func gatewayOf(t *testing.T, kvs map[string]string) *httptest.Server {
	type kvJSON struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}
	var resp struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		Kvs []kvJSON `json:"kvs"`
	}
	resp.Header.Revision = "7"
	for k, v := range kvs {
		resp.Kvs = append(resp.Kvs, kvJSON{Key: []byte(k), Value: []byte(v)})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A member the placer refuses is listed as refused, and everyone else is
// placed: the command no longer exits 1 listing nobody.
func TestMembersRefused(t *testing.T) {
	srv := gatewayOf(t, map[string]string{
		"/demo/a":     `{"id":"a","zone":"z1"}`,
		"/demo/heavy": `{"id":"heavy","weight":1e12}`,
	})
	var out, errOut bytes.Buffer
	code := run([]string{"members", "-endpoints", strings.TrimPrefix(srv.URL, "http://"), "-prefix", "/demo"}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	p, err := chash.NewRing([]chash.Node{{ID: "a", Zone: "z1"}})
	require.NoError(t, err)
	assert.Contains(t, out.String(), "fingerprint "+chash.Fingerprint(p)+"  1 members")
	assert.Contains(t, out.String(), "z1", "the zone is listed")
	assert.Contains(t, out.String(), "refused /demo/heavy: member: refused by the placer")
}

// The fleet's published spec is the default placement, so that the
// fingerprint is the one its watchers show; -algo replaces it, and the
// difference is reported.
func TestMembersSpec(t *testing.T) {
	srv := gatewayOf(t, map[string]string{
		"/demo/":  `{"algorithm":"maglev","table-size":1009}`,
		"/demo/a": `{"id":"a"}`,
		"/demo/b": `{"id":"b"}`,
	})
	ep := strings.TrimPrefix(srv.URL, "http://")
	p, err := chash.NewMaglev([]chash.Node{{ID: "a"}, {ID: "b"}}, chash.WithTableSize(1009))
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"members", "-endpoints", ep, "-prefix", "/demo"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "fingerprint "+chash.Fingerprint(p)+"  2 members")
	assert.Contains(t, out.String(), "spec maglev table-size=1009")
	assert.Empty(t, errOut.String())

	out.Reset()
	require.Equal(t, exitOK, run([]string{"members", "-endpoints", ep, "-prefix", "/demo", "-algo", "ring"}, &out, &errOut))
	assert.NotContains(t, out.String(), chash.Fingerprint(p))
	assert.Contains(t, errOut.String(), `the fleet publishes the spec "maglev table-size=1009"`)

	seeded := gatewayOf(t, map[string]string{"/demo/": `{"algorithm":"maglev","seed":"cache-seed"}`, "/demo/a": `{"id":"a"}`})
	ep = strings.TrimPrefix(seeded.URL, "http://")
	errOut.Reset()
	assert.Equal(t, exitFail, run([]string{"members", "-endpoints", ep, "-prefix", "/demo"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "give its value with -seed")
	out.Reset()
	require.Equal(t, exitOK, run([]string{"members", "-endpoints", ep, "-prefix", "/demo", "-seed", "42"}, &out, &errOut))
	q, err := chash.NewMaglev([]chash.Node{{ID: "a"}}, chash.WithHasher(chash.XXHashSeed(42)))
	require.NoError(t, err)
	assert.Contains(t, out.String(), chash.Fingerprint(q))
}

// TestMembersReplyBounded: an endpoint that streams without end is cut off
// at maxReply (a hostile endpoint fed 870 MB in 3 s before), and the
// command fails with a message instead of filling memory.
func TestMembersReplyBounded(t *testing.T) {
	defer func(max int64) { maxReply = max }(maxReply)
	maxReply = 1 << 20 // the same cut at a size a loaded -race run reads in time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"header":{"revision":"1"},"kvs":[{"key":"`))
		chunk := bytes.Repeat([]byte("QUFB"), 1<<14)
		for sent := 0; sent < 2*int(maxReply); sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"members", "-endpoints", strings.TrimPrefix(srv.URL, "http://"), "-prefix", "/demo", "-algo", "ring"}, &out, &errOut)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errOut.String(), "exceeds 1.0 MiB")
}
