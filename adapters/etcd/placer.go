package etcd

import "github.com/keyplace/chash"

// View returns the view being served, or nil for a nil or zero Watcher.
func (w *Watcher) View() *View { return w.Member().View() }

// Load returns the placer being served, or nil for a nil or zero Watcher.
// With it chash.Fingerprint and chash.Diff see through the watcher as
// through a chash.Holder.
func (w *Watcher) Load() chash.Placer { return w.Member().Load() }

// Revision returns the etcd revision of the view being served.
func (w *Watcher) Revision() int64 { return w.Member().Version() }

// Fingerprint returns chash.Fingerprint of the view being served, or
// chash.FingerprintNone for a nil Watcher.
func (w *Watcher) Fingerprint() string { return w.Member().Fingerprint() }

// Builds returns how many placers the watcher has built, the first
// included: a figure to export next to the fingerprint.
func (w *Watcher) Builds() int64 { return w.Member().Builds() }

// Lookup returns the node that owns key in the current view.
func (w *Watcher) Lookup(key []byte) chash.Node { return w.Member().Lookup(key) }

// LookupString is Lookup for a string key.
func (w *Watcher) LookupString(key string) chash.Node { return w.Member().LookupString(key) }

// AppendTopK appends up to k nodes for key in the current view's order of
// preference.
func (w *Watcher) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return w.Member().AppendTopK(dst, key, k)
}

// AppendTopKString is AppendTopK for a string key.
func (w *Watcher) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return w.Member().AppendTopKString(dst, key, k)
}

// Nodes returns the current view's nodes.
func (w *Watcher) Nodes() []chash.Node { return w.Member().Nodes() }

// Len returns the number of members placed in the current view.
func (w *Watcher) Len() int { return w.Member().Len() }
