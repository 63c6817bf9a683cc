package chash

import "sync/atomic"

// Holder holds the current Placer of a service and swaps it atomically:
// requests keep reading through the Holder, lock-free, while a membership
// change stores a newly derived placer. Holder is itself a Placer that
// delegates each call to the placer current at that moment; a caller that
// needs several lookups against one membership should Load once and use
// the result.
//
// The zero Holder holds no placer: Load returns nil, Lookup returns the
// zero Node, AppendTopK appends nothing and Len is 0; a nil *Holder reads
// the same, but Store and Swap on it panic. A Holder must not be copied
// after first use.
type Holder struct {
	p atomic.Pointer[holderBox]
}

// holderBox lets an interface value sit behind an atomic pointer.
type holderBox struct{ Placer }

var _ Placer = (*Holder)(nil)

// NewHolder returns a Holder holding p.
func NewHolder(p Placer) *Holder {
	h := new(Holder)
	h.Store(p)
	return h
}

// Load returns the current placer, or nil if none has been stored.
func (h *Holder) Load() Placer {
	if b := h.load(); b != nil {
		return b.Placer
	}
	return nil
}

// Store makes p the current placer; nil, or a nil pointer in a Placer (the
// result of a failed constructor stored without checking its error),
// empties the Holder.
func (h *Holder) Store(p Placer) { h.p.Store(box(p)) }

// Swap makes p the current placer and returns the previous one.
func (h *Holder) Swap(p Placer) Placer {
	if b := h.p.Swap(box(p)); b != nil {
		return b.Placer
	}
	return nil
}

func box(p Placer) *holderBox {
	if isNil(p) {
		return nil
	}
	return &holderBox{p}
}

// Lookup calls Lookup on the current placer.
func (h *Holder) Lookup(key []byte) Node {
	if b := h.load(); b != nil {
		return b.Lookup(key)
	}
	return Node{}
}

// LookupString calls LookupString on the current placer.
func (h *Holder) LookupString(key string) Node {
	if b := h.load(); b != nil {
		return b.LookupString(key)
	}
	return Node{}
}

// AppendTopK calls AppendTopK on the current placer.
func (h *Holder) AppendTopK(dst []Node, key []byte, k int) []Node {
	if b := h.load(); b != nil {
		return b.AppendTopK(dst, key, k)
	}
	return dst
}

// AppendTopKString calls AppendTopKString on the current placer.
func (h *Holder) AppendTopKString(dst []Node, key string, k int) []Node {
	if b := h.load(); b != nil {
		return b.AppendTopKString(dst, key, k)
	}
	return dst
}

// Nodes calls Nodes on the current placer.
func (h *Holder) Nodes() []Node {
	if b := h.load(); b != nil {
		return b.Nodes()
	}
	return nil
}

// Len calls Len on the current placer.
func (h *Holder) Len() int {
	if b := h.load(); b != nil {
		return b.Len()
	}
	return 0
}

// load returns the current box, or nil for an empty or nil Holder.
func (h *Holder) load() *holderBox {
	if h == nil {
		return nil
	}
	return h.p.Load()
}
