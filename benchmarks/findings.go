package benchmarks

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// probeTimeout bounds each probe; a library that hangs is reported, not
// waited for.
const probeTimeout = 5 * time.Second

// Findings records how one subject behaves on the inputs services meet
// in practice. Each field is a short description for the report.
type Findings struct {
	Subject Subject
	// Empty: building with no nodes, then looking a key up.
	Empty string
	// Duplicate: building with a node listed twice.
	Duplicate string
	// Remove: removing a member through the library's own API.
	Remove string
	// RemoveUnknown: removing an ID that is not a member (node-10 of 8).
	RemoveUnknown string
	// RemoveAll: removing every member, then looking a key up.
	RemoveAll string
}

// Outcomes of the probes, for tests to compare against.
const (
	Rejected       = "rejected with an error"
	MatchesRebuild = "ok, same placement as a rebuild"
	NoAPI          = "no API"
)

// Probe runs every probe against s, guarded against panics and hangs.
func Probe(s Subject) Findings {
	return Findings{
		Subject:       s,
		Empty:         probeEmpty(s),
		Duplicate:     probeDuplicate(s),
		Remove:        probeRemove(s),
		RemoveUnknown: probeRemoveUnknown(s),
		RemoveAll:     probeRemoveAll(s),
	}
}

var probeKeys = QualityKeys(10_000)

// describe turns a guarded outcome into a short phrase.
func describe(err error) string {
	switch {
	case errors.Is(err, ErrPanic):
		msg := err.Error()
		if i := strings.Index(msg, "\n"); i > 0 {
			msg = msg[:i]
		}
		return "**PANICS** (" + strings.TrimPrefix(msg, "panic: ") + ")"
	case errors.Is(err, ErrHang):
		return "**HANGS** (" + err.Error() + ")"
	}
	return Rejected
}

func probeEmpty(s Subject) string {
	out, err := guard(probeTimeout, func() (string, error) {
		im, err := s.Build(nil)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("accepted; lookup returns %q", im.Lookup("user:1:profile")), nil
	})
	if err != nil {
		return describe(err)
	}
	return out
}

func probeDuplicate(s Subject) string {
	out, err := guard(probeTimeout, func() (string, error) {
		im, err := s.Build([]string{"node-0", "node-1", "node-1"})
		if err != nil {
			return "", err
		}
		n := 0
		for _, k := range probeKeys {
			if im.Lookup(k) == "node-1" {
				n++
			}
		}
		return fmt.Sprintf("accepted silently; node-1 gets %.0f%% of keys", 100*float64(n)/float64(len(probeKeys))), nil
	})
	if err != nil {
		return describe(err)
	}
	return out
}

func probeRemove(s Subject) string {
	ids := NodeIDs(8)
	out, err := guard(probeTimeout, func() (string, error) {
		im, err := s.Build(ids)
		if err != nil || im.Remove == nil {
			return NoAPI, err
		}
		out, err := removeAndCompare(s, im, ids, 3)
		if err != nil {
			// Some designs refuse to remove a node in the middle (jump):
			// say so, and probe removing the last one instead.
			last, err2 := removeAndCompare(s, im, ids, len(ids)-1)
			if err2 != nil {
				return "", err2
			}
			return fmt.Sprintf("middle: %s (%s); last: %s", Rejected, shortErr(err), last), nil
		}
		return out, err
	})
	if err != nil {
		return describe(err)
	}
	return out
}

// removeAndCompare removes ids[i] through the library's API and compares
// the placement with a rebuild from the remaining nodes.
func removeAndCompare(s Subject, im Impl, ids []string, i int) (string, error) {
	after, err := im.Remove(ids[i])
	if err != nil {
		return "", err
	}
	fresh, err := s.Build(append(append([]string{}, ids[:i]...), ids[i+1:]...))
	if err != nil {
		return "", err
	}
	stale, differ := 0, 0
	for _, k := range probeKeys {
		got := after.Lookup(k)
		if got == ids[i] {
			stale++
		}
		if got != fresh.Lookup(k) {
			differ++
		}
	}
	switch {
	case stale > 0:
		return fmt.Sprintf("**still places %d of %d keys on the removed node**", stale, len(probeKeys)), nil
	case differ > 0:
		return fmt.Sprintf("ok, but %.1f%% of keys placed unlike a rebuild", 100*float64(differ)/float64(len(probeKeys))), nil
	}
	return MatchesRebuild, nil
}

// shortErr is err's message without detail after its second colon.
func shortErr(err error) string {
	parts := strings.SplitN(err.Error(), ": ", 3)
	return strings.Join(parts[:min(2, len(parts))], ": ")
}

func probeRemoveUnknown(s Subject) string {
	out, err := guard(probeTimeout, func() (string, error) {
		im, err := s.Build(NodeIDs(8))
		if err != nil || im.Remove == nil {
			return NoAPI, err
		}
		before := make([]string, len(probeKeys))
		for i, k := range probeKeys {
			before[i] = im.Lookup(k)
		}
		after, err := im.Remove("node-10")
		if err != nil {
			return "", err
		}
		moved := 0
		for i, k := range probeKeys {
			if after.Lookup(k) != before[i] {
				moved++
			}
		}
		if moved > 0 {
			return fmt.Sprintf("**no error, and %.0f%% of keys move** (another node is dropped)", 100*float64(moved)/float64(len(probeKeys))), nil
		}
		return "ignored silently", nil
	})
	if err != nil {
		return describe(err)
	}
	return out
}

func probeRemoveAll(s Subject) string {
	out, err := guard(probeTimeout, func() (string, error) {
		im, err := s.Build(NodeIDs(2))
		if err != nil || im.Remove == nil {
			return NoAPI, err
		}
		if im, err = im.Remove("node-0"); err != nil {
			return "", err
		}
		if im, err = im.Remove("node-1"); err != nil {
			return "", err
		}
		return fmt.Sprintf("accepted; lookup returns %q", im.Lookup("user:1:profile")), nil
	})
	if err != nil {
		return describe(err)
	}
	return out
}

// FindingsTable formats rows as a Markdown table.
func FindingsTable(rows []Findings) string {
	var b strings.Builder
	b.WriteString("| family | library | no nodes | duplicate ID | remove a member | remove an unknown ID | remove every member | lookups vs changes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, f := range rows {
		name := f.Subject.Name
		if f.Subject.Ours {
			name = "**chash**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Subject.Family, name,
			f.Empty, f.Duplicate, f.Remove, f.RemoveUnknown, f.RemoveAll, f.Subject.Concurrency)
	}
	return b.String()
}
