package member

import "github.com/keyplace/chash"

// View returns the view being served: never nil for a Watcher built with
// New, whose first view is empty until the source hands over members;
// nil for a nil or zero Watcher.
func (w *Watcher) View() *View {
	if w == nil {
		return nil
	}
	return w.view.Load()
}

// Load returns the placer being served, or nil for a nil or zero Watcher.
// With it chash.Fingerprint and chash.Diff see through the watcher as
// through a chash.Holder.
func (w *Watcher) Load() chash.Placer {
	if v := w.View(); v != nil {
		return v.Placer
	}
	return nil
}

// Version returns the version of the view being served; 0 before the
// first.
func (w *Watcher) Version() int64 {
	if v := w.View(); v != nil {
		return v.Version
	}
	return 0
}

// Fingerprint returns chash.Fingerprint of the view being served, or
// chash.FingerprintNone before the first and for a nil Watcher.
func (w *Watcher) Fingerprint() string {
	if v := w.View(); v != nil {
		return v.Fingerprint
	}
	return chash.FingerprintNone
}

// Lookup returns the node that owns key in the current view.
func (w *Watcher) Lookup(key []byte) chash.Node {
	if p := w.Load(); p != nil {
		return p.Lookup(key)
	}
	return chash.Node{}
}

// LookupString is Lookup for a string key.
func (w *Watcher) LookupString(key string) chash.Node {
	if p := w.Load(); p != nil {
		return p.LookupString(key)
	}
	return chash.Node{}
}

// AppendTopK appends up to k nodes for key in the current view's order of
// preference.
func (w *Watcher) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if p := w.Load(); p != nil {
		return p.AppendTopK(dst, key, k)
	}
	return dst
}

// AppendTopKString is AppendTopK for a string key.
func (w *Watcher) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	if p := w.Load(); p != nil {
		return p.AppendTopKString(dst, key, k)
	}
	return dst
}

// Nodes returns the current view's nodes.
func (w *Watcher) Nodes() []chash.Node {
	if p := w.Load(); p != nil {
		return p.Nodes()
	}
	return nil
}

// Len returns the number of members placed in the current view.
func (w *Watcher) Len() int {
	if p := w.Load(); p != nil {
		return p.Len()
	}
	return 0
}
